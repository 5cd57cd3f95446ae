"""`sate average`: the element-wise mean of the last or best N checkpoints, refusing mismatched ones."""

from __future__ import annotations

import math
from collections.abc import Callable
from pathlib import Path

import pytest
import torch

from sate.data.cmvn_record import cmvn_record
from sate.errors import SateError
from sate.layout import MODEL_FORMAT
from sate.train.average import average, average_state_dicts, select
from sate.train.trainer import load_training_config, train

MakeConfig = Callable[..., Path]


@pytest.mark.slow
def test_average_is_the_elementwise_mean(tmp_path: Path, make_config: MakeConfig, prepared_data: Path,
                                         capsys: pytest.CaptureFixture[str]) -> None:
    config = load_training_config(make_config(tmp_path, "asr", prepared_data), ["trainer.max_epochs=3"])
    exp = tmp_path / "exp"
    train(config, exp)
    used = average(exp / "checkpoints", exp / "model.pt", last=3)
    assert [p.name for p in used] == ["epoch000.ckpt", "epoch001.ckpt", "epoch002.ckpt"]
    states = [{k[6:]: v for k, v in torch.load(p, weights_only=True)["state_dict"].items()} for p in used]
    model_file = torch.load(exp / "model.pt", weights_only=True)
    # The CMVN statistics every checkpoint recorded go into the model file, for `sate pack` to compare
    assert model_file["cmvn"] == cmvn_record(prepared_data / "cmvn.json")
    assert model_file["cmvn_kind"] == "global"  # what pack reads where no config.yaml is beside the model file
    # and what it took, for `sate pack` to tell an average older than its run (hand32k)
    assert model_file["averaged"]["epochs"] == [0, 1, 2] and model_file["averaged"]["step"] == max(
        torch.load(p, weights_only=True)["sate"]["step"] for p in [*used, exp / "checkpoints" / "last.ckpt"])
    assert all(torch.load(p, weights_only=True)["sate"]["cmvn"] == model_file["cmvn"] for p in used)
    # each epoch's checkpoint records the update its valid/ metrics were measured at: its own (`--best` reads it)
    saved = [torch.load(p, weights_only=True) for p in used]
    assert all(c["sate"]["validated_step"] == c["global_step"] for c in saved)
    for key, value in model_file["model"].items():
        if value.is_floating_point():
            assert torch.allclose(value, sum(s[key] for s in states) / 3, atol=1e-6), key
    assert not torch.equal(states[0][next(iter(states[0]))], states[2][next(iter(states[2]))])
    best = average(exp / "checkpoints", exp / "best.pt", best=1, metric="valid/loss", mode="min")
    losses = {p.name: torch.load(p, weights_only=True)["sate"]["metrics"]["valid/loss"] for p in used}
    assert best[0].name.endswith(f"epoch{int(min(losses, key=losses.get)[5:8]):03d}.ckpt")
    # more asked for than the experiment holds: the recipes' --average-n 10 over a config keeping 5 averaged 5, said
    # only by the count (twenty-first hostile pass); a note says why
    from sate.cli import main

    capsys.readouterr()
    assert main(["average", "--exp", str(exp), "--last", "5", "--out", str(tmp_path / "five.pt")]) == 0
    out, err = capsys.readouterr()
    assert out.startswith("averaged 3 checkpoint(s)") and err == (
        f"sate average: note: --last 5: {exp / 'checkpoints'} holds 3 epoch checkpoint(s) (trainer.keep_last keeps "
        "that many, or training ran that few epochs); averaged those\n")
    assert main(["average", "--exp", str(exp), "--last", "3", "--out", str(tmp_path / "three.pt")]) == 0
    assert capsys.readouterr().err == ""
    # the epoch checkpoints removed to save disk: last.ckpt's weights are the model file (hand32k; it was "no epoch
    # checkpoints to average")
    for path in (exp / "checkpoints").iterdir():
        if path.name != "last.ckpt":
            path.unlink()
    assert main(["average", "--exp", str(exp), "--last", "1", "--out", str(tmp_path / "latest.pt")]) == 0
    assert "only last.ckpt: took its weights alone" in capsys.readouterr().err
    latest = torch.load(exp / "checkpoints" / "last.ckpt", weights_only=True)["state_dict"]
    written = torch.load(tmp_path / "latest.pt", weights_only=True)["model"]
    assert all(torch.equal(value, latest["model." + key]) for key, value in written.items())


@pytest.mark.slow
def test_average_refuses_checkpoints_of_different_runs(tmp_path: Path, make_config: MakeConfig,
                                                       prepared_data: Path) -> None:
    config = load_training_config(make_config(tmp_path, "asr", prepared_data), ["trainer.max_epochs=2"])
    exp = tmp_path / "exp"
    train(config, exp)
    for kept_twice in (exp / "checkpoints").glob("best-*.ckpt"):  # an epoch's second file: below
        kept_twice.unlink()
    other = exp / "checkpoints" / "epoch001.ckpt"
    ckpt = torch.load(other, weights_only=True)
    run_id, ckpt["sate"]["run_id"] = ckpt["sate"]["run_id"], "0123456789ab"
    torch.save(ckpt, other)
    with pytest.raises(SateError, match=rf"different training runs: epoch000.ckpt \(run {run_id}\), "
                                        rf"epoch001.ckpt \(run 0123456789ab\)"):
        average(exp / "checkpoints", exp / "model.pt", last=2)
    ckpt["sate"]["run_id"] = run_id  # one run, but the statistics of another cmvn.json
    ckpt["sate"]["cmvn"]["mean"][0] += 1.0
    torch.save(ckpt, other)
    with pytest.raises(SateError, match=r"epoch000.ckpt: its cmvn differs from .*epoch001.ckpt's"):
        average(exp / "checkpoints", exp / "model.pt", last=2)
    ckpt["sate"]["cmvn"]["mean"][0] -= 1.0
    torch.save(ckpt, other)
    # an epoch kept twice by one run (epochNNN and best-...) is one checkpoint; the same epoch of another run copied
    # in was dropped without a word, and --last 2 averaged one
    torch.save(ckpt, exp / "checkpoints" / "best-valid_loss-epoch001.ckpt")
    assert [p.name for p in average(exp / "checkpoints", exp / "model.pt", last=2)] == ["epoch000.ckpt",
                                                                                       "epoch001.ckpt"]
    ckpt["sate"]["run_id"] = "0123456789ab"
    torch.save(ckpt, exp / "checkpoints" / "copied.ckpt")
    with pytest.raises(SateError, match=r"epoch001.ckpt and .*copied.ckpt both hold epoch 1, of different runs"):
        average(exp / "checkpoints", exp / "model.pt", last=2)


