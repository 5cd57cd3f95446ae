"""A resume on other vocabularies or other CMVN statistics than the run began with is refused, naming the checkpoint
and the token list or cmvn.json."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest
import torch

from sate.cli import main
from sate.data.cmvn_record import cmvn_difference, cmvn_record
from sate.data.vocab import Vocabulary
from sate.errors import SateError
from tests.train.conftest import Stopped, stop_at

MakeConfig = Callable[..., Path]


def fake_run(exp: Path, src: list[str], tgt: list[str], cmvn: dict[str, list[float]] | None = None,
             train_config: dict | None = None) -> Path:
    """A checkpoint as far as resuming reads it before building the model: the header with the token lists (and the
    CMVN statistics and the run's config, as `sate train` records them)."""
    (exp / "checkpoints").mkdir(parents=True)
    path = exp / "checkpoints" / "last.ckpt"
    header = {"run_id": "0123456789ab", "src_tokens": src, "tgt_tokens": tgt, **({"cmvn": cmvn} if cmvn else {}),
              **({"train_config": train_config} if train_config else {})}
    torch.save({"sate": header, "state_dict": {}, "global_step": 7, "epoch": 1}, path)
    return path


@pytest.mark.parametrize("side", ["src", "tgt"])
def test_a_resume_on_a_reordered_vocabulary_is_refused(tmp_path: Path, prepared_data: Path, make_config: MakeConfig,
                                                       side: str, capsys: pytest.CaptureFixture[str]) -> None:
    tokens = {s: Vocabulary.load(prepared_data, s).tokens for s in ("src", "tgt")}
    other = dict(tokens)
    other[side] = tokens[side][:4] + [tokens[side][5], tokens[side][4]] + tokens[side][6:]  # same size, same set
    ckpt = fake_run(tmp_path / "exp", other["src"], other["tgt"])
    config = make_config(tmp_path, "asr" if side == "src" else "st", prepared_data)
    assert main(["train", "--config", str(config), "--exp", str(tmp_path / "exp")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert f"{ckpt}: trained on another {side} vocabulary than {prepared_data} holds now" in err
    assert f"first difference at line 5 of tokens_{side}.txt" in err
    assert not (tmp_path / "exp" / "config.yaml").exists()  # refused before the run wrote anything


def test_a_resume_on_other_cmvn_statistics_is_refused(tmp_path: Path, prepared_data: Path, make_config: MakeConfig,
                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """`sate features` rewrites cmvn.json when the train split changes: the resumed model would read differently
    normalised features. The statistics the run recorded differ from the data directory's in one std value."""
    tokens = {s: Vocabulary.load(prepared_data, s).tokens for s in ("src", "tgt")}
    record = cmvn_record(prepared_data / "cmvn.json")
    assert cmvn_difference(record, prepared_data / "cmvn.json") is None
    other = {"mean": record["mean"], "std": [*record["std"][:41], record["std"][41] * 1.01, *record["std"][42:]]}
    ckpt = fake_run(tmp_path / "exp", tokens["src"], tokens["tgt"], other)
    config = make_config(tmp_path, "asr", prepared_data)
    assert main(["train", "--config", str(config), "--exp", str(tmp_path / "exp")]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1, err
    assert err.startswith(f"sate train: error: {prepared_data / 'cmvn.json'}: not the CMVN statistics {ckpt} was "
                          "trained with (std[41] "), err
    assert not (tmp_path / "exp" / "config.yaml").exists()


def test_a_changed_task_is_named_first_among_the_changes(tmp_path: Path, prepared_data: Path,
                                                         make_config: MakeConfig,
                                                         capsys: pytest.CaptureFixture[str]) -> None:
    """`task` asr -> st changes every model key: the line listed six of those and hid the one the user changed."""
    from sate.train.trainer import load_training_config

    config = make_config(tmp_path, "asr", prepared_data)
    tokens = {s: Vocabulary.load(prepared_data, s).tokens for s in ("src", "tgt")}
    fake_run(tmp_path / "exp", tokens["src"], tokens["tgt"],
             train_config=load_training_config(config, []).to_dict())
    assert main(["train", "--config", str(config), "--exp", str(tmp_path / "exp"), "--set", "task=st"]) == 2
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "cannot resume with a changed config: task 'asr' -> 'st', model." in err, err


def test_a_model_value_out_of_range_on_a_resume_is_named_as_on_a_fresh_start(
        tmp_path: Path, prepared_data: Path, make_config: MakeConfig, capsys: pytest.CaptureFixture[str]) -> None:
    """The new model section did not resolve, so its keys compared as written: `model.acoustic.layers=0` was "a
    changed config" of keys that came out as None, the bad value not among the six named."""
    from sate.train.trainer import load_training_config

    config = make_config(tmp_path, "asr", prepared_data)
    tokens = {s: Vocabulary.load(prepared_data, s).tokens for s in ("src", "tgt")}
    fake_run(tmp_path / "exp", tokens["src"], tokens["tgt"],
             train_config=load_training_config(config, []).to_dict())
    argv = ["train", "--config", str(config), "--exp", str(tmp_path / "exp"), "--set", "model.acoustic.layers=0"]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"sate train: error: {config} with --set 'model.acoustic.layers=0': model.acoustic.layers must be " \
        "at least 1 and up to 10,000, got 0", err


@pytest.mark.slow
def test_a_resume_with_another_teacher_at_the_same_path_is_refused(tmp_path: Path, prepared_data: Path,
                                                                   make_config: MakeConfig,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """A SATE run distilling from its ASR teacher, resumed after the teacher's file was trained or averaged again at
    the same path, distilled from another model without a word: the teacher is read from its file at every start
    and kept in no checkpoint (eleventh hostile pass). Checkpoints record a fingerprint of each teacher's weights."""
    from sate.models import build_model
    from sate.models.model_file import save_model_file
    from sate.models.tiny import tiny_config
    from sate.train.resume import ResumePoint, check_teachers, teacher_prints
    from sate.train.setup import build_for_training
    from sate.train.trainer import load_training_config

    tokens = {s: Vocabulary.load(prepared_data, s).tokens for s in ("src", "tgt")}
    teacher = tmp_path / "asr.pt"
    torch.manual_seed(0)
    save_model_file(teacher, build_model("asr", tiny_config("asr"), len(tokens["src"]), len(tokens["tgt"])),
                    tokens["src"], tokens["tgt"], cmvn=cmvn_record(prepared_data / "cmvn.json"))
    kd = {"asr_weight": 0.3, "asr_teacher": str(teacher)}
    config = make_config(tmp_path, "st", prepared_data, model={"loss": {"kd": kd}})
    model = build_for_training(load_training_config(config, []), tokens["src"], tokens["tgt"], initialize=False,
                               cmvn=prepared_data / "cmvn.json")
    prints = teacher_prints(model)
    assert list(prints) == ["asr"] and prints == teacher_prints(model)
    check_teachers(ResumePoint(tmp_path / "last.ckpt", {"sate": {"teachers": prints}}), model, prints)
    ckpt = fake_run(tmp_path / "exp", tokens["src"], tokens["tgt"])
    saved = torch.load(ckpt, weights_only=True)
    saved["sate"]["teachers"] = {"asr": "0" * 40}  # the teacher the run began with: another model
    torch.save(saved, ckpt)
    assert main(["train", "--config", str(config), "--exp", str(tmp_path / "exp")]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (f"sate train: error: {ckpt}: the run began with another ASR teacher than loss.kd.asr_teacher "
                   f"{teacher} holds now (its weights differ: was it trained or averaged again?); resume with the "
                   "teacher the run began with, or train into a new --exp"), err
    assert not (tmp_path / "exp" / "config.yaml").exists()


@pytest.mark.slow
def test_a_resume_inside_an_epoch_over_a_changed_train_split_is_refused(
        tmp_path: Path, prepared_data: Path, make_config: MakeConfig, capsys: pytest.CaptureFixture[str]) -> None:
    """The loader's saved position counts batches of the split as it was: with a row removed since, the rest of the
    epoch would be other batches (some items twice, some never) without a word (twelfth hostile pass). At an epoch's
    end nothing refers to the old batches, so a changed split is let be there."""
    import shutil

    from sate.train.trainer import load_training_config, train

    data = tmp_path / "data"
    shutil.copytree(prepared_data, data)
    settings = ["batch.per_device=60", "batch.global=60", "trainer.checkpoint_every_minutes=1e-6"]
    config = make_config(tmp_path, "mt", data)
    exp = tmp_path / "exp"
    with pytest.raises(Stopped):
        train(load_training_config(config, settings), exp, callbacks=[stop_at(2)])
    ckpt = exp / "checkpoints" / "last.ckpt"
    assert torch.load(ckpt, weights_only=True)["sate"]["mid_epoch"]
    manifest = data / "train.jsonl"
    rows = manifest.read_text().splitlines(keepends=True)
    manifest.write_text("".join(rows[:-1]))
    capsys.readouterr()
    argv = ["train", "--config", str(config), "--exp", str(exp), *[a for s in settings for a in ("--set", s)]]
    assert main(argv) == 2
    err = capsys.readouterr().err.strip().splitlines()[-1]  # after Lightning's INFO lines
    assert err == (f"sate train: error: {ckpt}: cannot resume: it stopped inside epoch 0 of a train split of "
                   f"{len(rows)} items, which holds {len(rows) - 1} now: the batches left of that epoch are other "
                   f"ones. Restore the split as it was when the run stopped, or train into a new --exp"), err
    before = ckpt.read_bytes()
    manifest.write_text("".join(rows))  # as it was: the epoch goes on where it stopped
    assert main(argv) == 0
    assert ckpt.read_bytes() != before
    manifest.write_text("".join(rows[:-1]))  # at the epoch's end a changed split is a new epoch's data
    assert main([*argv, "--set", "trainer.max_epochs=2"]) == 0


@pytest.mark.parametrize("task", ["asr", "st"])
def test_an_asr_run_is_not_held_to_a_target_vocabulary_it_never_read(tmp_path: Path, prepared_data: Path,
                                                                      task: str) -> None:
    """`sate vocab` run again for another target size after the ASR pre-training (the source list unchanged) made the
    ASR run's resume, `sate average` over epochs on either side of it and `sate pack` refuse it as "trained on another
    tgt vocabulary", advice to retrain a model that never read that list (27th hostile pass). An ASR model is held to
    its source list alone; an ST model to both."""
    from sate.decode.pack import check_pack_tokens, check_tokens
    from sate.models import build_model
    from sate.models.model_file import model_meta
    from sate.models.tiny import tiny_config
    from sate.train.average import average
    from sate.train.resume import ResumePoint, check_vocabularies

    src, tgt = (Vocabulary.load(prepared_data, side) for side in ("src", "tgt"))
    old_tgt = tgt.tokens[:4] + [tgt.tokens[5], tgt.tokens[4]] + tgt.tokens[6:]  # the list before `sate vocab` again
    torch.manual_seed(0)
    model = build_model(task, tiny_config(task, 16, adaptor=None), len(src), len(tgt))
    meta = {**model_meta(model, src.tokens, old_tgt), "run_id": "0123456789ab", "metrics": {}}
    ckpts = tmp_path / "exp" / "checkpoints"
    ckpts.mkdir(parents=True)
    for epoch, tokens in ((0, old_tgt), (1, tgt.tokens)):  # resumed after the change: epoch 1 records the new list
        torch.save({"sate": {**meta, "tgt_tokens": tokens, "epoch": epoch}, "global_step": epoch + 1, "state_dict": {
            f"model.{k}": v for k, v in model.state_dict().items()}}, ckpts / f"epoch{epoch:03d}.ckpt")
    point = ResumePoint(path=ckpts / "epoch000.ckpt", checkpoint=torch.load(ckpts / "epoch000.ckpt"))
    checks = [lambda: check_vocabularies(point, src.tokens, tgt.tokens, prepared_data),
              lambda: average(ckpts, tmp_path / "avg.pt", last=2),
              lambda: check_tokens(meta, tmp_path / "avg.pt", prepared_data),
              lambda: check_pack_tokens(meta, tmp_path / "pack", SimpleNamespace(vocab="spm"),  # type: ignore[arg-type]
                                        (src, tgt))]
    for check in checks:
        if task == "asr":
            check()
        else:
            with pytest.raises(SateError, match="tgt|tokens_tgt.txt"):
                check()
