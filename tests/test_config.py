"""`sate config`: every key printed with its default and a comment, and config files as `sate train` reads them."""

from __future__ import annotations

import os
import re
import shlex
import threading
from pathlib import Path

import pytest
import yaml

from sate.cli import main
from sate.config import load_yaml_text
from sate.errors import SateError
from sate.models import config as model_config
from sate.settings import helps
from sate.train import trainer
from sate.train.schema import TrainingConfig, late_specaug


def _paths(tree: dict, prefix: str = "") -> set[str]:
    """Every dotted key of a nested dict, sections included (model and init are open: their keys are not)."""
    out: set[str] = set()
    for key, value in tree.items():
        out.add(prefix + key)
        if isinstance(value, dict) and key not in ("model", "init"):
            out |= _paths(value, f"{prefix}{key}.")
    return out


def test_every_default_has_a_comment_and_every_comment_a_key() -> None:
    assert _paths(TrainingConfig().to_dict()) == set(helps(TrainingConfig))
    tasks = set().union(*(_paths(model_config.task_defaults(task)) for task in model_config.TASKS))
    assert tasks == set(model_config.model_help()) and all(model_config.model_help().values())


@pytest.mark.parametrize("task", ["asr", "mt", "st"])
def test_task_defaults_print_as_yaml_that_reads_back(task: str, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["config", "--task", task]) == 0
    printed = capsys.readouterr().out
    config = yaml.safe_load(printed)  # the comments are YAML comments
    assert config["task"] == task and config["optim"] == TrainingConfig().to_dict()["optim"]
    assert config["model"] == model_config.task_defaults(task) == model_config.resolve_config(task, None).to_dict()
    assert "  lr: 0.002" in printed and "# peak learning rate" in printed
    assert ("adaptor" in config["model"]) == (task == "st") and ("acoustic" in config["model"]) == (task != "mt")


