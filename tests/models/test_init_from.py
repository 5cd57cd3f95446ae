"""`--init-from asr=PATH --init-from mt=PATH`: the init entries and teachers each SATE variant gets."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from sate.errors import SateError
from sate.models.init_from import fill_init, parse_init_from
from sate.models.tiny import tiny_config
from sate.train.trainer import checked_config

SOURCES = {"asr": "exp/asr/model.pt", "mt": "exp/mt/model.pt"}


def st_model(**model_changes: object) -> dict:
    return tiny_config("st") | model_changes


def test_sate_gets_every_component_and_the_teachers_its_loss_uses() -> None:
    model, init = st_model(loss={"kd": {"asr_weight": 0.5}}), {}
    filled_model, filled_init = fill_init("st", model, init, SOURCES)
    assert filled_init == {"acoustic": {"path": SOURCES["asr"]}, "ctc": {"path": SOURCES["asr"]},
                           "src_embed": {"path": SOURCES["mt"]}, "textual": {"path": SOURCES["mt"]},
                           "decoder": {"path": SOURCES["mt"]}}
    kd = filled_model["loss"]["kd"]
    assert kd["asr_teacher"] == SOURCES["asr"] and "mt_teacher" not in kd  # mt_weight is 0: no MT teacher
    assert init == {} and "asr_teacher" not in model["loss"]["kd"]  # the input is not changed


def test_only_the_parts_a_model_has_are_filled() -> None:
    _, e2e = fill_init("st", st_model(**tiny_config("st", baseline=True)), {}, SOURCES)
    assert set(e2e) == {"acoustic", "ctc", "decoder"}  # no textual encoder, no source embedding
    _, linear = fill_init("st", st_model(adaptor={"type": "linear"}), {}, {"mt": SOURCES["mt"]})
    assert set(linear) == {"textual", "decoder"}


def test_given_entries_replace_the_configs_own() -> None:
    init = {"acoustic": {"path": "old.pt"}, "adaptor": {"path": "adaptor.pt"}}
    _, filled = fill_init("st", st_model(), init, {"asr": "new.pt"})
    assert filled == {"acoustic": {"path": "new.pt"}, "adaptor": {"path": "adaptor.pt"}, "ctc": {"path": "new.pt"}}


@pytest.mark.parametrize(("items", "message"), [
    (["asr"], "expected asr=PATH or mt=PATH"),
    (["lm=x.pt"], "expected asr=PATH or mt=PATH"),
    (["asr="], "expected asr=PATH or mt=PATH"),
    (["asr=a.pt", "asr=b.pt"], "asr= is given twice"),
    # a path no file system can name was the OS's "File name too long" (or, from Python, a traceback) once the model
    # was built, after `sate config` had shown it (sixteenth hostile pass)
    (["asr=/tmp/" + "a" * 256], r"--init-from 'asr=/tmp/a+\.\.\.a+': asr= must be a path \(each name at most 255"),
    (["mt=" + "\u8a9e" * 86], r"mt= must be a path \(each name at most 255 bytes"),  # 86 characters, 258 bytes
    (["mt=" + "/d" * 2048], "mt= must be a path .*4,095 bytes in all"),
    (["asr=a\0b"], "asr= must be a path .*no NUL byte"),
    (["asr=a\ud800b"], "asr= must be a path .*lone surrogate"),
    (["xx=" + "a" * 100_000], r"^--init-from 'xx=a+\.\.\.a+': expected asr=PATH or mt=PATH$"),  # was the whole item
])
def test_bad_items_are_named(items: list[str], message: str) -> None:
    with pytest.raises(SateError, match=message) as refused:
        parse_init_from(items)
    assert len(str(refused.value)) < 400


def test_a_name_of_255_bytes_or_one_that_stands_for_bytes_is_taken() -> None:
    """The limits are NAME_MAX and PATH_MAX, in bytes: 255 bytes of a name pass, and a surrogate that stands for a
    byte of a name that is not UTF-8 (as Python gives it from the command line) is a name the OS takes."""
    assert parse_init_from(["asr=/tmp/" + "\u8a9e" * 85, "mt=a\udcffb"]) == {"asr": "/tmp/" + "\u8a9e" * 85,
                                                                            "mt": "a\udcffb"}


def test_only_st_models_are_filled() -> None:
    with pytest.raises(SateError, match="this config's task is asr"):
        fill_init("asr", tiny_config("asr"), {}, {"asr": "a.pt"})
    assert fill_init("asr", {}, {}, {}) == ({}, {})


def test_a_teacher_named_otherwise_is_refused_not_replaced(tmp_path: Path) -> None:
    """`--set model.loss.kd.mt_teacher=exp/big_mt/model.pt --init-from mt=exp/mt/model.pt` distilled from the
    --init-from model without a word: the teacher the user named was replaced (twenty-third hostile pass). Two names
    of one file are one teacher, and a teacher left null is filled as before."""
    (tmp_path / "mt.pt").write_text("a model file\n")
    sources = {"mt": str(tmp_path / "mt.pt")}

    def teacher(given: object) -> object:
        model = st_model(loss={"kd": {"mt_weight": 0.5, "mt_teacher": given}})
        return fill_init("st", model, {}, sources)[0]["loss"]["kd"]["mt_teacher"]

    with pytest.raises(SateError, match=r"^model\.loss\.kd\.mt_teacher is '.*big\.pt', and --init-from mt= makes "
                                        r"'.*mt\.pt' that side's teacher: name one teacher"):
        teacher(str(tmp_path / "big.pt"))
    assert teacher(f"{tmp_path}/./mt.pt") == sources["mt"]
    assert teacher(None) == sources["mt"]


def test_the_refusal_names_the_set_that_named_the_teacher(tmp_path: Path) -> None:
    config = tmp_path / "st.yaml"
    config.write_text(yaml.safe_dump({"task": "st", "data": {"dir": str(tmp_path)},
                                      "model": st_model(loss={"kd": {"asr_weight": 0.5}})}))
    with pytest.raises(SateError) as refused:
        checked_config(config, ["trainer.max_epochs=3", "model.loss.kd.asr_teacher=other.pt"],
                       [f"asr={tmp_path / 'asr.pt'}"], need_data=False)
    assert str(refused.value).startswith(f"{config} with --set 'model.loss.kd.asr_teacher=other.pt': "
                                         "model.loss.kd.asr_teacher is 'other.pt', and --init-from asr= makes")
    # a config saved from an earlier run names its teacher: the advice given, followed, lets --init-from name it
    assert "--set model.loss.kd.asr_teacher=null lets --init-from name it" in str(refused.value)
    followed = checked_config(config, ["trainer.max_epochs=3", "model.loss.kd.asr_teacher=other.pt",
                                       "model.loss.kd.asr_teacher=null"], [f"asr={tmp_path / 'asr.pt'}"],
                              need_data=False)
    assert followed.model["loss"]["kd"]["asr_teacher"] == str(tmp_path / "asr.pt")


def test_init_from_over_a_whole_model_entry_names_both(tmp_path: Path) -> None:
    """A config whose init: holds the whole model (to continue from an ST model) with --init-from was refused as
    "init: 'model' ... cannot be combined with components", naming the config, which held no component: --init-from
    added them (30th hostile pass). The line names both; its advice, followed, reads the config."""
    config = tmp_path / "st.yaml"
    config.write_text(yaml.safe_dump({"task": "st", "data": {"dir": str(tmp_path)}, "model": st_model(),
                                      "init": {"model": {"path": "exp/st/model.pt"}}}))
    sources = [f"asr={tmp_path / 'asr.pt'}"]
    with pytest.raises(SateError, match=r"^.*st\.yaml: init\.model \('exp/st/model\.pt'\) loads the whole model, and "
                                        r"--init-from asr= fills parts of it: give one of them"):
        checked_config(config, [], sources, need_data=False)
    assert checked_config(config, ["init=null"], sources, need_data=False).init == {
        "acoustic": {"path": str(tmp_path / "asr.pt")}, "ctc": {"path": str(tmp_path / "asr.pt")}}
    assert checked_config(config, [], [], need_data=False).init == {"model": {"path": "exp/st/model.pt"}}
    # `--set init.model=null`, tried to drop it, was told "init.model loads the whole model" (fix30h)
    with pytest.raises(SateError, match=r"^.*st\.yaml with --set 'init\.model=null': init\.model is null, which does "
                                        r"not drop the entry, and --init-from asr= fills parts of the model: --set "
                                        r"init=null drops init: to start from the --init-from models$"):
        checked_config(config, ["init.model=null"], sources, need_data=False)


def test_an_espnet_teachers_way_out_followed_under_init_from(tmp_path: Path) -> None:
    """`--init-from asr=EXP/valid.acc.ave.pth` under a distilling config makes the ESPnet experiment the teacher, which
    load_teachers refuses, advising a sate model file as the teacher; named with --set beside that --init-from, it was
    refused again as two teachers (30th hostile pass). The advice's init: entries in --init-from's place, followed,
    start the model from the experiment and distil from the model file."""
    experiment, teacher = str(tmp_path / "EXP" / "valid.acc.ave.pth"), str(tmp_path / "asr" / "model.pt")
    config = tmp_path / "st.yaml"
    model = st_model(loss={"kd": {"asr_weight": 0.3}})
    config.write_text(yaml.safe_dump({"task": "st", "data": {"dir": str(tmp_path)}, "model": model}))
    named = [f"model.loss.kd.asr_teacher={teacher}"]
    with pytest.raises(SateError, match="name one teacher"):
        checked_config(config, named, [f"asr={experiment}"], need_data=False)
    entries = {"acoustic": {"path": experiment}, "ctc": {"path": experiment}}  # init.acoustic.path, init.ctc.path
    config.write_text(yaml.safe_dump({"task": "st", "data": {"dir": str(tmp_path)}, "model": model, "init": entries}))
    followed = checked_config(config, named, [], need_data=False)
    assert followed.init == entries
    assert followed.model["loss"]["kd"] == {"asr_weight": 0.3, "asr_teacher": teacher}
    plain = tmp_path / "plain.yaml"  # the other way: no distilling, --init-from kept
    plain.write_text(yaml.safe_dump({"task": "st", "data": {"dir": str(tmp_path)}, "model": model}))
    weight_zero = checked_config(plain, ["model.loss.kd.asr_weight=0"], [f"asr={experiment}"], need_data=False)
    assert weight_zero.init == entries