def test_average_refuses_different_architectures() -> None:
    a = {"w": torch.zeros(2, 3), "b": torch.zeros(3)}
    with pytest.raises(SateError, match="w has shape .* cannot be averaged"):
        average_state_dicts([a, {"w": torch.zeros(3, 3), "b": torch.zeros(3)}], ["x.ckpt", "y.ckpt"])
    with pytest.raises(SateError, match="different parameters"):
        average_state_dicts([a, {"w": torch.zeros(2, 3)}], ["x.ckpt", "y.ckpt"])
    mean = average_state_dicts([a, {"w": torch.ones(2, 3), "b": torch.full((3,), 3.0)}], ["x", "y"])
    assert torch.equal(mean["w"], torch.full((2, 3), 0.5)) and torch.equal(mean["b"], torch.full((3,), 1.5))
    assert math.isclose(float(mean["b"][0]), 1.5)


@pytest.mark.parametrize("mode", ["min", "max"])
def test_a_checkpoint_whose_metric_is_not_finite_is_never_among_the_best(tmp_path: Path, mode: str) -> None:
    """Every comparison with NaN is false, so sorting put a diverged epoch's NaN anywhere: `--best 2 --mode max`
    took epoch 2 (NaN) as one of the two best. A NaN or infinite metric ranks nowhere."""
    losses = [3.0, 2.0, float("nan"), 1.5, float("inf"), 2.5, float("-inf")]
    for epoch, loss in enumerate(losses):  # a metric whose name says neither way: either mode ranks it
        header(tmp_path / f"epoch{epoch:03d}.ckpt", epoch=epoch, metrics={"valid/score": loss},
               train_config={"trainer": {"monitor": "valid/score"}})
    chosen = [c["sate"]["metrics"]["valid/score"] for c in select(tmp_path, None, 2, None, mode)]
    assert sorted(chosen) == ([1.5, 2.0] if mode == "min" else [2.5, 3.0])
    for epoch in (0, 1, 3, 5):
        (tmp_path / f"epoch{epoch:03d}.ckpt").unlink()
    with pytest.raises(SateError, match="no checkpoint in .* recorded metric 'valid/score' as a finite number"):
        select(tmp_path, None, 2, None, mode)


def header(path: Path, **changes: object) -> Path:
    """A checkpoint with the header `sate train` writes (a model file's, with the run's epoch and metrics), and no
    weights: what `select` reads."""
    meta = {"format": MODEL_FORMAT, "version": 1, "task": "mt", "config": {}, "src_vocab_size": 2, "tgt_vocab_size": 1,
            "src_tokens": ["<blank>", "a"], "tgt_tokens": ["a"], "epoch": 0, "metrics": {},
            "train_config": {"trainer": {"monitor": "valid/loss"}}}
    torch.save({"sate": {**meta, **changes}, "state_dict": {}}, path)
    return path


@pytest.mark.parametrize(("changes", "says"), [
    ({"epoch": None}, "its header's epoch is None, not a whole number >= 0"),  # a KeyError or TypeError traceback
    ({"epoch": float("nan")}, "its header's epoch is nan"),  # a ValueError traceback of int()
    ({"src_vocab_size": -1}, "src_vocab_size is -1 but src_tokens holds 2 tokens"),  # torch: negative dimension
    ({"tgt_tokens": 5}, "tgt_tokens is not a list of tokens"),
    ({"metrics": []}, "its header's metrics or its state_dict is not a mapping"),
    ({"format": None}, "not a sate model file"),
])
def test_a_damaged_or_foreign_checkpoint_header_is_one_line(tmp_path: Path, changes: dict, says: str) -> None:
    header(tmp_path / "epoch000.ckpt", **changes)
    with pytest.raises(SateError, match=f"epoch000.ckpt: {says}"):
        average(tmp_path, tmp_path / "model.pt", last=1)
    header(tmp_path / "epoch000.ckpt", train_config={})
    with pytest.raises(SateError, match="epoch000.ckpt: records no trainer.monitor; name the metric"):
        select(tmp_path, None, 1, None, "min")


def test_best_without_mode_ranks_as_the_run_monitors(tmp_path: Path) -> None:
    """`--best N` without --mode ranked by min whatever the run monitored: on a run monitoring valid/bleu (max, as
    every synth_ding config does) `sate average --best 1` took the checkpoint of the worst BLEU, exit 0 (eleventh
    hostile pass). The run's monitor_mode ranks its monitor; another metric, as its name says, or --mode."""
    run = {"trainer": {"monitor": "valid/bleu", "monitor_mode": "max"}}
    for epoch, (bleu, loss) in enumerate([(10.0, 3.0), (30.0, 2.0), (20.0, 1.0)]):
        header(tmp_path / f"epoch{epoch:03d}.ckpt", epoch=epoch, train_config=run,
               metrics={"valid/bleu": bleu, "valid/loss": loss, "lr": 1.0})
    epochs = lambda *how: [c["sate"]["epoch"] for c in select(tmp_path, None, 1, *how)]  # noqa: E731
    assert epochs(None) == [1] and epochs("valid/bleu") == [1] and epochs(None, "max") == [1]
    assert epochs("valid/loss") == [2]
    with pytest.raises(SateError, match=r"^--metric lr: say whether it is better low or high \(--mode min or "):
        select(tmp_path, None, 1, "lr")
    assert epochs("lr", "max") in ([0], [1], [2])
    # a metric no checkpoint recorded is named as such, not asked for its --mode first (thirteenth hostile pass)
    with pytest.raises(SateError, match=r"recorded metric 'epoch' as a finite number \(recorded: lr, valid/bleu, "):
        select(tmp_path, None, 1, "epoch")