def test_a_config_file_prints_merged_and_resolved(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "st.yaml"
    path.write_text(yaml.safe_dump({"task": "st", "model": {"d_model": 64, "loss": {"kd": {"mt_weight": 0.5}}},
                                    "optim": {"lr": 1e-3}}))
    assert main(["config", "--config", str(path), "--set", "trainer.max_steps=7", "--init-from", "mt=m.pt"]) == 0
    config = yaml.safe_load(capsys.readouterr().out)
    assert config["model"]["d_model"] == 64 and config["model"]["acoustic"]["layers"] == 12  # defaults filled
    assert config["optim"]["lr"] == 1e-3 and config["trainer"]["max_steps"] == 7
    assert config["model"]["loss"]["kd"]["mt_teacher"] == "m.pt" and config["init"]["decoder"] == {"path": "m.pt"}


@pytest.mark.parametrize("char", ["\n", "\x1b", "\x7f", "\x85", "\u2028", "\u202e", "\u2066", "\udcff"])
def test_a_config_named_with_a_control_character_prints_as_yaml(char: str, tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Nineteenth hostile pass: the listing's first line, a YAML comment, named the file as it is (a line break in it
    made the listing invalid YAML; ESC or U+202E reached the terminal), and PyYAML wrote a right-to-left override
    in a value as it is, in the listing and in an experiment's config.yaml."""
    folder = tmp_path / f"runs{char}"
    folder.mkdir()
    path = folder / "st.yaml"
    path.write_text(yaml.safe_dump({"task": "st", "data": {"dir": str(folder / "data")}}, allow_unicode=False))
    assert main(["config", "--config", str(path)]) == 0
    printed = capsys.readouterr().out
    assert f"runs{char}" not in printed and yaml.safe_load(printed)["data"]["dir"] == str(folder / "data")
    assert main(["config", "--config", str(path), "--get", "data.dir"]) == 0
    got = capsys.readouterr().out
    assert f"runs{char}" not in got and yaml.safe_load(got) == str(folder / "data")


def test_get_prints_one_resolved_value(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """What a recipe asks a config (recipes/lib/pipeline.sh asks SATE's for its MT text weight)."""
    path = tmp_path / "st.yaml"
    path.write_text("task: st\nmodel: {loss: {mt_text_weight: 0.5}}\n")
    answers = []
    for key in ("model.loss.mt_text_weight", "model.loss.ctc_weight", "trainer.max_steps", "model.loss.kd"):
        assert main(["config", "--config", str(path), "--set", "trainer.max_steps=7", "--get", key]) == 0
        answers.append(capsys.readouterr().out)
    assert answers[:3] == ["0.5\n", "0.3\n", "7\n"]  # the file's, a default, an override
    assert yaml.safe_load(answers[3])["mt_weight"] == 0.0  # a section, as YAML


@pytest.mark.parametrize(("argv", "message"), [
    (["--task", "st", "--set", "a=1"], "--set, --init-from and --get need --config"),
    (["--task", "st", "--get", "task"], "--set, --init-from and --get need --config"),
    (["--task", "st", "--get", ""], "--set, --init-from and --get need --config"),  # an empty $key printed
    (["--config", "{dir}/bad.yaml", "--get", ""], "unknown config key 'optim.lrr'"),  # the file is read first
    (["--config", "{dir}/kd.yaml", "--init-from", "asr=a.pt", "--get", ""],
     "kd.yaml: no key '' in the resolved config"),  # it was every key, exit 0
    (["--config", "{dir}/kd.yaml", "--init-from", "asr=a.pt", "--get", "model.loss.nope"],
     "kd.yaml: no key 'model.loss.nope' in the resolved config"),
    (["--config", "{dir}/missing.yaml"], "config file not found"),
    (["--config", "{dir}/bad.yaml"], "unknown config key 'optim.lrr'"),
    (["--config", "{dir}/bad_spec.yaml"], "unknown config key 'specaug.freq_mask_widht'"),
    (["--config", "{dir}/kd.yaml"], "loss.kd.asr_teacher .* is not set .*--init-from asr=PATH"),
])
def test_errors_name_the_key_or_file(tmp_path: Path, capsys: pytest.CaptureFixture[str], argv: list[str],
                                     message: str) -> None:
    (tmp_path / "bad.yaml").write_text("task: mt\noptim: {lrr: 1}\n")
    (tmp_path / "bad_spec.yaml").write_text("task: asr\nspecaug: {freq_mask_widht: 10}\n")
    (tmp_path / "kd.yaml").write_text("task: st\nmodel: {loss: {kd: {asr_weight: 0.5}}}\n")
    assert main(["config", *(a.format(dir=tmp_path) for a in argv)]) == 2
    assert re.search(message, capsys.readouterr().err)


@pytest.mark.parametrize(("setting", "message"), [
    ("trainer.max_epochs=ten", "trainer.max_epochs must be an integer, got 'ten'"),
    ("trainer.max_epochs=2.5", "trainer.max_epochs must be an integer, got 2.5"),
    ("trainer.patience=-1", "trainer.patience must be at least 0, got -1"),
    ("trainer.precision=bf17", "trainer.precision must be one of auto, 32-true, bf16-mixed"),
    ("trainer.max_minutes=0", "trainer.max_minutes must be null or positive and at most .*, got 0.0"),
    ("trainer.max_minutes=1e300", r"trainer.max_minutes must be null or positive and at most 1,000,000,000 \(about"),
    ("trainer.valid_max_len_ratio=1e6", "trainer.valid_max_len_ratio must be positive and at most 10, as decoding"),
    ("trainer.checkpoint_every_steps=-3", "trainer.checkpoint_every_steps must be at least 0"),
    ("optim.lr=-1e-3", "optim.lr must be positive, got -0.001"),
    ("optim.lr=.nan", "optim.lr must be a finite number, got nan"),
    ("optim.betas=[0.9]", r"optim.betas must be two numbers in \[0, 1\)"),
    ("optim.clip_norm=high", "optim.clip_norm must be a finite number, got 'high'"),
    # an L2 penalty of 1e308 overflowed the gradients to NaN at the first update, blamed on optim.lr
    ("optim.weight_decay=1e308", r"optim.weight_decay must be in \[0, 1\], got 1e\+308"),
    ("batch.per_device=0", "batch.per_device must be positive, got 0"),
    ("batch.global=[1]", "batch.global must be an integer, got \\[1\\]"),
    ("data.train=3", "data.train must be a string or a list, got 3"),
    ("data.train=[]", r"data.train must be a split name or a non-empty list of distinct split names \(letters, "
                      r"digits, '.', '_' and '-'; at most 200\), got \[\]"),
    ("data.valid=../dev", r"data.valid must be a split name \(letters, digits, '.', '_' and '-'; at most 200\), got "
                          "'../dev'"),
    # names the OS refuses were its "File name too long", naming neither the file nor the key (fifteenth hostile
    # pass, the reads harness's wider run)
    pytest.param("data.valid=" + "d" * 201, r"data.valid must be a split name \(.*; at most 200\), got 'ddd",
                 id="data.valid-201"),
    pytest.param("data.dir=" + "d" * 100_000, r"data.dir must be a path \(each name at most 255 bytes, 4,095 bytes "
                 r"in all; no NUL", id="data.dir-100000"),
    pytest.param("data.dir=" + "/d" * 2100, r"data.dir must be a path \(each name", id="data.dir-4200-bytes"),
    pytest.param("model.acoustic.path=" + "t" * 256, r"model.acoustic.path must be a path \(each name at most 255",
                 id="acoustic.path-256"),
    ("data.train=[train, ls, train]", r"data.train must be a split name or a non-empty list of distinct split names"),
    ("data.train=[train, 3]", r"data.train must be a split name or a non-empty list .*, got \['train', 3\]"),
    ("data.num_workers=1.5", "data.num_workers must be an integer, got 1.5"),
    ("data.num_workers=1000000", r"data.num_workers must be from 0 to \d+ \(four processes per CPU"),
    ("data.cmvn=global2", "data.cmvn must be one of global, utterance, none"),
    ("data.mt_text=a.txt", "data.mt_text must be a list or null, got 'a.txt'"),
    ("data.mt_text=[a.en, a.de]", r"data.mt_text must be null or a list of file pairs \[\[EN, TGT\], ...\]"),
    ("data.mt_text=[[a.en, a.de]]", "data.mt_text applies to task mt only"),
    # paths no file system can name, which passed to the model's build: a NUL byte and a lone surrogate were Python's
    # tracebacks ("embedded null byte", "surrogates not allowed"), a 256-byte name the OS's "File name too long"
    # (sixteenth hostile pass)
    pytest.param('data.mt_text=[["a\\0b", b.de]]', r"data.mt_text must be null or a list of file pairs \[\[EN, "
                 r"TGT\], ...\], each a path \(.*no NUL byte", id="mt_text-nul"),
    pytest.param('data.mt_text=[[a.en, "b\\ud800"]]', "data.mt_text must be .*lone surrogate", id="mt_text-surrogate"),
    pytest.param(f"data.mt_text=[[a.en, {'b' * 256}]]", "data.mt_text must be .*each name at most 255 bytes",
                 id="mt_text-256"),
    pytest.param('init={acoustic: {path: "a\\0b"}}', r"init.acoustic.path must be a path \(.*no NUL byte.*, got "
                 r"'a\\x00b'", id="init-path-nul"),
    pytest.param('init={ctc: {path: "a\\ud800"}}', "init.ctc.path must be a path .*lone surrogate",
                 id="init-surrogate"),
    pytest.param(f"init={{acoustic: {{path: {'p' * 256}}}}}", "init.acoustic.path must be a path \\(each name at most "
                 "255 bytes", id="init-path-256"),
    pytest.param('init={acoustic: {path: a.pt, config: "c\\0.yaml"}}', "init.acoustic.config must be a path",
                 id="init-config-nul"),
    pytest.param('data.dir="d\\0"', "data.dir must be a path .*no NUL byte", id="data.dir-nul"),  # "no such directory"
    ("data.mt_max_ratio=0.5", "data.mt_max_ratio must be at least 1"),
    ("data.mt_dedup=1", "data.mt_dedup must be true or false"),
    ("specaug.enabled=yes please", "specaug.enabled must be true or false"),
    ("specaug.max_time_ratio=2", r"specaug.max_time_ratio must be in \[0, 1\], got 2.0"),
    ("specaug.num_time_masks=true", "specaug.num_time_masks must be an integer, got true"),
    # each mask is a row of the batch's length: 10^9 time masks asked for terabytes once the first batch came
    ("specaug.num_time_masks=1000000000", r"specaug.num_time_masks must be from 0 to 100, got 1000000000"),
    ("specaug.num_freq_masks=101", r"specaug.num_freq_masks must be from 0 to 100, got 101"),
    ("seed=-1", "seed must be from 0 to 4294967295"),
    ("seed=4294967296", r"seed must be from 0 to 4294967295 \(numpy's seeds\), got 4294967296"),
    ("task=tts", "task must be one of asr, mt, st"),
])
def test_wrong_types_and_ranges_are_one_line_naming_the_key(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            setting: str, message: str) -> None:
    path = tmp_path / "asr.yaml"
    path.write_text("task: asr\n")
    assert main(["config", "--config", str(path), "--set", setting]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and re.search(message, err) and str(path) in err, err


@pytest.mark.parametrize(("text", "message"), [
    ("model: {acoustic: {layers: null}}", "model.acoustic.layers must be an integer, got null$"),
    ("model: {acoustic: {layers: }}", "model.acoustic.layers must be an integer, got null$"),
    ("model: {acoustic: {layers: no}}", "model.acoustic.layers must be an integer, got false$"),
    ("data: {train: no}", r"data.train must be a string or a list, got false \(YAML reads an unquoted yes, no, on or "
                          r"off as a boolean: quote the word\)$"),
    # no quoting advised where no choice is such a word: the quoted word was refused again (review)
    ("trainer: {precision: off}", r"trainer.precision must be one of auto, .*, 64-true, got false$"),
    ("trainer: no", "trainer must be a mapping, got false$"),
    ("model: {acoustic: no}", "model.acoustic must be a mapping, got false$"),  # null: the defaults (28th pass)
    ("init: {acoustic: {path: a.pt, prefix: null}}", "init.acoustic.prefix must be a string, got null$"),
])
def test_a_files_null_and_boolean_words_are_named_as_yaml_spells_them(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], text: str, message: str) -> None:
    """A file's `layers: null` was refused as "got None" and `train: no` as "got False": Python's words for what the
    user wrote in YAML (25th hostile pass's leftovers). A word YAML reads as a boolean where text is due says so."""
    path = tmp_path / "asr.yaml"
    path.write_text(f"task: asr\n{text}\n")
    assert main(["config", "--config", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and re.search(message, err) and str(path) in err, err


def test_data_train_takes_one_split_or_a_list(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    path = tmp_path / "asr.yaml"
    path.write_text("task: asr\n")
    assert main(["config", "--config", str(path)]) == 0
    assert yaml.safe_load(capsys.readouterr().out)["data"]["train"] == "train"
    assert main(["config", "--config", str(path), "--set", "data.train=[train, train-clean-100, kaldi]"]) == 0
    printed = capsys.readouterr().out
    assert yaml.safe_load(printed)["data"]["train"] == ["train", "train-clean-100", "kaldi"]
    assert re.search(r"train: \[train, train-clean-100, kaldi\] +# training split .*, or a list of splits", printed)


@pytest.mark.parametrize("splits", ["[train, train_sp]", "[train_sp, kaldi, train]"])
def test_data_train_notes_train_beside_its_speed_copies(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                        splits: str) -> None:
    """train_sp holds every row of train and its speed copies: `[train, train_sp]` trained on 48 items of a 12-row
    train split, train's own rows twice, exit 0 (hand27t). `sate train` refuses it for a new run; `sate config`
    notes it, as it shows the snapshot of a run begun so too (tests/train/test_resume.py). train_sp alone, or
    beside other corpora, is said nothing of."""
    path = tmp_path / "asr.yaml"
    path.write_text("task: asr\n")
    assert main(["config", "--config", str(path), "--set", f"data.train={splits}"]) == 0
    err = capsys.readouterr().err.strip()
    assert err == ("note: data.train lists train and train_sp: train_sp (`sate features --speed-perturb`) holds "
                   "every row of train besides its speed copies, so those rows are trained on twice; `sate train` "
                   "refuses it for a new run (give train_sp in train's place) and resumes a run that began so"), err
    for taken in ("train_sp", "[train_sp, train-clean-100]"):
        assert main(["config", "--config", str(path), "--set", f"data.train={taken}"]) == 0
        assert capsys.readouterr().err == ""


@pytest.mark.parametrize(("item", "wanted"), [
    ("batch.per_device=99999999999999999999", "batch.per_device must be positive and at most 2**63-1"),
    ("specaug.start_step=99999999999999999999", "specaug.start_step must be at least 0 and at most 2**63-1"),
])
def test_an_integer_beyond_int64_is_named_with_its_keys_own_range(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                 item: str, wanted: str) -> None:
    """A whole number past int64 of a key that must be positive was "must be an integer from -2**63 to 2**63-1":
    followed, -5 was then refused as not positive (hand27t)."""
    path = tmp_path / "asr.yaml"
    path.write_text("task: asr\n")
    assert main(["config", "--config", str(path), "--set", item]) == 2
    assert capsys.readouterr().err.strip().endswith(f"{wanted}, got 99999999999999999999")


@pytest.mark.slow
def test_ints_stand_for_floats_and_every_recipe_config_passes(capsys: pytest.CaptureFixture[str]) -> None:
    path = Path(__file__).parents[1] / "conf"
    for conf in sorted(path.glob("*/*.yaml")):
        init = ["--init-from", "asr=a.pt", "--init-from", "mt=m.pt"] if conf.name.startswith("st") else []
        assert main(["config", "--config", str(conf), *init]) == 0, conf
        # conf/synth_ding/asr.yaml's SpecAugment began after its last update (thirtieth hostile pass); the Ding E2E
        # baseline's warm-up (300 of 280 updates) is noted, and left (its --compare rows were measured so)
        assert "SpecAugment never applies" not in capsys.readouterr().err, conf
        assert late_specaug(trainer.load_training_config(conf, [], need_data=False)) is None, conf
    config = trainer.load_training_config(conf, ["optim.lr=1", "trainer.max_minutes=5"], need_data=False)
    assert config.optim.lr == 1.0 and isinstance(config.optim.lr, float)
    assert isinstance(config.trainer.max_minutes, float)


@pytest.mark.parametrize(("model", "message"), [
    ("textual: {layers: -1}", "model.textual.layers must be 0"),
    ("textual: {lyers: 2}", "unknown config key 'model.textual.lyers' (known here: "),
    ("adaptor: {type: none}", "model.adaptor.type none (the E2E ST baseline) needs model.textual.layers 0"),
    ("d_model: 250", "model.d_model 250 is not divisible by model.acoustic.heads 4"),
    ("ctc: {layer: 40}", "model.ctc.layer 40 is above the top acoustic layer (model.acoustic.layers 12)"),
    ("textual: 3", "model.textual must be a mapping, got 3"),
])
def test_a_model_section_refusal_names_the_file_and_the_full_key(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], model: str, message: str) -> None:
    """It read "model config: textual.layers must be ...": neither the file nor the `model.` of the key."""
    path = tmp_path / "st.yaml"
    path.write_text(f"task: st\nmodel: {{{model}}}\n")
    for argv in (["config", "--config", str(path)],
                 ["train", "--config", str(path), "--exp", str(tmp_path / "exp"), "--set", f"data.dir={tmp_path}"]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"sate {argv[0]}: error: {path}: {message}"), err
        assert len(err.splitlines()) == 1
    assert not (tmp_path / "exp").exists()


def test_a_refusal_of_a_set_value_names_the_set(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A key or value given by `--set` was refused naming only the file ("asr.yaml: unknown config key
    'trainer.max_epoch'"): the user searched the file for a key it never held (tenth hostile pass). The first
    `--set` with which the config is refused is named beside the file; a refusal of the file itself names the file."""
    path = tmp_path / "asr.yaml"
    path.write_text("task: asr\n")
    for setting, says in (("trainer.max_epoch=3", "unknown config key 'trainer.max_epoch'"),
                          ("seed=-1", "seed must be from 0 to 4294967295"),
                          ("model.acoustic.layers=0", "model.acoustic.layers must be at least 1")):
        for command in (["config", "--config", str(path)], ["train", "--config", str(path), "--exp",
                                                             str(tmp_path / "exp"), "--set", "data.dir=."]):
            assert main([*command, "--set", "trainer.max_epochs=2", "--set", setting]) == 2
            err = capsys.readouterr().err.strip()
            assert len(err.splitlines()) == 1 and f"error: {path} with --set '{setting}': {says}" in err, err
    path.write_text("task: asr\noptim: {lr: .nan}\n")
    assert main(["config", "--config", str(path), "--set", "seed=-1"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"sate config: error: {path}: optim.lr must be a finite number, got nan", err


def test_a_yaml_boolean_word_given_by_set_is_named_as_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) \
        -> None:
    """`--set data.cmvn=no` (YAML 1.1 reads no, off, yes, on as booleans) was "data.cmvn must be a string, got
    False", a word the user never wrote (24th hostile pass). It is named as written, with what YAML made of it; where
    the key takes text, with the quoting that gives the text, which is then checked as text."""
    path = tmp_path / "asr.yaml"
    path.write_text("task: asr\n")
    for setting, says in (
            ("data.cmvn=no", "data.cmvn must be one of global, utterance, none, got 'no', which YAML reads as false"),
            ("data.cmvn=On", "data.cmvn must be one of global, utterance, none, got 'On', which YAML reads as true"),
            ("data.dir=no", "data.dir must be a string or null, got 'no', which YAML reads as false (for the text, "
                            "quote it: --set \"data.dir='no'\")"),
            ("trainer.max_epochs=off", "trainer.max_epochs must be an integer, got 'off', which YAML reads as false"),
            ("trainer.max_epochs=true", "trainer.max_epochs must be an integer, got true"),
            ("data.cmvn='no'", "data.cmvn must be one of global, utterance, none, got 'no'")):
        assert main(["config", "--config", str(path), "--set", setting]) == 2
        err = capsys.readouterr().err.strip()
        assert err == f"sate config: error: {path} with --set {setting!r}: {says}", err
    assert main(["config", "--config", str(path), "--set", "data.cmvn=none"]) == 0  # the word that means none
    assert "cmvn: none" in capsys.readouterr().out


def test_a_yaml_boolean_word_for_a_model_key_or_a_key_of_choices_is_named_as_written(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """(24th hostile pass, review) A model key's refusal starts with the config's path, so `--set
    model.textual.type=off` was still "must be a string, got False"; and a key of fixed choices was told to quote the
    word, which followed ("data.cmvn='no'") was refused again: the choices are named instead. `sate train` too."""
    path = tmp_path / "st.yaml"
    path.write_text("task: st\n")
    for command in ("config", "train"):
        for setting, says in (
                ("model.textual.type=off", "model.textual.type must be one of transformer, hf_marian, got 'off', "
                                           "which YAML reads as false"),
                ("model.acoustic.type=no", "model.acoustic.type must be one of conformer, transformer, hf_wav2vec2, "
                                           "hf_hubert, hf_wavlm, whisper, got 'no', which YAML reads as false"),
                ("trainer.monitor_mode=off", "trainer.monitor_mode must be one of min, max, got 'off', which YAML "
                                             "reads as false")):
            extra = ["--exp", str(tmp_path / "exp")] if command == "train" else []
            assert main([command, "--config", str(path), *extra, "--set", setting]) == 2
            err = capsys.readouterr().err.strip()
            assert err == f"sate {command}: error: {path} with --set {setting!r}: {says}", err
    assert not (tmp_path / "exp").exists()


def test_a_key_that_does_nothing_names_the_keys_it_depends_on_as_the_file_spells_them(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A training config's refusal said "model.loss.kd.asr_teacher is set but does nothing: loss.kd.asr_weight is
    0", naming a key the file does not have (its model section is under `model:`); the hub sections' refusals
    likewise."""
    path = tmp_path / "st.yaml"
    path.write_text("task: st\nmodel:\n  loss: {kd: {asr_teacher: a.pt}}\n")
    assert main(["config", "--config", str(path)]) == 2
    assert capsys.readouterr().err == (f"sate config: error: {path}: model.loss.kd.asr_teacher is set but does "
                                       "nothing: model.loss.kd.asr_weight is 0\n")
    path.write_text("task: asr\nmodel:\n  acoustic: {type: whisper, path: w}\n")  # and the hub sections' refusals
    assert main(["config", "--config", str(path)]) == 2
    # where a relative name was looked up (31st hostile pass): from another folder, "download the model first" failed
    assert capsys.readouterr().err == (f"sate config: error: {path}: model.acoustic.path: w is not a directory "
                                       f"(relative to the current directory, {Path.cwd()}); download the model "
                                       "first (docs/models.md)\n")
    path.write_text("task: asr\nmodel:\n  acoustic: {type: whisper, path: ~/models/w}\n")
    assert main(["config", "--config", str(path)]) == 2
    err = capsys.readouterr().err
    assert "~/models/w is not a directory (relative to the current directory, " in err
    assert "; a '~' here is not your home folder: write the path out); download the model first" in err
    path.write_text("task: st\nmodel:\n  textual: {type: hf_marian}\n")
    assert main(["config", "--config", str(path)]) == 2
    assert capsys.readouterr().err == (f"sate config: error: {path}: model.textual.type and model.decoder.type "
                                       "hf_marian come together (one Marian model)\n")  # once "model config: "


def piped_config(tmp_path: Path, text: bytes) -> tuple[Path, threading.Thread]:
    """A named pipe standing for `--config <(...)`, and the thread that writes ``text`` into it once it is opened."""
    fifo = tmp_path / "piped.yaml"
    os.mkfifo(fifo)

    def write() -> None:
        with open(fifo, "wb") as f:
            f.write(text)

    writer = threading.Thread(target=write, daemon=True)
    writer.start()
    return fifo, writer


def test_a_piped_config_is_read_once_when_a_set_is_refused(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Naming the `--set` at fault reads the config again with fewer of them: `--config <(sed ...)` is a pipe,
    which cannot be read twice, so the file is read once."""
    fifo, writer = piped_config(tmp_path, b"task: asr\n")
    assert main(["config", "--config", str(fifo), "--set", "seed=1", "--set", "seed=-1"]) == 2
    writer.join(10)
    assert f"{fifo} with --set 'seed=-1': seed must be from 0" in capsys.readouterr().err


def test_base_60_numbers_are_not_read_as_numbers(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """YAML 1.1 reads `2:30` as 150 and `1:0.5` as 60.5: `--set trainer.max_epochs=2:30` trained 150 epochs without
    a word (tenth hostile pass). They are strings, as in YAML 1.2, refused by the key they are given to."""
    from sate.config import load_yaml_text

    assert load_yaml_text("[2:30, 1:0.5, 12:30:00, 0x10, 1_000, 1e-3]") == ["2:30", "1:0.5", "12:30:00", 16, 1000,
                                                                          0.001]
    path = tmp_path / "asr.yaml"
    path.write_text("task: asr\n")
    assert main(["config", "--config", str(path), "--set", "trainer.max_epochs=2:30"]) == 2
    assert "trainer.max_epochs must be an integer, got '2:30'" in capsys.readouterr().err


def test_digits_of_other_scripts_are_no_number(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The float resolver's `\\d` took other scripts' digits, which float() reads: `1٣e-3` (an Arabic-Indic three)
    was 0.013 and `.٥` 0.5, so `--set optim.lr=1٣e-3` trained at 0.013 without a word (eighteenth hostile pass).
    They are strings, refused by the key they are given to, as `wait-k=٣` is."""
    from sate.config import load_yaml_text

    assert load_yaml_text("[1٣, 1٣e-3, .٥, -٣.5, 3e٣, 1.5, .5, 1e-3]") == ["1٣", "1٣e-3", ".٥", "-٣.5", "3e٣", 1.5,
                                                                           0.5, 0.001]
    path = tmp_path / "asr.yaml"
    path.write_text("task: asr\n")
    assert main(["config", "--config", str(path), "--set", "optim.lr=1٣e-3"]) == 2
    assert "optim.lr must be a finite number, got '1٣e-3'" in capsys.readouterr().err


def test_a_leading_zero_is_a_decimal_not_octal(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """YAML 1.1 reads `010` as octal 8 and `08` as the float 8.0: `--set trainer.max_epochs=010` trained 8 epochs
    without a word, and a quoted MuST-C yaml line's `offset: 010` was 8 s where an unquoted one's was 10 (eleventh
    hostile pass). As in YAML 1.2, digits after a leading zero are decimal, in every YAML sate reads."""
    from sate.config import load_yaml_text
    from sate.data.mustc import parse_yaml_line

    assert load_yaml_text("[010, 08, -010, +0_10, 00, 0x10, 0b11, !!int 010, '010']") == [10, 8, -10, 10, 0, 16, 3, 10,
                                                                                        "010"]
    path = tmp_path / "asr.yaml"
    path.write_text("task: asr\n")
    for value in ("010", "08"):
        assert main(["config", "--config", str(path), "--set", f"trainer.max_epochs={value}", "--get",
                     "trainer.max_epochs"]) == 0
        assert capsys.readouterr().out.strip() == str(int(value, 10))
    entry = "- {duration: 1, offset: 010, speaker_id: %s, wav: ted_1.wav}"
    assert float(parse_yaml_line(entry % "'a'", path, 1)["offset"]) == float(parse_yaml_line(entry % "a", path, 1)[
        "offset"]) == 10


def test_what_sate_writes_as_yaml_reads_back_as_written() -> None:
    """A config snapshot (EXP/config.yaml) or a pack's sate.yaml is read back by sate's loader, which reads `08` and
    `1e-3` as numbers where YAML 1.1 (PyYAML's dumper) left them plain as strings: a split or folder named so came
    back as 8 or 0.001 on a resume (eleventh hostile pass). Such strings are quoted."""
    from sate.config import dump_yaml, load_yaml_text

    data = {"train": ["08", "1e-3", "0_9", "010", "2:30", "yes", "~"], "n": [8, 0.001, 1e-7, None, True]}
    assert load_yaml_text(dump_yaml(data)) == data


def test_a_string_holding_nel_reads_back_as_written() -> None:
    """NEL (U+0085) was written raw inside single quotes, where YAML 1.1 reads a line break and folds it into a
    space: a data.dir holding one came back from the run's snapshot (`sate train --config EXP/config.yaml`) as
    another folder, 'no such directory' (seventeenth hostile pass). It is the one character that did so."""
    from sate.config import dump_yaml, load_yaml_text

    data = {"dir": "/data/caf\x85", "also": ["\x85", "a\x85b\nc"], "plain": "x"}
    assert load_yaml_text(dump_yaml(data)) == data
    assert dump_yaml({"plain": "x"}) == "plain: x\n"  # other strings as before


def test_the_listing_shows_strings_as_sate_reads_them(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`sate config` showed the split '08' and '1e-3' plain (PyYAML's own dumper), which sate reads as the numbers 8
    and 0.001: the listing saved as a config was refused (data.train must be a string, got 0.001), and `--get` told a
    script a number (seventeenth hostile pass)."""
    path = tmp_path / "asr.yaml"
    path.write_text("task: asr\ndata: {dir: /d, train: '1e-3', valid: '08'}\n")
    assert main(["config", "--config", str(path)]) == 0
    listing = tmp_path / "listed.yaml"
    listing.write_text(capsys.readouterr().out)
    assert main(["config", "--config", str(listing), "--get", "data"]) == 0
    assert "train: '1e-3', valid: '08'" in capsys.readouterr().out


def test_an_unknown_key_is_named_as_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A key is read as its text: `on:` was named "unknown config key 'true'" (YAML 1.1's boolean), a word the file
    does not hold, and `~:` as 'null' (eighteenth hostile pass)."""
    path = tmp_path / "asr.yaml"
    for key in ("on", "~", "010", "1e3"):
        path.write_text(f"task: asr\ndata: {{dir: /d}}\n{key}: x\n")
        assert main(["config", "--config", str(path)]) == 2
        assert f"unknown config key {key!r}" in capsys.readouterr().err


def test_a_key_a_merge_brings_is_named_as_written(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The keys of a merge (`<<: {on: 1}`) were still read as YAML 1.1 reads them: "unknown config key
    'trainer.true'" (nineteenth hostile pass); a mapping's own key still overrides a merged one."""
    path = tmp_path / "asr.yaml"
    for merged, key in (("{on: 1}", "on"), ("[{<<: {'~': 1}}, {y: 2}]", "~")):
        path.write_text(f"task: asr\ndata: {{dir: /d}}\ntrainer: {{<<: {merged}}}\n")
        assert main(["config", "--config", str(path)]) == 2
        assert f"unknown config key 'trainer.{key}'" in capsys.readouterr().err
    path.write_text("task: asr\ndata: {dir: /d}\ntrainer: {<<: {max_epochs: 4}, max_epochs: 5}\n")
    assert main(["config", "--config", str(path), "--get", "trainer.max_epochs"]) == 0
    assert capsys.readouterr().out == "5\n"


def test_of_mappings_merged_together_the_earlier_keys_win(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """YAML's merge type: of a list of mappings merged (`<<: [*a, *b]`), a key of an earlier one overrides the same
    key of a later one, and the mapping's own keys override both. PyYAML 6.0.3 on tells keys apart by the identity
    of their Python strings, so a one-letter key kept the earlier value and `layers` the later one (twenty-seventh
    hostile pass)."""
    path = tmp_path / "asr.yaml"
    path.write_text("task: asr\ndata: {dir: /d}\nmodel:\n  acoustic: {<<: [{layers: 2, heads: 2}, {layers: 5, ffn: 64}]"
                    ", heads: 1}\n")
    for key, value in (("layers", 2), ("heads", 1), ("ffn", 64)):
        assert main(["config", "--config", str(path), "--get", f"model.acoustic.{key}"]) == 0
        assert capsys.readouterr().out == f"{value}\n"
    anchored = load_yaml_text("a: &a {layers: 2}\nb: &b {layers: 5, w: 1}\nc: {<<: [*a, *b]}\n"
                              "d: {<<: [{l: 2}, {l: 5}]}")
    assert anchored["c"] == {"layers": 2, "w": 1} and anchored["d"] == {"l": 2}  # whatever the length of the key


@pytest.mark.parametrize(("text", "expected"), [
    ("top: {<<: {layers: 2}, heads: 4}", {"layers": 2, "heads": 4}),  # one level
    ("top: {<<: {layers: 2}, layers: 5}", {"layers": 5}),  # the mapping's own key wins
    ("base: &b {layers: 2}\nmid: &m {<<: *b, layers: 5}\ntop: {<<: *m}", {"layers": 5}),  # chained
    ("top: {<<: {<<: {layers: 2}, layers: 5}}", {"layers": 5}),
    ("top: {<<: [{<<: {layers: 2}, layers: 5}, {layers: 9}]}", {"layers": 5}),  # a list of merges: the earlier wins
    ("top: {<<: [{layers: 2}, {layers: 5, heads: 1}], layers: 7}", {"layers": 7, "heads": 1}),
    ("a: &a {x: 1, y: 1}\nb: &b {<<: *a, y: 2, z: 2}\nc: {<<: *b, z: 3}\ntop: {<<: [{<<: *b, z: 3}, *a], w: 4}",
     {"x": 1, "y": 2, "z": 3, "w": 4}),
])
def test_a_merged_mapping_merges_as_it_reads(text: str, expected: dict) -> None:
    """A mapping merged in (`<<: *mid`) brings the values it reads as itself, own keys over its merged ones, as YAML's
    merge type says: a flattened mapping kept the pair its own key overrode too, and merged in turn gave that one, so
    `mid: &m {<<: *base, layers: 5}` then `top: {<<: *m}` read 2 layers (twenty-seventh hostile pass, review)."""
    assert load_yaml_text(text)["top"] == expected


@pytest.mark.parametrize(("value", "key"), [("{<<: {layers: 2, layers: 5}}", "'layers'"),
                                          ("{<<: {<<: {heads: 1, heads: 2}}}", "'heads'"),
                                          ("{<<: {layers: 2}, <<: {layers: 5}}", "'<<'")])
def test_a_key_twice_in_a_merge_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str,
                                           key: str) -> None:
    """A key given twice is refused, but not inside a mapping merged in (never constructed itself), nor two merge
    keys, which YAML calls one key twice: one value of the two was kept without a word, and which changed with the
    merge's mend (twenty-seventh hostile pass, review)."""
    path = tmp_path / "asr.yaml"
    path.write_text(f"task: asr\ndata: {{dir: /d}}\nmodel: {{acoustic: {value}}}\n")
    assert main(["config", "--config", str(path), "--get", "model.acoustic.layers"]) == 2
    assert f"invalid YAML (the key {key} is given twice (lines 3 and 3); " in capsys.readouterr().err


def test_a_config_merging_a_variant_gives_the_variant(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """The repository's MT config with its decoder a variant of the textual encoder merged in: `sate config` printed
    the textual encoder's dropout, the value the variant overrode."""
    text = (Path(__file__).parents[1] / "conf" / "mustc" / "mt.yaml").read_text(encoding="utf-8")
    old = ("  textual: {layers: 6, heads: 4, ffn: 2048, dropout: 0.1}\n"
           "  decoder: {layers: 6, heads: 4, ffn: 2048, dropout: 0.1}\n")
    assert old in text
    path = tmp_path / "mt.yaml"
    path.write_text(text.replace(old, "  textual: &textual {layers: 6, heads: 4, ffn: 2048, dropout: 0.1}\n"
                                      "  decoder: {<<: {<<: *textual, dropout: 0.3}, layers: 3}\n"))
    for key, value in (("dropout", "0.3"), ("layers", "3"), ("heads", "4")):
        assert main(["config", "--config", str(path), "--get", f"model.decoder.{key}"]) == 0
        assert capsys.readouterr().out == f"{value}\n"


@pytest.mark.parametrize("option", ["--set", "--decode"])
def test_a_value_given_with_a_yaml_comment_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      option: str) -> None:
    """`--set 'data.dir=/data/run #2'` read the folder /data/run without a word: a value is read as YAML, where ` #`
    starts a comment (eighteenth hostile pass). Refused naming it; quoted, or with no space before `#`, it is text."""
    from sate.decode.options import parse_decode

    path = tmp_path / "asr.yaml"
    path.write_text("task: asr\ndata: {dir: /d}\n")
    if option == "--decode":
        with pytest.raises(SateError, match=r"^--decode 'lenpen=1.2 #x': '#x' reads as a YAML comment, which the "
                                            r"value would lose; quote the value to keep it"):
            parse_decode(["lenpen=1.2 #x"])
        assert parse_decode(["lenpen=1.2"]) == {"lenpen": 1.2}
        return
    assert main(["config", "--config", str(path), "--set", "data.dir=/data/run #2", "--get", "data.dir"]) == 2
    assert "--set 'data.dir=/data/run #2': '#2' reads as a YAML comment" in capsys.readouterr().err
    for given, value in (("'/data/run #2'", "/data/run #2"), ("/data/run#2", "/data/run#2")):
        assert main(["config", "--config", str(path), "--set", f"data.dir={given}", "--get", "data.dir"]) == 0
        assert load_yaml_text(capsys.readouterr().out) == value


@pytest.mark.parametrize("option", ["--set", "--decode"])
def test_a_value_given_with_a_yaml_anchor_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     option: str) -> None:
    """`--set 'data.dir=&run x'` read the folder x and `&run` alone null, and `--decode 'beam=&b 2'` beam 2, without a
    word: `&NAME` is a YAML anchor (nineteenth hostile pass). Refused naming it; quoted, or inside a word, it is text;
    an anchor its value uses is YAML's own."""
    from sate.decode.options import parse_decode

    path = tmp_path / "asr.yaml"
    path.write_text("task: asr\ndata: {dir: /d}\n")
    if option == "--decode":
        with pytest.raises(SateError, match=r"^--decode 'beam=&b 2': '&b' reads as a YAML anchor, which the value "
                                            r"would lose; quote the value to keep it"):
            parse_decode(["beam=&b 2"])
        return
    for given in ("&run x", "&run"):
        assert main(["config", "--config", str(path), "--set", f"data.dir={given}", "--get", "data.dir"]) == 2
        assert f"--set 'data.dir={given}': '&run' reads as a YAML anchor" in capsys.readouterr().err
    for given, value in (("'&run x'", "&run x"), ("run&x", "run&x")):
        assert main(["config", "--config", str(path), "--set", f"data.dir={given}", "--get", "data.dir"]) == 0
        assert load_yaml_text(capsys.readouterr().out) == value
    assert main(["config", "--config", str(path), "--set", "trainer={max_epochs: &n 3, max_steps: *n}", "--get",
                 "trainer.max_steps"]) == 0
    assert capsys.readouterr().out == "3\n"


def test_a_value_given_with_yamls_non_specific_tag_is_refused(tmp_path: Path,
                                                             capsys: pytest.CaptureFixture[str]) -> None:
    """`--set 'data.dir=! x'` read the folder x: `!` is YAML's non-specific tag, which changes nothing; and `&` alone
    was "found '\\x00'", a NUL the user never typed (twentieth hostile pass). `!!str x` is YAML's own."""
    path = tmp_path / "asr.yaml"
    path.write_text("task: asr\ndata: {dir: /d}\n")
    for given, says in (("! x", "'!' reads as a YAML tag, which the value would lose; quote the value to keep it"),
                        ("!<!> x", "'!<!>' reads as a YAML tag"),
                        ("&", "the value is not valid YAML (expected alphabetic or numeric character, but found the "
                              "end of the text)")):
        assert main(["config", "--config", str(path), "--set", f"data.dir={given}", "--get", "data.dir"]) == 2
        assert f"--set 'data.dir={given}': {says}" in capsys.readouterr().err
    for given, value in (("'! x'", "! x"), ("!!str x", "x"), ("a!b", "a!b")):
        assert main(["config", "--config", str(path), "--set", f"data.dir={given}", "--get", "data.dir"]) == 0
        assert load_yaml_text(capsys.readouterr().out) == value


def test_the_listing_keeps_each_value_on_its_line(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`sate config` folded a long value with spaces over lines (PyYAML's width of 80), at its key's indent: the
    listing saved as a config was invalid YAML, and `--get` told a script a value with line breaks; a value with a
    line break in it spanned lines too; a no-break space at either end of a value was stripped, so `--get` named
    another folder (eighteenth hostile pass)."""
    path, listing = tmp_path / "asr.yaml", tmp_path / "listed.yaml"
    for folder in ("/d/" + " ".join(["word"] * 30), "/d/a\nb", "\xa0/d\xa0"):
        path.write_text(yaml.safe_dump({"task": "asr", "data": {"dir": folder}}))
        assert main(["config", "--config", str(path)]) == 0
        listing.write_text(capsys.readouterr().out)
        assert main(["config", "--config", str(listing), "--get", "data.dir"]) == 0
        out = capsys.readouterr().out
        assert out.count("\n") == 1 and load_yaml_text(out) == folder


@pytest.mark.parametrize(("section", "says"), [
    ("{foo: {path: x.pt}}", "init: unknown component(s) foo for a asr model; known: acoustic, ctc, decoder, model"),
    ("{acoustic: [x.pt]}", "init.acoustic: must be a mapping with a 'path', got ['x.pt']"),
    ("{acoustic: {path: x.pt, prefx: a}}", "init.acoustic: unknown key(s) prefx; known: path, prefix, config"),
])
def test_an_init_section_train_refuses_is_refused_by_config(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                             section: str, says: str) -> None:
    """`sate config` printed an `init:` section that `sate train` refused once the model was built (tenth hostile
    pass): what can be told without the model is checked by both, naming the file."""
    path = tmp_path / "asr.yaml"
    path.write_text(f"task: asr\ninit: {section}\n")
    assert main(["config", "--config", str(path)]) == 2
    assert capsys.readouterr().err.strip() == f"sate config: error: {path}: {says}"


@pytest.mark.parametrize(("value", "says"), [
    ("'0.3'", "model.loss.kd.asr_weight must be a finite number, got '0.3'"),
    ("null", "model.loss.kd.asr_weight must be a finite number, got null"),
    ("[1]", "model.loss.kd.asr_weight must be a finite number, got [1]"),
    (".nan", "model.loss.kd.asr_weight must be a finite number, got nan")])
def test_init_from_with_a_distillation_weight_of_the_wrong_kind_names_the_file(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], value: str, says: str) -> None:
    """`--init-from` fills the teachers of the sides whose weight is above 0, compared raw: a weight that was text
    or null was a TypeError traceback, `kd: null` an AttributeError, and NaN a line naming no file (twelfth hostile
    pass)."""
    path = tmp_path / "st.yaml"
    path.write_text(f"task: st\nmodel: {{loss: {{kd: {{asr_weight: {value}}}}}}}\n")
    argv = ["config", "--config", str(path), "--init-from", "asr=a.pt", "--init-from", "mt=m.pt"]
    assert main(argv) == 2
    assert capsys.readouterr().err.strip() == f"sate config: error: {path}: {says}"
    for section in ("kd: []", "kd: 3"):  # `kd: null` is the section's defaults, as its absence (28th pass)
        path.write_text(f"task: st\nmodel: {{loss: {{{section}}}}}\n")
        assert main(argv) == 2
        assert capsys.readouterr().err.strip() == (f"sate config: error: {path}: model.loss.kd must be a mapping, "
                                                   f"got {section.split()[1]}")


def test_a_mapping_given_to_set_changes_the_keys_it_gives(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--set 'trainer={max_epochs: 2}'` replaced the whole section: the file's max_steps, max_minutes and monitor
    went back to their defaults (a budget of 1,500 updates became none) without a word (twelfth hostile pass)."""
    path = tmp_path / "mt.yaml"
    path.write_text("task: mt\ntrainer: {max_steps: 1500, max_minutes: 180, monitor: valid/bleu, monitor_mode: max}\n"
                    "model: {loss: {label_smoothing: 0.2}}\n")
    assert main(["config", "--config", str(path), "--set", "trainer={max_epochs: 2, patience: 3}",
                 "--set", "model={loss: {}}"]) == 0
    printed = yaml.safe_load(capsys.readouterr().out)
    kept = ("max_epochs", "patience", "max_steps", "max_minutes", "monitor")
    assert {key: printed["trainer"][key] for key in kept} == {
        "max_epochs": 2, "patience": 3, "max_steps": 1500, "max_minutes": 180.0, "monitor": "valid/bleu"}
    assert printed["model"]["loss"]["label_smoothing"] == 0.2
    assert main(["config", "--config", str(path), "--set", "trainer={max_epoch: 2}"]) == 2  # a typo still named
    assert "unknown config key 'trainer.max_epoch'" in capsys.readouterr().err
    # a section replaced whole: null first, then the mapping (a loss with nothing but its defaults again)
    assert main(["config", "--config", str(path), "--set", "model.loss=null",
                 "--set", "model.loss={normalize: token}"]) == 0
    loss = yaml.safe_load(capsys.readouterr().out)["model"]["loss"]
    assert loss["normalize"] == "token" and loss["label_smoothing"] != 0.2


def test_a_section_set_to_null_then_takes_dotted_keys(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--set trainer=null --set trainer.max_epochs=2` (the section replaced whole, docs/training.md, then one key
    set) was "'trainer' is a value, not a section", as was `--set trainer.max_steps=5` on a file's bare `trainer:`
    (twenty-eighth hostile pass). A null section now takes keys as an absent one does."""
    path = tmp_path / "mt.yaml"
    path.write_text("task: mt\ntrainer: {max_steps: 1500, patience: 3}\n")
    assert main(["config", "--config", str(path), "--set", "trainer=null", "--set", "trainer.max_epochs=2"]) == 0
    trainer = yaml.safe_load(capsys.readouterr().out)["trainer"]
    assert (trainer["max_epochs"], trainer["max_steps"], trainer["patience"]) == (2, -1, 0)  # the file's are gone
    path.write_text("task: mt\ntrainer:\n  # max_steps: 1500\n")
    assert main(["config", "--config", str(path), "--set", "trainer.max_steps=5", "--get", "trainer.max_steps"]) == 0
    assert capsys.readouterr().out == "5\n"
    assert main(["config", "--config", str(path), "--set", "trainer.max_minutes.x=5"]) == 2  # a null value, not
    assert "trainer.max_minutes must be a finite number or null" in capsys.readouterr().err  # a section: still named


def test_a_set_on_an_aliased_section_changes_that_key_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A section written once and used again by a YAML alias (`decoder: *sec`) is one object: `--set
    model.textual.layers=3` set model.decoder.layers to 3 too, exit 0 (twenty-eighth hostile pass, review). The
    key set changes alone now, and the alias's other keys stay shared as written."""
    path = tmp_path / "st.yaml"
    path.write_text("task: st\nmodel:\n  textual: &sec {layers: 2, heads: 4, ffn: 1024}\n  decoder: *sec\n")
    assert main(["config", "--config", str(path), "--set", "model.textual.layers=3",
                 "--set", "model.decoder.heads=8", "--get", "model"]) == 0
    model = yaml.safe_load(capsys.readouterr().out)
    assert (model["textual"]["layers"], model["decoder"]["layers"]) == (3, 2)
    assert (model["textual"]["heads"], model["decoder"]["heads"], model["decoder"]["ffn"]) == (4, 8, 1024)


def test_a_section_set_to_null_alone_is_its_defaults(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--set trainer=null` alone, and a file's `trainer:` with every key under it commented out, were "trainer must
    be a mapping, got null", taken only when a `--set trainer.KEY` followed (twenty-eighth hostile pass, review);
    docs/training.md says the form replaces the section with its defaults. So it does now, `model` and `init` and
    the model's own sections too."""
    path = tmp_path / "asr.yaml"
    path.write_text("task: asr\ntrainer:\n  # max_steps: 1500\nmodel:\ninit:\n")
    assert main(["config", "--config", str(path), "--get", "trainer.max_steps"]) == 0
    assert capsys.readouterr().out == "-1\n"
    path.write_text("task: asr\ntrainer: {max_steps: 1500, patience: 3}\nmodel: {d_model: 128, acoustic: {layers: 2}}\n"
                    "init: {acoustic: {path: a.pt}}\n")
    assert main(["config", "--config", str(path), "--set", "trainer=null", "--set", "model.acoustic=null",
                 "--set", "init=null"]) == 0
    out = yaml.safe_load(capsys.readouterr().out)
    assert (out["trainer"]["max_steps"], out["trainer"]["patience"], out["init"]) == (-1, 0, {})
    assert (out["model"]["d_model"], out["model"]["acoustic"]["layers"]) == (128, 12)
    assert main(["config", "--config", str(path), "--set", "model=null", "--get", "model.d_model"]) == 0
    assert capsys.readouterr().out == "256\n"
    assert main(["config", "--config", str(path), "--set", "trainer.max_minutes=null"]) == 0  # a null value is one
    capsys.readouterr()
    assert main(["config", "--config", str(path), "--set", "trainer.max_steps=null"]) == 2
    assert "trainer.max_steps must be an integer, got null" in capsys.readouterr().err


@pytest.mark.slow
def test_an_init_section_of_many_or_long_unknown_names_is_a_short_line(tmp_path: Path,
                                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """An `init:` refusal listed every unknown component or key whole: a key of 3 MB, or 60,000 keys, was a line of
    megabytes (twelfth hostile pass). The first few are named, cut, with how many more."""
    path = tmp_path / "asr.yaml"
    for section, says in ((f"\n  ? {'c' * 100_000}\n  : {{path: x.pt}}",  # a key beyond 1,024: written explicit
                           f"init: unknown component(s) '{'c' * 27}...{'c' * 28}' for a asr model; known: "),
                          ("{acoustic: {path: x.pt, " + ", ".join(f"k{i}: 1" for i in range(5000)) + "}}",
                           "init.acoustic: unknown key(s) k0, k1, k10 and 4,997 more; known: path, prefix, config")):
        path.write_text(f"task: asr\ninit: {section}\n")
        assert main(["config", "--config", str(path)]) == 2
        err = capsys.readouterr().err.strip()
        assert err.startswith(f"sate config: error: {path}: {says}") and len(err) < 300, err[:300]


def test_a_model_or_a_recording_given_as_a_config_is_named_for_what_it_is(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """`sate config --config EXP/checkpoints/last.ckpt` said "not UTF-8 text (byte 64)" (twentieth hostile pass);
    a file of a kind sate knows by its first bytes is named as that kind."""
    import torch  # a checkpoint as `sate train` saves one: torch's zip format

    ckpt, wav = tmp_path / "last.ckpt", tmp_path / "talk.wav"
    torch.save({"state_dict": {}}, ckpt)
    wav.write_bytes(b"RIFF\x24\x00\x00\x00WAVEfmt ")
    for path, what in ((ckpt, "a zip archive (a model file or checkpoint)"), (wav, "a WAV audio file")):
        assert main(["config", "--config", str(path)]) == 2
        assert capsys.readouterr().err == f"sate config: error: {path}: {what}, not YAML text\n"


def test_a_sentencepiece_model_a_feature_shard_or_a_compressed_file_given_as_a_config_is_named(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Twenty-first hostile pass: the files beside a config that sate knows but the last pass's list did not (a
    pack's spm_src.model, a shard of DATA/fbank, a gzipped config) were "not UTF-8 text (byte 25)"."""
    import gzip

    files = {"spm_src.model": (b"\n\x0e\n\x05<unk>\x15\x00\x00\x00\x00\x18\x02\n\n\n\x03\xe2\x96\x81",
                               "a SentencePiece model"),
             "00000.ark": (b"ted_2_0 \x00BFM \x04\x81\x00\x00\x00\x04P\x00\x00\x00",
                           "a Kaldi feature archive (a stored feature shard, .ark)"),
             "config.yaml.gz": (gzip.compress(b"task: st\n"), "gzip-compressed data")}
    for name, (data, what) in files.items():
        (tmp_path / name).write_bytes(data)
        assert main(["config", "--config", str(tmp_path / name)]) == 2
        assert capsys.readouterr().err == f"sate config: error: {tmp_path / name}: {what}, not YAML text\n"


@pytest.mark.parametrize(("task", "sets", "better"), [
    ("mt", ["trainer.monitor=valid/bleu"], "high"),  # the default monitor_mode min kept
    ("asr", ["trainer.monitor=valid/wer", "trainer.monitor_mode=max"], "low"),
    ("st", ["trainer.monitor=valid/acc"], "high"),
    ("st", ["trainer.monitor=valid/loss_ctc", "trainer.monitor_mode=max"], "low"),
])
def test_a_monitor_mode_against_the_way_its_metric_improves_is_refused(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], task: str, sets: list[str], better: str) -> None:
    """Twenty-third hostile pass: `--set trainer.monitor=valid/bleu` alone kept the default monitor_mode min: the
    run kept its ten worst checkpoints by BLEU (deleting the best), stopped early while BLEU rose, and `sate average
    --best` averaged the worst, exit 0. Refused by `sate config` and `sate train` before any work; with the mode
    that goes with it, taken."""
    config = tmp_path / f"{task}.yaml"
    config.write_text(f"task: {task}\ndata: {{dir: {tmp_path}}}\n")
    argv = ["config", "--config", str(config), *(word for item in sets for word in ("--set", item))]
    assert main(argv) == 2
    mode = {"high": "min", "low": "max"}[better]
    metric = sets[0].split("=")[1]
    assert capsys.readouterr().err == (f"sate config: error: {config} with --set {sets[-1]!r}: trainer.monitor_mode "
                                       f"is {mode} for {metric!r}, which is better {better}: the best checkpoints "
                                       f"would be the worst; give {'max' if mode == 'min' else 'min'}\n")
    right = "max" if better == "high" else "min"
    assert main([*argv, "--set", f"trainer.monitor_mode={right}"]) == 0
    assert f"monitor_mode: {right}" in capsys.readouterr().out


@pytest.mark.parametrize(("file", "given", "says"), [
    ("task: asr\n", "data.features=waveform",
     "data.features is waveform but model.acoustic.type conformer reads fbank"),
    ("task: st\n", "data.frozen_cache=true", "data.frozen_cache needs model.acoustic.type whisper with "
     "model.acoustic.freeze all or N (got type conformer, freeze none): only a frozen part can be computed once"),
    ("task: asr\nmodel: {acoustic: {type: whisper}}\ndata: {features: waveform, cmvn: none}\n"
     "specaug: {enabled: false}\n", "data.cmvn=global",
     "data.cmvn global normalises fbank; with data.features waveform set it to none"),
])
def test_features_against_the_acoustic_type_are_refused_by_config_naming_the_set(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], file: str, given: str, says: str) -> None:
    """`sate config` passed features the acoustic encoder does not read (a Conformer on waveforms, a frozen cache
    of nothing frozen), and `sate train` refused them with a line naming neither the file nor the --set (25th
    hostile pass): the check is of the config alone, made by both with the others."""
    config = tmp_path / "c.yaml"
    config.write_text(file)
    assert main(["config", "--config", str(config), "--set", given]) == 2
    assert capsys.readouterr().err.startswith(f"sate config: error: {config} with --set {given!r}: {says}")
    assert main(["config", "--config", str(config)]) == 0  # the file alone is taken


@pytest.mark.parametrize(("model", "component", "why"), [
    ("{task: asr}", "decoder", "a CTC-only ASR model: model.decoder.layers is 0"),
    ("{task: st, model: {adaptor: {type: linear}}}", "src_embed", "model.adaptor.type is linear"),
    ("{task: st, model: {adaptor: {embedding: decoder}}}", "src_embed",
     "model.adaptor.embedding is decoder: the soft branch uses the decoder's embedding"),
    ("{task: st, model: {adaptor: {type: none}, textual: {layers: 0}}}", "textual", "model.textual.layers is 0"),
    ("{task: st, model: {adaptor: {type: none}, textual: {layers: 0}}}", "adaptor", "model.adaptor.type is none"),
])
def test_an_init_component_the_model_lacks_is_refused_by_config(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                 model: str, component: str, why: str) -> None:
    """`init.src_embed` over an adaptor of type linear (or a decoder of a CTC-only ASR model) passed `sate config`,
    and `sate train` refused it once the model was built, naming no file (25th hostile pass): told from the config,
    by both, naming the file and the model's keys as the file spells them."""
    path = tmp_path / "c.yaml"
    path.write_text(yaml.safe_dump({**yaml.safe_load(model), "init": {component: {"path": "x.pt"}}}))
    assert main(["config", "--config", str(path)]) == 2
    task = yaml.safe_load(model)["task"]
    assert capsys.readouterr().err == (f"sate config: error: {path}: init.{component}: this {task} model has no "
                                       f"{component} ({why})\n")


@pytest.mark.parametrize(("file", "says"), [
    ("task: st\ntrainer: {precision: 16}\n", "trainer.precision must be one of auto, 32-true, bf16-mixed, 16-mixed, "
                                             "bf16-true, 16-true, 64-true, got 16"),
    ("task: st\nmodel: {adaptor: {type: 3}}\n", "model.adaptor.type must be one of none, linear, soft, league, gated, "
                                                "inter, shrink, got 3"),
    ("task: 1\n", "task must be one of asr, mt, st, got 1"),
])
def test_a_key_of_fixed_choices_given_another_type_is_told_the_choices(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], file: str, says: str) -> None:
    """`trainer.precision: 16` (Lightning's own spelling) was "must be a string, got 16"; that advice followed,
    `'16'`, was refused again for its choices (25th hostile pass). The choices are said at once."""
    path = tmp_path / "c.yaml"
    path.write_text(file)
    assert main(["config", "--config", str(path)]) == 2
    assert capsys.readouterr().err == f"sate config: error: {path}: {says}\n"


def test_a_value_that_looks_like_a_date_is_the_text_it_looks_like(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """`data.train: 2024-05-01` (a split named by its date) was read as a date by YAML 1.1 and refused as "must be a
    string or a list, got datetime.date(2024, 5, 1)", Python's words (25th hostile pass). No key takes a date: it is
    the text, as YAML 1.2 reads it, in a file and in --set; the listing quotes it, for readers of YAML 1.1."""
    path = tmp_path / "asr.yaml"
    path.write_text("task: asr\ndata: {train: 2024-05-01, dir: 2024-05-02 10:00:00}\n")
    assert main(["config", "--config", str(path), "--set", "data.train=[train, 2024-05-01]"]) == 0
    listing = tmp_path / "listing.yaml"
    listing.write_text(capsys.readouterr().out)
    assert yaml.safe_load(listing.read_text())["data"] == {**yaml.safe_load(listing.read_text())["data"],
                                                           "train": ["train", "2024-05-01"],
                                                           "dir": "2024-05-02 10:00:00"}
    assert main(["config", "--config", str(listing), "--get", "data.dir"]) == 0
    assert capsys.readouterr().out == "'2024-05-02 10:00:00'\n"
    path.write_text("task: asr\nseed: 2024-05-01\n")
    assert main(["config", "--config", str(path)]) == 2
    assert capsys.readouterr().err == f"sate config: error: {path}: seed must be an integer, got '2024-05-01'\n"


def test_get_of_a_key_not_there_advises_a_command_that_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--get` of a key not in the config named `sate config --config my runs/st.yaml` to list them, the path
    unquoted: copied, it named two files (25th hostile pass). Followed as given, it lists the keys."""
    path = tmp_path / "my runs" / "st.yaml"
    path.parent.mkdir()
    path.write_text("task: st\n")
    assert main(["config", "--config", str(path), "--get", "trainer.max_step"]) == 2
    advice = re.search(r"\(`sate (config .*)` lists them\)$", capsys.readouterr().err.strip())
    assert advice is not None
    assert main(shlex.split(advice.group(1))) == 0
    assert "  max_steps: -1" in capsys.readouterr().out


def test_get_advice_for_a_piped_config_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--config <(...) --get KEY` of a key not there advised `sate config --config /dev/fd/63`, a pipe gone once
    read: followed, "config file not found" (25th hostile pass's leftovers). The task's keys are listed instead."""
    fifo, writer = piped_config(tmp_path, b"task: mt\n")
    assert main(["config", "--config", str(fifo), "--get", "trainer.max_step"]) == 2
    writer.join(10)
    advice = re.search(r"\(`sate (config .*)` lists its task's keys\)$", capsys.readouterr().err.strip())
    assert advice is not None and advice.group(1) == "config --task mt"
    assert main(shlex.split(advice.group(1))) == 0
    assert "  max_steps: -1" in capsys.readouterr().out


def test_get_advice_for_a_name_starting_with_a_dash_runs(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                         monkeypatch: pytest.MonkeyPatch) -> None:
    """`--config=-x.yaml --get KEY`: the advice `sate config --config -x.yaml` was refused by argparse as an option
    given for the path (25th hostile pass, review); the name is given as ./-x.yaml."""
    monkeypatch.chdir(tmp_path)
    Path("-x.yaml").write_text("task: asr\n")
    assert main(["config", "--config=-x.yaml", "--get", "nokey"]) == 2
    advice = re.search(r"\(`sate (config .*)` lists them\)$", capsys.readouterr().err.strip())
    assert advice is not None and advice.group(1) == "config --config ./-x.yaml"
    assert main(shlex.split(advice.group(1))) == 0


def test_the_num_workers_bound_says_how_it_is_reached(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """On a 2-CPU machine `data.num_workers` "must be from 0 to 16 (four processes per CPU of this machine's 2)":
    four times two is eight, and the floor of 16 went unsaid (twenty-eighth hostile pass)."""
    from sate.numbers import max_jobs

    path = tmp_path / "mt.yaml"
    path.write_text("task: mt\n")
    assert main(["config", "--config", str(path), "--set", f"data.num_workers={max_jobs() + 1}"]) == 2
    assert (f"must be from 0 to {max_jobs()} (four processes per CPU of this machine's {os.cpu_count() or 1}, "
            "at least 16, as --jobs)") in capsys.readouterr().err


def test_data_features_help_names_every_acoustic_type_that_reads_waveforms(capsys: pytest.CaptureFixture[str]) -> None:
    """`sate config`'s line for data.features said waveform is "for acoustic.type hf_*", and Whisper reads waveforms
    too (conf/*/asr_whisper.yaml set it; twenty-eighth hostile pass)."""
    assert main(["config", "--task", "asr"]) == 0
    line = next(line for line in capsys.readouterr().out.splitlines() if line.lstrip().startswith("features:"))
    assert "hf_*" in line and "whisper" in line.split("waveform", 1)[1]


def test_valid_wer_of_a_model_whose_ctc_no_loss_trains_is_noted(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """valid/wer is the CTC head's greedy WER: with model.loss.ctc_weight 0 no loss trains that head, and a run that
    monitored it chose its best checkpoints (and its early stop) by an untrained head's WER (twenty-eighth hostile
    pass). `sate train` refuses it for a new run (tests/train/test_schema_wer_monitor.py); `sate config` notes it, as
    it shows the snapshot of a run begun so. Another CTC weight, or another monitor, has no note. (A hybrid ASR
    model with ctc_weight 0 is refused whatever it monitors: tests/train/test_schema_wer_monitor.py.)"""
    path = tmp_path / "st.yaml"
    path.write_text("task: st\nmodel: {loss: {ctc_weight: 0}}\n")
    assert main(["config", "--config", str(path), "--set", "trainer.monitor=valid/wer"]) == 0
    assert capsys.readouterr().err == (
        "note: trainer.monitor valid/wer is the CTC head's greedy WER, and with model.loss.ctc_weight 0 no loss trains "
        "that head towards the transcripts: the best checkpoints and the early stop would follow a WER the training "
        "does not lower; `sate train` refuses it for a new run (monitor valid/loss, or valid/acc with "
        "trainer.monitor_mode max) and resumes a run that began so\n")
    # the advice followed, each way (valid/acc alone was refused for the mode min of valid/wer: review28c)
    for other in (["trainer.monitor=valid/acc", "trainer.monitor_mode=max"], ["trainer.monitor=valid/loss"],
                  ["trainer.monitor=valid/wer", "model.loss.ctc_weight=0.1"]):
        assert main(["config", "--config", str(path), *(f"--set={item}" for item in other)]) == 0
        assert capsys.readouterr().err == ""


@pytest.mark.slow
def test_a_hub_given_beside_its_path_must_say_what_the_folder_says(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], marian_dir: Path) -> None:
    """`sate config` prints a hub section's sizes (`textual.hub`, `acoustic.hub`); a config saved from it and then
    edited, or pointed at another model's folder, built the model of the hub it named and failed only when `sate
    train` loaded the weights, naming weights, not the key (twenty-eighth hostile pass). A training config's hub
    must now say what its path's folder says; a path not there yet is left to `sate train`, and a model file's hub
    (its weights are its own) is not compared."""
    path = tmp_path / "mt.yaml"
    path.write_text(f"task: mt\nmodel: {{textual: {{type: hf_marian, path: '{marian_dir}'}}, "
                    "decoder: {type: hf_marian}}\n")
    assert main(["config", "--config", str(path)]) == 0
    full = tmp_path / "full.yaml"
    full.write_text(capsys.readouterr().out)
    assert main(["config", "--config", str(full)]) == 0  # as printed: the folder's own sizes
    capsys.readouterr()
    saved = yaml.safe_load(full.read_text())
    layers = saved["model"]["textual"]["hub"]["encoder_layers"]
    saved["model"]["textual"]["hub"]["encoder_layers"] = layers + 1
    full.write_text(yaml.safe_dump(saved))
    assert main(["config", "--config", str(full)]) == 2
    assert capsys.readouterr().err.strip().endswith(
        f"model.textual.hub.encoder_layers is {layers + 1} but model.textual.path ({marian_dir}) says {layers}; "
        "leave model.textual.hub out (it is filled from model.textual.path)")
    assert main(["config", "--config", str(full), "--set", f"model.textual.path={tmp_path / 'not_yet'}",
                 "--set", f"model.textual.layers={layers + 1}"]) == 0, capsys.readouterr().err
    assert "says" not in capsys.readouterr().err  # a folder not there is not compared
    from sate.models.config import resolve_config

    stored = saved["model"]  # a model file's dict, whose weights are its own
    stored["textual"]["layers"] = layers + 1
    assert resolve_config("mt", stored).textual.hub["encoder_layers"] == layers + 1  # type: ignore[index]
