"""`sate pack --out EXP/pack` of a model from outside any experiment: the task of the experiment is the pack's."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch

from sate.cli import main
from sate.data.vocab import Vocabulary
from sate.models import build_model, save_model_file
from sate.models.tiny import tiny_config


def _model_file(path: Path, data: Path) -> Path:
    """A tiny MT model file of ``data``'s vocabularies."""
    src, tgt = Vocabulary.load(data, "src"), Vocabulary.load(data, "tgt")
    save_model_file(path, build_model("mt", tiny_config("mt", 16), len(src), len(tgt)), src.tokens, tgt.tokens)
    return path


def _experiment(root: Path, task: str) -> Path:
    """What `sate train` leaves, as far as the rule looks: config.yaml and checkpoints/ with last.ckpt."""
    (root / "checkpoints").mkdir(parents=True)
    (root / "config.yaml").write_text(f"task: {task}\n")
    torch.save({"sate": {"epoch": 0}, "state_dict": {}}, root / "checkpoints" / "last.ckpt")
    return root


def test_a_model_of_another_task_is_not_packed_into_an_experiment(tmp_path: Path, prepared_data: Path,
                                                                   capsys: pytest.CaptureFixture[str]) -> None:
    """A model outside any experiment (a pack's model.pt, one averaged elsewhere) says nothing of where it belongs:
    `sate pack --model mt-pack/model.pt --out exp/asr/pack` replaced the ASR pack with an MT one, exit 0, which the
    cascade and `--init-from` then took for exp/asr's own (24th hostile pass). Refused before any work where the
    experiment's config.yaml names another task; a model of its own task (averaged elsewhere), or a pack outside any
    experiment, is packed as before."""
    model = _model_file(tmp_path / "avg.pt", prepared_data)
    asr = _experiment(tmp_path / "exp" / "asr", "asr")
    argv = ["pack", "--model", str(model), "--data", str(prepared_data), "--out"]
    assert main([*argv, str(asr / "pack2")]) == 2
    err = capsys.readouterr().err
    assert err == (f"sate pack: error: --out {asr / 'pack2'}: it lies in the asr experiment {asr}, and --model "
                   f"{model} is an mt model: it would be taken for asr's own; write it outside the experiment\n"), err
    assert not (asr / "pack2").exists()
    mt = _experiment(tmp_path / "exp" / "mt", "mt")
    assert main([*argv, str(mt / "pack")]) == 0  # its own task
    assert main([*argv, str(tmp_path / "packs" / "mt")]) == 0  # outside any experiment
    (asr / "config.yaml").write_text("task: [\n")  # a config that cannot be read says nothing of the task
    assert main([*argv, str(asr / "pack3")]) == 0