def test_checkpoints_that_recorded_no_value_of_the_metric_are_said_unranked(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--best 3 --metric valid/bleu` over a run resumed with trainer.valid_bleu_utts 0 (its last epoch logged no
    BLEU) averaged the two epochs before, and the note said the folder "holds 2 epoch checkpoint(s) (trainer.keep_best
    keeps that many ...)" of a folder of 3; `--best 2` left it out without a word (24th hostile pass). Those left out
    of the ranking are named; the metrics of every checkpoint are listed when none recorded the one asked for."""
    run = {"trainer": {"monitor": "valid/loss", "monitor_mode": "min"}}
    (tmp_path / "checkpoints").mkdir()
    for epoch, metrics in enumerate([{"valid/bleu": 10.0, "valid/loss": 3.0}, {"valid/bleu": 20.0, "valid/loss": 2.0},
                                     {"valid/loss": 1.0}]):
        header(tmp_path / "checkpoints" / f"epoch{epoch:03d}.ckpt", epoch=epoch, train_config=run, metrics=metrics)
    capsys.readouterr()
    for best in (3, 2):
        assert [c["sate"]["epoch"] for c in select(tmp_path / "checkpoints", None, best, "valid/bleu")] == [0, 1]
        assert capsys.readouterr().err == (
            f"sate average: note: --best {best}: epoch002.ckpt recorded no finite valid/bleu (a diverged epoch, or a "
            "run resumed with other validation settings), so it is not ranked; 2 of 3 epoch checkpoints are\n")
    assert len(select(tmp_path / "checkpoints", None, 2, None)) == 2  # the monitor, recorded by every one: no note
    assert capsys.readouterr().err == ""
    select(tmp_path / "checkpoints", None, 5, None)  # fewer in the folder than asked for: said as before
    assert capsys.readouterr().err == (f"sate average: note: --best 5: {tmp_path / 'checkpoints'} holds 3 epoch "
                                       "checkpoint(s) (trainer.keep_best keeps that many, or training ran that few "
                                       "epochs); averaged those\n")
    with pytest.raises(SateError, match=r"recorded metric 'valid/wer' as a finite number \(recorded: valid/bleu, "
                                        r"valid/loss\)$"):
        select(tmp_path / "checkpoints", None, 2, "valid/wer")


def test_a_checkpoint_saved_after_the_last_validation_is_not_ranked_by_its_scores(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """trainer.max_steps ending a run inside epoch 2 left epoch002.ckpt, saved after the last validation (epoch 1's,
    at update 8) and recording its valid/loss: `--best 2 --metric valid/loss` ranked it with that score and averaged
    it, exit 0 (31st hostile pass). It is not ranked by a valid/ metric, with a note; it is by its own train/ one, and
    `--last` takes it as before; alone in the folder, --best is refused with the way to average it. A checkpoint that
    records no validated update (before sate kept it) is ranked as before."""
    run = {"trainer": {"monitor": "valid/loss", "monitor_mode": "min"}}
    folder = tmp_path / "checkpoints"
    folder.mkdir()
    for epoch, (loss, step, validated) in enumerate([(3.0, 4, 4), (2.0, 8, 8), (2.0, 10, 8)]):
        header(folder / f"epoch{epoch:03d}.ckpt", epoch=epoch, step=step, validated_step=validated, train_config=run,
               metrics={"valid/loss": loss, "train/loss": 5.0 - epoch})
    capsys.readouterr()
    assert [c["sate"]["epoch"] for c in select(folder, None, 2, "valid/loss")] == [0, 1]
    assert capsys.readouterr().err == (
        "sate average: note: --best 2: epoch002.ckpt was saved after the run's last validation (update 10, validated "
        "at 8: trainer.max_steps ended it inside its epoch?): the valid/ scores recorded are that validation's, so it "
        "is not ranked; 2 of 3 epoch checkpoints are\n")
    assert [c["sate"]["epoch"] for c in select(folder, None, 1, "train/loss")] == [2]
    assert [c["sate"]["epoch"] for c in select(folder, 2, None, None)] == [1, 2]
    assert capsys.readouterr().err == ""
    for epoch in (0, 1):
        (folder / f"epoch{epoch:03d}.ckpt").unlink()
    with pytest.raises(SateError, match=r"^\S+/checkpoints: epoch002.ckpt was saved after .* the only epoch checkpoint "
                                        r"there: none is ranked by valid/loss; average with --last$"):
        select(folder, None, 1, None)
    header(folder / "epoch002.ckpt", epoch=2, train_config=run, metrics={"valid/loss": 2.0})
    assert [c["sate"]["epoch"] for c in select(folder, None, 1, None)] == [2]


def test_metric_and_mode_go_with_best_alone(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--last 2 --metric valid/bleu` was taken without a word: the latest epochs, not the metric's best."""
    from sate.cli import main

    for option, value in (("--metric", "valid/bleu"), ("--mode", "max")):
        assert main(["average", "--exp", str(tmp_path), "--last", "2", option, value]) == 2
        assert capsys.readouterr().err == (f"sate average: error: {option} ranks the checkpoints of --best; --last "
                                           "takes the latest epochs\n")


def test_the_default_model_file_is_not_called_an_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Without --out, a refusal of EXP/model.pt named `--out EXP/model.pt`, an option the user never gave (fourteenth
    hostile pass)."""
    from sate.cli import main

    (tmp_path / "model.pt").mkdir()
    assert main(["average", "--exp", str(tmp_path), "--last", "1"]) in (1, 2)
    err = capsys.readouterr().err
    assert err.startswith(f"sate average: error: the model file of --exp {tmp_path / 'model.pt'}: ") and \
        "--out" not in err, err
    assert main(["average", "--exp", str(tmp_path), "--last", "1", "--out", str(tmp_path / "model.pt")]) in (1, 2)
    assert capsys.readouterr().err.startswith(f"sate average: error: --out {tmp_path / 'model.pt'}: ")


def test_a_model_file_linked_into_another_experiment_is_not_written_through(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """EXP/model.pt left as a link to another experiment's model (`ln -s ../st_v1/model.pt exp/st_v2/model.pt`, to
    decode the old one under the new name) was written through by `sate average --exp exp/st_v2`, with or without
    --out: exp/st_v1's model became the average of exp/st_v2, exit 0 (27th hostile pass). Refused before any work,
    naming the link; a link to a file outside any experiment, and an experiment that is itself a link, are not."""
    from sate.cli import main

    def experiment(root: Path) -> Path:
        (root / "checkpoints").mkdir(parents=True)
        (root / "config.yaml").write_text("task: mt\n")
        header(root / "checkpoints" / "epoch000.ckpt")
        return root

    old, new = experiment(tmp_path / "exp" / "st_v1"), experiment(tmp_path / "exp" / "st_v2")
    (old / "model.pt").write_bytes(b"st_v1's model")
    for link, argv in ((new / "model.pt", []), (new / "avg.pt", ["--out", str(new / "avg.pt")])):
        link.symlink_to(old / "model.pt")
        assert main(["average", "--exp", str(new), "--last", "1", *argv]) == 2
        err = capsys.readouterr().err
        assert err == (f"sate average: error: {'--out' if argv else 'the model file of --exp'} {link} (a link to "
                       f"{old / 'model.pt'}): it lies in the experiment {old}, and the average of --exp {new} is of "
                       f"the experiment {new}: it would be taken for st_v1's own; remove the link, or write it in "
                       f"{new} or outside any experiment\n"), err
        assert (old / "model.pt").read_bytes() == b"st_v1's model"
    from sate.targets import check_same_experiment

    (new / "model.pt").unlink()
    (new / "model.pt").symlink_to(tmp_path / "models" / "st.pt")  # outside any experiment
    check_same_experiment(new / "model.pt", [new], "the average")
    (tmp_path / "runs").symlink_to(tmp_path / "exp")  # the experiments reached through a link
    check_same_experiment(tmp_path / "runs" / "st_v2" / "avg2.pt", [tmp_path / "runs" / "st_v2"], "the average")


def test_a_checkpoint_folder_given_as_the_experiment_is_named_as_such(tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]) -> None:
    """Twentieth hostile pass: `sate average --exp EXP/checkpoints` said "EXP/checkpoints/checkpoints: no checkpoint
    directory (train first)", advice for another mistake."""
    from sate.cli import main

    folder = tmp_path / "exp" / "checkpoints"
    folder.mkdir(parents=True)
    header(folder / "epoch000.ckpt")
    assert main(["average", "--exp", str(folder), "--last", "1", "--out", str(tmp_path / "m.pt")]) == 2
    assert capsys.readouterr().err == (f"sate average: error: --exp {folder}: a checkpoint folder itself; --exp takes "
                                       f"the experiment that holds it ({tmp_path / 'exp'})\n")
    assert main(["average", "--exp", str(tmp_path / "none"), "--last", "1", "--out", str(tmp_path / "m.pt")]) == 2
    assert capsys.readouterr().err.endswith(f"--exp {tmp_path / 'none'}: no such directory\n")
    assert not (tmp_path / "m.pt").exists()


@pytest.mark.parametrize(("given", "says"), [
    ("exp", "no experiment itself; it holds the experiment EXP/st: give it"),  # the folder of the experiments
    ("exp/st/logs", "a folder inside the experiment EXP/st, not one itself: give EXP/st"),
    ("exp/st/checkpoints/epoch000.ckpt", "a file inside the experiment EXP/st, not one itself: give EXP/st"),
    ("pack", "a packed model (`sate pack`), not an experiment: --exp takes the experiment its model was trained in"),
    ("started", "no checkpoints/ folder yet (train first)"),  # config.yaml, and no checkpoint yet
    ("data", "no experiment: it holds no checkpoints/ folder (`sate train --exp` makes one)"),
    ("notes.txt", "a file, not a directory"),
])
def test_a_folder_next_to_the_experiment_is_named_for_what_it_is(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                                  given: str, says: str) -> None:
    """Twenty-first hostile pass: `sate average --exp` given the folder holding the experiment, a folder or a file
    inside it, a pack or a data directory said "X/checkpoints: no checkpoint directory (train first)", a path
    nobody gave, with advice to train into a pack or a data directory."""
    from sate.cli import main

    checkpoints = tmp_path / "exp" / "st" / "checkpoints"
    checkpoints.mkdir(parents=True)
    header(checkpoints / "epoch000.ckpt")
    (tmp_path / "exp" / "st" / "logs").mkdir()
    (tmp_path / "pack").mkdir()
    (tmp_path / "pack" / "sate.yaml").write_text("format: sate-pack\n")
    (tmp_path / "started").mkdir()
    (tmp_path / "started" / "config.yaml").write_text("task: st\n")
    (tmp_path / "data").mkdir()
    (tmp_path / "notes.txt").write_text("notes\n")
    assert main(["average", "--exp", str(tmp_path / given), "--last", "1", "--out", str(tmp_path / "m.pt")]) == 2
    assert capsys.readouterr().err == (f"sate average: error: --exp {tmp_path / given}: "
                                       f"{says.replace('EXP', str(tmp_path / 'exp'))}\n")
    assert not (tmp_path / "m.pt").exists()