def test_a_pack_linked_into_another_experiment_is_not_written_through(tmp_path: Path, prepared_data: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """EXP/pack left as a link to another experiment's pack was replaced through the link by `sate pack --out
    EXP/pack`: the other experiment's pack became this one's, exit 0 (27th hostile pass). Refused before any work,
    naming the link."""
    old, new = _experiment(tmp_path / "exp" / "st_v1", "mt"), _experiment(tmp_path / "exp" / "st_v2", "mt")
    assert main(["pack", "--model", str(_model_file(old / "model.pt", prepared_data)), "--data", str(prepared_data),
                 "--out", str(old / "pack")]) == 0
    model = _model_file(new / "model.pt", prepared_data)
    argv = ["pack", "--model", str(model), "--data", str(prepared_data), "--out"]
    before = {p.name: p.read_bytes() for p in (old / "pack").iterdir()}
    (new / "pack").symlink_to(old / "pack")
    assert main([*argv, str(new / "pack")]) == 2
    err = capsys.readouterr().err
    assert err.startswith(f"sate pack: error: --out {new / 'pack'} (a link to {old / 'pack'}): it lies in the "
                          f"experiment {old}, and --model {model} is of the experiment {new}: ") and \
        err.endswith("; remove the link, or write it in " f"{new} or outside any experiment\n"), err
    assert {p.name: p.read_bytes() for p in (old / "pack").iterdir()} == before


def test_a_model_of_another_task_is_not_packed_through_a_link_in_an_experiment(
        tmp_path: Path, prepared_data: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """exp/asr/pack a link to a store outside any experiment: the task check looked only where the link leads, so
    an MT model from outside any experiment was packed there and taken for exp/asr's own (fix27c, twenty-seventh
    pass). The experiment it is named in counts too."""
    model = _model_file(tmp_path / "avg.pt", prepared_data)
    asr = _experiment(tmp_path / "exp" / "asr", "asr")
    (tmp_path / "store" / "asr-pack").mkdir(parents=True)
    (asr / "pack").symlink_to(tmp_path / "store" / "asr-pack")
    assert main(["pack", "--model", str(model), "--data", str(prepared_data), "--out", str(asr / "pack")]) == 2
    err = capsys.readouterr().err
    assert err == (f"sate pack: error: --out {asr / 'pack'}: it lies in the asr experiment {asr}, and --model "
                   f"{model} is an mt model: it would be taken for asr's own; write it outside the experiment\n"), err
    assert not any((tmp_path / "store" / "asr-pack").iterdir())


def test_an_evaluation_through_a_link_into_an_experiment_of_another_task_is_refused(tmp_path: Path) -> None:
    """`sate evaluate --model packs/st --out runs/st` where runs/st is a link into exp/asr/decode_tst-COMMON: evaluate
    gives --out as typed, and the task check judged only the folder it is named in, so the ST pack's row was tabled
    as exp/asr's by `sate report`, exit 0 (review27z). Where it leads counts too."""
    from sate.decode.pack import check_experiment_task
    from sate.errors import SateError

    asr = _experiment(tmp_path / "exp" / "asr", "asr")
    (asr / "decode_tst-COMMON").mkdir()
    (tmp_path / "runs").mkdir()
    (tmp_path / "runs" / "st").symlink_to(asr / "decode_tst-COMMON")
    out = tmp_path / "runs" / "st"
    with pytest.raises(SateError, match=f"it lies in the asr experiment {asr}, and --model .* is an st model"):
        check_experiment_task(out, tmp_path / "packs" / "st", "st", out)  # as evaluate gives it
    check_experiment_task(out, tmp_path / "packs" / "asr", "asr", out)


def test_an_average_older_than_its_run_is_not_packed(tmp_path: Path, prepared_data: Path,
                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """After a resume trained on, `sate pack --model EXP/model.pt` packed the average of the epochs before, exit 0
    (hand31c). `sate average` records the update its run had reached; a last.ckpt beside, of that run and past it, is
    named with the way on (average again, or copy the older one out), which packs. One of another run, a model file
    without the record, or a last.ckpt at that update pack as before."""
    exp = _experiment(tmp_path / "exp" / "mt", "mt")
    src, tgt = Vocabulary.load(prepared_data, "src"), Vocabulary.load(prepared_data, "tgt")
    model = build_model("mt", tiny_config("mt", 16), len(src), len(tgt))
    save_model_file(exp / "model.pt", model, src.tokens, tgt.tokens,
                    averaged={"run_id": "r1", "epochs": [3, 4], "step": 40})
    argv = ["pack", "--model", str(exp / "model.pt"), "--data", str(prepared_data), "--out"]
    for run_id, step in (("r1", 40), ("r2", 90)):  # as averaged; another run's
        torch.save({"sate": {"epoch": 4, "run_id": run_id, "step": step}, "state_dict": {}},
                   exp / "checkpoints" / "last.ckpt")
        assert main([*argv, str(tmp_path / f"pack-{run_id}")]) == 0
    torch.save({"sate": {"epoch": 9, "run_id": "r1", "step": 90}, "state_dict": {}}, exp / "checkpoints" / "last.ckpt")
    capsys.readouterr()
    assert main([*argv, str(tmp_path / "stale")]) == 2
    assert capsys.readouterr().err == (
        f"sate pack: error: --model {exp / 'model.pt'} is the average of epochs 3, 4 written at update 40, and the run "
        f"has trained on since: {exp / 'checkpoints' / 'last.ckpt'} is at update 90 (a resume?); average again (sate "
        f"average --exp {exp} --last N, or --best N), then pack; to pack the older average, copy it out of the "
        "experiment first and give the copy\n")
    assert not (tmp_path / "stale").exists()
    (tmp_path / "older.pt").write_bytes((exp / "model.pt").read_bytes())  # the advice, followed
    assert main(["pack", "--model", str(tmp_path / "older.pt"), "--data", str(prepared_data), "--out",
                 str(tmp_path / "older")]) == 0
    save_model_file(exp / "model.pt", model, src.tokens, tgt.tokens)  # an older sate's: no record, nothing said
    assert main([*argv, str(tmp_path / "unrecorded")]) == 0


@pytest.mark.slow  # two averages and two packs: 0.4 s
def test_the_advice_on_an_older_average_works_for_any_model_file_name(tmp_path: Path, prepared_data: Path,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """`sate pack --model EXP/avg2.pt` of an average older than its run advised `sate average --exp EXP --last N`,
    which, followed, wrote EXP/model.pt, and the same pack was refused again, word for word (review32k). The advice
    names the file's own name (`--out`), quoted for the shell; followed as printed, the pack is made."""
    import shlex

    from sate.models.model_file import model_meta

    exp = _experiment(tmp_path / "my exps" / "mt", "mt")
    src, tgt = Vocabulary.load(prepared_data, "src"), Vocabulary.load(prepared_data, "tgt")
    model = build_model("mt", tiny_config("mt", 16), len(src), len(tgt))
    meta = {**model_meta(model, src.tokens, tgt.tokens), "run_id": "r1", "metrics": {},
            "train_config": {"trainer": {"monitor": "valid/loss"}}}
    weights = {f"model.{key}": value for key, value in model.state_dict().items()}

    def saved(epoch: int, step: int) -> None:  # epochNNN.ckpt, and last.ckpt beside it, as training leaves them
        for name in (f"epoch{epoch:03d}.ckpt", "last.ckpt"):
            torch.save({"sate": {**meta, "epoch": epoch, "step": step}, "state_dict": weights, "global_step": step},
                       exp / "checkpoints" / name)

    saved(0, 10)
    saved(1, 20)
    model_file = exp / "avg2.pt"
    assert main(["average", "--exp", str(exp), "--last", "2", "--out", str(model_file)]) == 0
    saved(2, 30)  # a resume trained on
    pack = ["pack", "--model", str(model_file), "--data", str(prepared_data), "--out"]
    capsys.readouterr()
    assert main([*pack, str(tmp_path / "stale")]) == 2
    err = capsys.readouterr().err
    advice = err.split("average again (", 1)[1].split(", or --best N)", 1)[0]
    assert advice == f"sate average --exp {shlex.quote(str(exp))} --last N --out {shlex.quote(str(model_file))}"
    command = shlex.split(advice.replace(" N", " 2"))
    assert command[0] == "sate" and main(command[1:]) == 0  # the advice, followed as printed
    assert main([*pack, str(tmp_path / "packed")]) == 0