def test_near_misses_of_the_experiment_name_it(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Twenty-first hostile pass: a file of the experiment (`--exp EXP/checkpoints/last.ckpt`, `EXP/model.pt`), a
    folder inside it (`EXP/decode_dev`) and the folder of experiments were each "no checkpoint directory (train
    first)"."""
    from sate.cli import main

    exp = tmp_path / "runs" / "exp"
    (exp / "checkpoints").mkdir(parents=True)
    (exp / "decode_dev").mkdir()
    header(exp / "checkpoints" / "epoch000.ckpt")
    (exp / "model.pt").write_bytes(b"x")
    for given, said in ((exp / "checkpoints" / "epoch000.ckpt", f"a file inside the experiment {exp}, not one "
                                                                 f"itself: give {exp}"),
                        (exp / "model.pt", f"a file inside the experiment {exp}, not one itself: give {exp}"),
                        (exp / "decode_dev", f"a folder inside the experiment {exp}, not one itself: give {exp}"),
                        (exp.parent, f"no experiment itself; it holds the experiment {exp}: give it")):
        assert main(["average", "--exp", str(given), "--last", "1", "--out", str(tmp_path / "m.pt")]) == 2
        err = capsys.readouterr().err
        assert err == f"sate average: error: --exp {given}: {said}\n", err
    assert not (tmp_path / "m.pt").exists()


def test_a_checkpoints_folder_of_downloads_above_is_no_experiment(tmp_path: Path,
                                                                  capsys: pytest.CaptureFixture[str]) -> None:
    """Twenty-fourth hostile pass: a home folder holding a `checkpoints/` of other things (downloads) made every
    folder below it "a folder inside the experiment HOME, not one itself: give HOME", for `sate average --exp` and
    `sate train --steps-from`. Only a run's folder (a config snapshot, or checkpoints in it) is one; further up than
    three folders none is looked for."""
    from sate.cli import main

    (tmp_path / "checkpoints" / "whisper-small").mkdir(parents=True)
    given = tmp_path / "runs" / "st"
    given.mkdir(parents=True)
    assert main(["average", "--exp", str(given), "--last", "1", "--out", str(tmp_path / "m.pt")]) == 2
    assert capsys.readouterr().err == (f"sate average: error: --exp {given}: no experiment: it holds no checkpoints/ "
                                       "folder (`sate train --exp` makes one)\n")
    (tmp_path / "config.yaml").write_text("task: st\n")  # now it is a run's folder
    assert main(["average", "--exp", str(given), "--last", "1", "--out", str(tmp_path / "m.pt")]) == 2
    assert capsys.readouterr().err.endswith(f"a folder inside the experiment {tmp_path}, not one itself: give "
                                            f"{tmp_path}\n")


@pytest.mark.slow
def test_the_checkpoints_to_choose_from_are_read_without_their_tensors(tmp_path: Path) -> None:
    """Every checkpoint of the folder is read to choose N, and each was loaded whole and kept until the choice,
    optimizer states included: `--last 1` over 8 checkpoints of a 19M-parameter model took 2.3 GB, over one 0.9 GB
    (thirteenth hostile pass). The headers are read with the tensors mapped; only the chosen weights are read."""
    import os
    import subprocess
    import sys

    big = 48 * 2**20  # bytes of optimizer state per checkpoint
    for epoch in range(6):
        header(tmp_path / f"epoch{epoch:03d}.ckpt", epoch=epoch)
        ckpt = torch.load(tmp_path / f"epoch{epoch:03d}.ckpt", weights_only=True)
        ckpt["optimizer_states"] = [{"exp_avg": torch.ones(big // 4)}]
        torch.save(ckpt, tmp_path / f"epoch{epoch:03d}.ckpt")
    # RssAnon, the memory the process holds itself (a mapped file's pages are the page cache's), before and after
    # reading every header as `select` does, all of them held at once as `select` holds them until it chooses
    script = ("import re, sys\nfrom pathlib import Path\nimport sate.models.model_file  # what _header imports\n"
              "from sate.train.average import _header, find_checkpoints\n"
              "anon = lambda: int(re.search(r'RssAnon:\\s+(\\d+)', Path('/proc/self/status').read_text())[1])\n"
              "before = anon()\nheld = [_header(p) for p in find_checkpoints(Path(sys.argv[1]))]\n"
              "print(anon() - before, len(held))\n")
    done = subprocess.run([sys.executable, "-c", script, str(tmp_path)], capture_output=True, text=True, check=True,
                          env={**os.environ, "PYTHONPATH": str(Path(__file__).parents[2])})
    grown_kb, read = map(int, done.stdout.split())
    assert read == 6
    assert grown_kb * 1024 < big  # less than one checkpoint's optimizer states: six were read whole before


def test_checkpoints_a_training_run_rotates_while_they_are_read(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch) -> None:
    """A training run into the experiment keeps its last N: `sate average` while it ran read a checkpoint it had
    listed after the run had removed it, and said "checkpoint not found" of a file the user never named (fourteenth
    hostile pass). The folder is read again: the choice is among the checkpoints there together."""
    import sate.train.average as averaging

    for epoch in range(3):
        header(tmp_path / f"epoch{epoch:03d}.ckpt", epoch=epoch)
    read = averaging._header

    def while_a_run_saves(path: Path) -> dict:
        if path.name == "epoch000.ckpt" and not (tmp_path / "epoch003.ckpt").exists():
            header(tmp_path / "epoch003.ckpt", epoch=3)  # the run saves epoch 3, then drops its oldest but one
            (tmp_path / "epoch001.ckpt").unlink()
        return read(path)

    monkeypatch.setattr(averaging, "_header", while_a_run_saves)
    assert [c["sate"]["epoch"] for c in select(tmp_path, 2, None, None)] == [2, 3]

    def always_removed(path: Path) -> dict:
        name = f"epoch{int(path.stem[5:]) + 10:03d}.ckpt"
        header(tmp_path / name, epoch=int(path.stem[5:]) + 10)
        path.unlink()
        return read(path)

    monkeypatch.setattr(averaging, "_header", always_removed)
    with pytest.raises(SateError, match="its checkpoints keep changing while they are read"):
        select(tmp_path, 2, None, None)


def test_a_checkpoint_removed_while_its_checksums_are_read_is_read_again(tmp_path: Path,
                                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    """A training run removes an old checkpoint between torch's read of it and the check of its checksums (`sate
    average` while `sate train` ran into the experiment): the check's FileNotFoundError passed the retry, which
    took a SateError alone, and the line was "EXP/checkpoints/epoch001.ckpt: No such file or directory", status 1
    (twenty-first hostile pass). The folder is read again, as when the read itself finds the file gone."""
    import sate.files

    for epoch in range(3):
        header(tmp_path / f"epoch{epoch:03d}.ckpt", epoch=epoch)
    check = sate.files.damage

    def removed_meanwhile(path: Path) -> str | None:
        if path.name == "epoch001.ckpt" and not (tmp_path / "epoch003.ckpt").exists():
            header(tmp_path / "epoch003.ckpt", epoch=3)  # the run saves epoch 3, then drops an old one
            path.unlink()
        return check(path)

    monkeypatch.setattr(sate.files, "damage", removed_meanwhile)
    assert [c["sate"]["epoch"] for c in select(tmp_path, 2, None, None)] == [2, 3]


@pytest.mark.parametrize(("name", "kind"), [("avg.json", "one JSON document"), ("avg.txt", "plain text"),
                                            ("avg.ckpt", "a training checkpoint (sate reads it as one)"),
                                            ("avg.png", "an image")])
def test_an_out_named_for_another_kind_is_refused_before_any_work(tmp_path: Path, name: str, kind: str) -> None:
    """`sate average --out avg.json` (or .txt, .png) wrote a model file under that name, exit 0, and `--out avg.ckpt`
    one that translate then took for a training checkpoint (twenty-second hostile pass)."""
    with pytest.raises(SateError) as caught:
        average(tmp_path / "exp" / "checkpoints", tmp_path / name, last=1)
    assert str(caught.value) == (f"--out {tmp_path / name}: a {Path(name).suffix} name says {kind}, but sate average "
                                 f"writes a model file: name it {tmp_path / 'avg.pt'}")
    assert list(tmp_path.iterdir()) == []


def test_a_mode_against_the_way_a_metric_improves_is_refused(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Twenty-third hostile pass: `sate average --best 1 --mode min` on valid/bleu (a recipe's line for the loss,
    its metric changed) averaged the worst checkpoints, exit 0; so did `--best` on a run whose config said
    monitor valid/bleu with the default monitor_mode min, which `sate train` now refuses
    (tests/test_config.py). A name that says neither way takes either mode."""
    from sate.cli import main

    ckpts = tmp_path / "exp" / "checkpoints"
    ckpts.mkdir(parents=True)
    for epoch, (bleu, loss) in enumerate([(10.0, 3.0), (30.0, 2.0), (20.0, 1.0)]):
        header(ckpts / f"epoch{epoch:03d}.ckpt", epoch=epoch, metrics={"valid/bleu": bleu, "valid/loss": loss},
               train_config={"trainer": {"monitor": "valid/bleu", "monitor_mode": "max"}})
    out = tmp_path / "avg.pt"
    for metric, mode, better in (("valid/bleu", "min", "high"), ("valid/loss", "max", "low")):
        assert main(["average", "--exp", str(ckpts.parent), "--best", "1", "--metric", metric, "--mode", mode,
                     "--out", str(out)]) == 2
        assert capsys.readouterr().err == (f"sate average: error: --mode {mode} for {metric!r}, which is better "
                                           f"{better}: the best checkpoints would be the worst; give "
                                           f"{'max' if mode == 'min' else 'min'}\n")
    assert not out.exists()
    for epoch in range(3):  # an older sate's run, whose config said so
        header(ckpts / f"epoch{epoch:03d}.ckpt", epoch=epoch, metrics={"valid/bleu": 10.0 + epoch},
               train_config={"trainer": {"monitor": "valid/bleu", "monitor_mode": "min"}})
    with pytest.raises(SateError, match=r"^the run's trainer.monitor_mode is min for 'valid/bleu', which is better "
                                        r"high: the best checkpoints would be the worst; give --mode max$"):
        select(ckpts, None, 1, None)
    assert [c["sate"]["epoch"] for c in select(ckpts, None, 1, None, "max")] == [2]


def test_epochs_removed_by_hand_are_named_as_such_not_blamed_on_keep_last(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--last 5` over a run that kept 5 epochs, two of them deleted by hand, averaged the 3 left with a note blaming
    trainer.keep_last (25th hostile pass, hand25t); the note names the epochs that are not there."""
    trainer = {"monitor": "valid/loss", "keep_last": 5}
    for epoch in range(6):  # the run kept epochs 1..5 (keep_last 5): epoch 0 rotated out
        if epoch not in (0, 2, 3):
            header(tmp_path / f"epoch{epoch:03d}.ckpt", epoch=epoch, train_config={"trainer": trainer})
    assert [int(c["sate"]["epoch"]) for c in select(tmp_path, 5, None, None, None)] == [1, 4, 5]
    assert capsys.readouterr().err == (f"sate average: note: --last 5: {tmp_path} holds 3 epoch checkpoint(s) (epochs "
                                       "2, 3 of the last 5 are not there (removed?)); averaged those\n")
    (tmp_path / "epoch001.ckpt").unlink()  # one epoch: "epoch 1 ... are not there" was the line (27th hostile pass)
    select(tmp_path, 3, None, None, None)
    assert capsys.readouterr().err == (f"sate average: note: --last 3: {tmp_path} holds 2 epoch checkpoint(s) (epoch 3 "
                                       "of the last 3 is not there (removed?)); averaged those\n")


def test_older_epochs_taken_in_place_of_missing_ones_are_said(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """`--last 2` with epoch001.ckpt removed by hand averaged epochs 0 and 2, and `--last 4` over a run keeping its
    last 3 took a best checkpoint of an epoch long before, each without a word: the folder held N checkpoints, so
    the note of a folder running short never came (27th hostile pass). A note names the epochs missing and the older
    ones averaged in their place; the last N epochs all there say nothing."""
    trainer = {"monitor": "valid/loss", "keep_last": 3}
    removed, kept = tmp_path / "removed", tmp_path / "kept"
    for folder, epochs in ((removed, (0, 2)), (kept, (7, 8, 9))):
        folder.mkdir()
        for epoch in epochs:
            header(folder / f"epoch{epoch:03d}.ckpt", epoch=epoch, train_config={"trainer": trainer})
    header(kept / "best-valid_loss-epoch004.ckpt", epoch=4, train_config={"trainer": trainer})
    capsys.readouterr()
    assert [int(c["sate"]["epoch"]) for c in select(removed, 2, None, None, None)] == [0, 2]
    assert capsys.readouterr().err == (f"sate average: note: --last 2: epoch 1 of the last 2 is not in {removed} "
                                       "(removed?); averaged the older epoch 0 in its place\n")
    assert [int(c["sate"]["epoch"]) for c in select(kept, 4, None, None, None)] == [4, 7, 8, 9]
    assert capsys.readouterr().err == (f"sate average: note: --last 4: epoch 6 of the last 4 is not in {kept} "
                                       "(trainer.keep_last keeps 3); averaged the older epoch 4 in its place\n")
    for folder, last in ((removed, 1), (kept, 3), (kept, 2)):
        assert len(select(folder, last, None, None, None)) == last
        assert capsys.readouterr().err == ""


def test_epochs_removed_under_an_earlier_keep_last_are_not_called_removed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`trainer.keep_last` may be raised on resume: a run keeping 3 to epoch 4 (epoch 1 rotated out), resumed keeping
    10 to epoch 8. `--last 8` said epoch 1 was "removed?", and `--last 10` named it among the epochs not there
    (removed?), reading the newest checkpoint's keep_last only (27th hostile pass, review27c). Each checkpoint's
    own keep_last is read: the note names the earlier one."""
    for epoch in (0, *range(2, 9)):  # best-...-epoch000 kept; 2..4 of the first run, 5..8 of the resumed one
        name = f"best-valid_loss-epoch{epoch:03d}.ckpt" if epoch == 0 else f"epoch{epoch:03d}.ckpt"
        trainer = {"monitor": "valid/loss", "keep_last": 3 if epoch <= 4 else 10}
        header(tmp_path / name, epoch=epoch, train_config={"trainer": trainer})
    assert [int(c["sate"]["epoch"]) for c in select(tmp_path, 8, None, None, None)] == [0, *range(2, 9)]
    assert capsys.readouterr().err == (f"sate average: note: --last 8: epoch 1 of the last 8 is not in {tmp_path} "
                                       "(trainer.keep_last was 3 at epoch 4); averaged the older epoch 0 in its "
                                       "place\n")
    select(tmp_path, 10, None, None, None)
    assert "(removed?)" not in capsys.readouterr().err
    (tmp_path / "epoch003.ckpt").unlink()  # and one removed by hand since: said as such
    select(tmp_path, 7, None, None, None)
    assert capsys.readouterr().err == (f"sate average: note: --last 7: epoch 3 of the last 7 is not in {tmp_path} "
                                       "(removed?); averaged the older epoch 0 in its place\n")


def test_a_folder_holding_last_ckpt_alone_is_averaged_by_last(tmp_path: Path,
                                                               capsys: pytest.CaptureFixture[str]) -> None:
    """A run's epoch checkpoints removed to save disk, last.ckpt kept: `sate average --last N` said "no epoch
    checkpoints to average" with no way on, and `sate pack --model EXP/checkpoints/last.ckpt`'s advice was that very
    command (hand31c). `--last N` takes last.ckpt, the run's latest weights, with a note; `--best N` is told how."""
    from sate.cli import main

    folder = tmp_path / "exp" / "checkpoints"
    folder.mkdir(parents=True)
    torch.save({**torch.load(header(folder / "last.ckpt", epoch=4), weights_only=True), "global_step": 1234},
               folder / "last.ckpt")
    assert [c["path"].name for c in select(folder, 3, None, None, None)] == ["last.ckpt"]
    assert capsys.readouterr().err == (f"sate average: note: --last 3: {folder} holds no epoch checkpoint (removed?), "
                                       "only last.ckpt: took its weights alone, the run's latest (epoch 4, update "
                                       "1,234)\n")
    assert main(["average", "--exp", str(tmp_path / "exp"), "--best", "1"]) == 2
    assert capsys.readouterr().err == (f"sate average: error: {folder}: holds last.ckpt alone, no epoch checkpoint "
                                       "(removed?): none to rank by --best; --last 1 writes a model file of last.ckpt, "
                                       "the run's latest weights\n")
    (folder / "last.ckpt").unlink()
    with pytest.raises(SateError, match="checkpoints: no epoch checkpoints to average$"):
        select(folder, 1, None, None, None)


def test_last_ckpt_alone_of_a_run_inside_its_first_epoch_is_not_said_removed(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A run with mid-epoch checkpoints stopped (or still training) inside its first epoch holds last.ckpt alone: it
    never wrote an epoch checkpoint, and the note said "(removed?)" (review32k). Its header says so; a header that
    cannot tell (an older sate's, no mid_epoch) says both; one of a run that max_steps ended in epoch 0 (Lightning
    wrote epoch000.ckpt then) is still "removed?"."""
    for changes, why in (({"mid_epoch": True}, "none written yet: last.ckpt was saved inside the run's first epoch, "
                                               "which it has not finished"),
                         ({}, "removed, or never written by a run stopped inside its first epoch?"),
                         ({"mid_epoch": False}, "removed?"),
                         ({"mid_epoch": True, "train_config": {"trainer": {"max_steps": 3}}}, "removed?")):
        header(tmp_path / "last.ckpt", epoch=0, step=3, **changes)
        assert [c["path"].name for c in select(tmp_path, 5, None, None, None)] == ["last.ckpt"]
        assert capsys.readouterr().err == (f"sate average: note: --last 5: {tmp_path} holds no epoch checkpoint "
                                           f"({why}), only last.ckpt: took its weights alone, the run's latest "
                                           "(epoch 0, update 3)\n")
        with pytest.raises(SateError, match=f"holds last.ckpt alone, no epoch checkpoint \\({why.replace('?', '.')}"
                                            "\\): none to rank by --best"):
            select(tmp_path, None, 1, None, None)


def test_the_model_file_records_the_update_its_run_had_reached(tmp_path: Path) -> None:
    """What `sate pack` compares with the run's last.ckpt to tell an average older than its run (hand31c): the run,
    the epochs taken and the newest update, last.ckpt's where it is of that run."""
    from sate.train.average import _record

    for epoch in (1, 2, 3):
        header(tmp_path / f"epoch{epoch:03d}.ckpt", epoch=epoch, step=10 * epoch, run_id="r1")
    chosen = select(tmp_path, 2, None, None, None)
    assert _record(tmp_path, chosen) == {"run_id": "r1", "epochs": [2, 3], "step": 30}
    header(tmp_path / "last.ckpt", epoch=3, step=35, run_id="r1")  # written inside epoch 4
    assert _record(tmp_path, chosen) == {"run_id": "r1", "epochs": [2, 3], "step": 35}
    header(tmp_path / "last.ckpt", epoch=3, step=99, run_id="other")
    assert _record(tmp_path, chosen)["step"] == 30


@pytest.mark.slow  # five averages of header-only checkpoints: 1.1 s
def test_a_checkpoint_of_another_run_than_last_ckpt_is_not_averaged_alone(tmp_path: Path) -> None:
    """A checkpoint copied (or linked) in from another experiment, the newest epoch of the folder: `--last 1` averaged
    it alone, exit 0, and so did `--best 1` where it scored best, where two with one of this run's were refused (33rd
    hostile pass). The run is last.ckpt's; a last.ckpt that does not read cannot tell."""
    ckpts, out = tmp_path / "exp" / "checkpoints", tmp_path / "model.pt"
    ckpts.mkdir(parents=True)
    for epoch in (0, 1):
        header(ckpts / f"epoch{epoch:03d}.ckpt", epoch=epoch, step=epoch + 1, run_id="r1",
               metrics={"valid/loss": 5.0 - epoch})
    header(ckpts / "last.ckpt", epoch=1, step=2, run_id="r1")
    (tmp_path / "store").mkdir()
    header(tmp_path / "store" / "foreign.ckpt", epoch=2, step=3, run_id="r2", metrics={"valid/loss": 1.0})
    (ckpts / "epoch002.ckpt").symlink_to(tmp_path / "store" / "foreign.ckpt")
    for last, best in ((1, None), (None, 1)):
        with pytest.raises(SateError) as err:
            average(ckpts, out, last=last, best=best)
        assert str(err.value) == (f"{ckpts}: epoch002.ckpt is of run r2, and last.ckpt beside it of run r1: "
                                  "checkpoints of two experiments (one copied or linked in?); move those of the other "
                                  "out of the checkpoint folder")
    with pytest.raises(SateError, match="come from different training runs"):
        average(ckpts, out, last=2)
    # an older sate's run (its checkpoints of no run id), resumed by this one (an id from then on): its own best epoch
    # was blamed as copied in (review33c); it is read (and here fails at the weights)
    (ckpts / "epoch002.ckpt").unlink()
    for epoch in (0, 1):
        header(ckpts / f"epoch{epoch:03d}.ckpt", epoch=epoch, step=epoch + 1, metrics={"valid/loss": 2.0 - epoch})
    header(ckpts / "epoch002.ckpt", epoch=2, step=3, run_id="r1", metrics={"valid/loss": 3.0})
    header(ckpts / "last.ckpt", epoch=2, step=3, run_id="r1")
    with pytest.raises(SateError, match="does not fit the model"):
        average(ckpts, out, best=1)
    (ckpts / "last.ckpt").write_bytes(b"damaged")  # no run to tell by: the weights are read (and here fail)
    with pytest.raises(SateError, match="does not fit the model"):
        average(ckpts, out, last=1)


def test_a_damaged_checkpoint_names_the_way_on(tmp_path: Path) -> None:
    """Every checkpoint is read to choose: a damaged epoch000.ckpt stopped `--last 1`, which would not take it, with
    "was a copy or a save interrupted?" and no way on (33rd hostile pass); followed, the advice averages the others."""
    for epoch in (0, 1):
        header(tmp_path / f"epoch{epoch:03d}.ckpt", epoch=epoch)
    (tmp_path / "epoch000.ckpt").write_bytes(b"PK\x03\x04 cut short")
    with pytest.raises(SateError) as err:
        select(tmp_path, 1, None, None)
    assert str(err.value).startswith(f"{tmp_path / 'epoch000.ckpt'}: the file is damaged")
    assert str(err.value).endswith(f"; move it out of {tmp_path} to average the other checkpoints")
    (tmp_path / "epoch000.ckpt").rename(tmp_path.parent / f"{tmp_path.name}-epoch000.ckpt")
    assert [c["path"].name for c in select(tmp_path, 1, None, None)] == ["epoch001.ckpt"]
