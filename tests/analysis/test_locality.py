"""Localness: the definition on hand-made attention matrices, then `sate analyze locality` on tiny models."""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import torch
from torch.utils.data import Subset

from sate.analysis import cli as analyze
from sate.analysis.locality import (
    LayerLocalness,
    LocalnessTotals,
    csv_text,
    length_sorted_batches,
    localness,
    markdown_table,
    model_localness,
    plot_locality,
    window_size,
)
from sate.cli import main
from sate.data.dataset import CMVN, SpeechDataset, TextDataset
from sate.data.vocab import Vocabulary
from sate.models import build_model, save_model_file
from sate.models.model_file import model_from_file
from sate.models.tiny import tiny_config

CPU = torch.device("cpu")


def uniform(size: int) -> torch.Tensor:
    return torch.full((size, size), 1.0 / size)


def band(size: int, half: int) -> torch.Tensor:
    """Row i attends uniformly to positions i - half .. i + half (cut at the ends)."""
    pos = torch.arange(size)
    inside = ((pos[:, None] - pos[None, :]).abs() <= half).float()
    return inside / inside.sum(-1, keepdim=True)


def one(attn: torch.Tensor, ratio: float = 0.2) -> float:
    """Localness of a single-utterance map (T, T) or (H, T, T); ratio 0.2 is a half-width of 10% of T."""
    attn = attn if attn.dim() == 3 else attn[None]
    return float(localness(attn[None], torch.tensor([attn.size(-1)]), ratio)[0])


@pytest.mark.parametrize(("length", "ratio", "half"), [(10, 0.1, 0), (19, 0.1, 0), (20, 0.1, 1), (30, 0.1, 1),
                                                       (40, 0.1, 2), (100, 0.1, 5), (100, 0.58, 29), (10, 0.2, 1),
                                                       (7, 1.0, 3), (8, 1.0, 4)])
def test_window_is_ratio_times_length_wide(length: int, ratio: float, half: int) -> None:
    """The paper's window of 10% of the sequence length is the full width: half-width floor(r·T / 2)."""
    assert window_size(length, ratio) == half


def test_the_default_window_is_a_tenth_of_the_length() -> None:
    # T = 20, w = 1: 18 inner rows hold 3 keys of 20, the 2 end rows 2: (18·3 + 2·2) / 20 / 20
    assert one(uniform(20), ratio=0.1) == pytest.approx(0.145)
    assert one(uniform(19), ratio=0.1) == pytest.approx(1 / 19)  # w = 0: only the position itself


def test_identity_is_fully_local() -> None:
    for size in (1, 7, 10, 33):
        assert one(torch.eye(size)) == pytest.approx(1.0)


def test_uniform_attention_gives_the_window_share() -> None:
    # T = 10, w = 1: the 8 inner rows hold 3 keys of 10, the 2 end rows only 2: (8·3 + 2·2) / 10 / 10
    assert one(uniform(10)) == pytest.approx(0.28)
    # T = 20, w = 2: 16 inner rows with 5 keys, rows 1 and 18 with 4, rows 0 and 19 with 3: 94 / 20 / 20
    assert one(uniform(20)) == pytest.approx(0.235)
    # a window as wide as the utterance (w = 5) is cut at the ends: rows 0..9 hold 6, 7, 8, 9, 10, 10, 9, 8, 7, 6
    assert one(uniform(10), ratio=1.0) == pytest.approx(0.8)


def test_band_attention_by_hand() -> None:
    # T = 10, each row spreads evenly over i-2..i+2, window w = 1 (i-1..i+1):
    # rows 0 and 9: 2 of 3 band keys inside; rows 1 and 8: 3 of 4; rows 2..7: 3 of 5.
    expected = (2 * 2 / 3 + 2 * 3 / 4 + 6 * 3 / 5) / 10
    assert expected == pytest.approx(193 / 300)
    assert one(band(10, 2)) == pytest.approx(expected)
    # a band no wider than the window is fully local
    assert one(band(20, 2)) == pytest.approx(1.0)


def test_heads_are_averaged_and_padding_is_ignored() -> None:
    two_heads = torch.stack([torch.eye(10), uniform(10)])
    assert one(two_heads) == pytest.approx((1.0 + 0.28) / 2)
    # padded to 14 positions, with junk in the padding: only the first 10 queries and keys count
    padded = torch.ones(2, 2, 14, 14)
    padded[0, :, :10, :10] = two_heads
    padded[1, :, :4, :4] = torch.eye(4)
    values = localness(padded, torch.tensor([10, 4]), 0.2)
    assert values.tolist() == pytest.approx([0.64, 1.0])


def test_totals_weigh_every_utterance_the_same() -> None:
    totals = LocalnessTotals(0.2)
    short = torch.zeros(1, 1, 10, 10)
    short[0, 0, :5, :5] = torch.eye(5)
    totals(("textual", 1), short, torch.arange(10)[None] < 5)
    totals(("textual", 1), uniform(10)[None, None], torch.ones(1, 10, dtype=torch.bool))
    assert totals.means() == {("textual", 1): (pytest.approx((1.0 + 0.28) / 2), 2)}


@pytest.mark.parametrize("task", ["mt", "st"])
def test_batching_does_not_change_the_result(prepared_data: Path, vocabs, model_files: dict[str, Path],
                                             task: str, capsys: pytest.CaptureFixture) -> None:
    """Padding in a batch is masked, speech too (the acoustic encoder masks it exactly, docs/models.md): per-utterance
    localness equals the one-at-a-time value. `--help` said speech batches were not exact (twenty-third hostile
    pass: it described the encoder before its padding was masked), against docs/analysis.md."""
    model, _ = model_from_file(model_files[task])
    if task == "mt":
        data = TextDataset.from_manifest(prepared_data / "train.jsonl", *vocabs)
        sizes, encoders = [len(s) for s in data.src], {"textual"}
    else:
        data = SpeechDataset.from_data_dir(prepared_data, "train", *vocabs, CMVN.from_option(prepared_data /
                                                                                              "cmvn.json"))
        sizes, encoders = list(data.lengths), {"acoustic", "textual"}
    alone = model_localness(model, length_sorted_batches(data, sizes, 1), 0.1, CPU)
    together = model_localness(model, length_sorted_batches(Subset(data, range(len(data))), sizes, 5), 0.1, CPU)
    assert alone.keys() == together.keys() == {(e, k) for e in encoders for k in (1, 2)}
    for key, (value, count) in alone.items():
        assert count == together[key][1] == len(data)
        assert together[key][0] == pytest.approx(value, abs=1e-6)
    with pytest.raises(SystemExit):
        main(["analyze", "locality", "--help"])
    assert "with the same values" in " ".join(capsys.readouterr().out.split())


def test_baseline_st_has_only_acoustic_layers(model_files: dict[str, Path]) -> None:
    """The E2E ST baseline has no textual encoder, so only its acoustic layers get a localness."""
    model, _ = model_from_file(model_files["st_baseline"])
    g = torch.Generator().manual_seed(0)
    batch = {"feats": torch.randn(2, 60, 80, generator=g), "feats_lengths": torch.tensor([60, 41])}
    result = model_localness(model, [batch], 0.1, CPU)
    assert result.keys() == {("acoustic", 1), ("acoustic", 2)}
    assert all(0.0 < value <= 1.0 and count == 2 for value, count in result.values())


@pytest.mark.slow
def test_the_layer_ctc_reads_is_starred(tmp_path: Path, vocabs, model_files: dict[str, Path]) -> None:  # noqa: ANN001
    """Fig. 1(b) compares where CTC reads the acoustic encoder, and the plot named the models only (the twenty-sixth
    pass's note): each model's CTC layer (``ctc.layer``, else the top) is starred; an MT model and a model whose CTC
    no loss trains (``loss.ctc_weight: 0``) get none."""
    src, tgt = vocabs
    models = {}
    for name, extra in (("low", {"ctc": {"layer": 1}}), ("untrained", {"loss": {"ctc_weight": 0.0}})):
        models[name] = tmp_path / name / "model.pt"
        conf = {**tiny_config("st", 16, layers=2, acoustic_type="transformer", baseline=name == "low"), **extra}
        save_model_file(models[name], build_model("st", conf, len(src), len(tgt)), src.tokens, tgt.tokens)
    found = {name: analyze.ctc_layer(analyze.load_model(path), 2)
             for name, path in {**models, "asr": model_files["asr"], "st": model_files["st"],
                                "mt": model_files["mt"]}.items()}
    assert found == {"low": 1, "untrained": None, "asr": 2, "st": 2, "mt": None}
    rows = [LayerLocalness("st", "st", "acoustic", layer, 0.5 + layer / 10, 3) for layer in (1, 2)]
    starred = [rows[0], LayerLocalness("st", "st", "acoustic", 2, 0.7, 3, ctc=True)]
    assert plot_locality(starred, 0.2) != plot_locality(rows, 0.2)
    assert csv_text(starred) == csv_text(rows)  # the CSV's columns are as before


@pytest.mark.slow
def test_locality_command(tmp_path: Path, prepared_data: Path, model_files: dict[str, Path],
                          png_size: Callable[[Path], tuple[int, int]], capsys: pytest.CaptureFixture) -> None:
    packed = tmp_path / "st_pack"
    assert main(["pack", "--model", str(model_files["st"]), "--data", str(prepared_data), "--out", str(packed)]) == 0
    out = tmp_path / "loc"
    argv = ["analyze", "locality", "--model", str(model_files["asr"]), str(model_files["mt"]), str(packed),
            "--data", str(prepared_data), "--split", "dev", "--max-utts", "4", "--batch-size", "3", "--out", str(out)]
    assert main(argv) == 0
    with (out / "locality.csv").open() as f:
        rows = list(csv.DictReader(f))
    assert [(r["model"], r["task"], r["encoder"], r["layer"]) for r in rows] == [
        ("asr", "asr", "acoustic", "1"), ("asr", "asr", "acoustic", "2"),
        ("mt", "mt", "textual", "1"), ("mt", "mt", "textual", "2"),
        ("st_pack", "st", "acoustic", "1"), ("st_pack", "st", "acoustic", "2"),
        ("st_pack", "st", "textual", "1"), ("st_pack", "st", "textual", "2")]
    assert all(0.0 < float(r["localness"]) <= 1.0 and r["utterances"] == "4" for r in rows)
    table = (out / "locality.md").read_text()
    assert "| layer | asr acoustic | mt textual | st_pack acoustic | st_pack textual |" in table
    assert table.count("\n| ") == 3  # header and two layers
    assert table in capsys.readouterr().out
    assert png_size(out / "locality.png") == (700, 450)


def test_locality_errors_name_the_input(tmp_path: Path, prepared_data: Path, model_files: dict[str, Path],
                                        capsys: pytest.CaptureFixture) -> None:
    base = ["analyze", "locality", "--model", str(model_files["asr"]), "--data", str(prepared_data), "--out",
            str(tmp_path)]
    assert main([*base, "--window", "0"]) == 2
    assert "--window must be in (0, 1]" in capsys.readouterr().err
    assert main([*base, "--split", "nosuch"]) == 2
    # with the splits the data directory holds: a misspelt split was told to run `sate prep` (twentieth pass)
    assert capsys.readouterr().err.endswith(f"nosuch.jsonl: manifest is missing (run `sate prep` first); "
                                            f"{prepared_data} holds the splits train, dev, tst-COMMON\n")
    assert main([*base[:3], str(tmp_path), *base[4:]]) == 2
    assert f"{tmp_path}: directory holds no model.pt" in capsys.readouterr().err
    # a --data typo was told to "run `sate vocab`" (evaluate: "run `sate prep`"), though the data were prepared
    assert main([*base[:5], str(tmp_path / "typo"), *base[6:]]) == 2
    assert capsys.readouterr().err.strip() == f"sate analyze: error: --data {tmp_path / 'typo'}: no such directory"
    # a named pipe at one of its files passed as a text stream: the run waited for a reader for ever once the
    # analysis was done (fifteenth hostile pass, the writes harness's wider run)
    out = tmp_path / "out"
    out.mkdir()
    for name in ("locality.csv", "locality.md"):
        os.mkfifo(out / name)
        assert main([*base[:-1], str(out)]) == 2
        assert capsys.readouterr().err.strip() == (f"sate analyze: error: --out {out}: {out / name} is not a regular "
                                                   f"file, where the command writes its file {name}")
        (out / name).unlink()
    # a named pipe at a pack's model.pt was "directory holds no model.pt", and at its cmvn.json (no --data) the run
    # asked for --data: evaluate, translate and stream named the pipe (fifteenth hostile pass, the reads harness)
    packed = tmp_path / "pack"
    assert main(["pack", "--model", str(model_files["asr"]), "--data", str(prepared_data), "--out", str(packed)]) == 0
    capsys.readouterr()
    talk = tmp_path / "talk.wav"
    sf.write(talk, np.random.default_rng(0).uniform(-0.1, 0.1, 16000).astype(np.float32), 16000)
    runs = {"cmvn.json": ["analyze", "attention", str(talk), "--model", str(packed), "--out", str(tmp_path / "a.png")],
            "model.pt": [*base[:3], str(packed), *base[4:-1], str(out)]}
    # (a pack's parts are checked as `sate evaluate` checks them since the review of the twenty-sixth pass: its words)
    said = {"cmvn.json": f"{packed}: packed model holds cmvn.json as a named pipe, not a file (the CMVN statistics)",
            "model.pt": f"{packed / 'model.pt'}: a named pipe, not a model file"}
    for name in ("cmvn.json", "model.pt"):
        (packed / name).unlink()
        os.mkfifo(packed / name)
        assert main(runs[name]) == 2
        assert capsys.readouterr().err.strip() == f"sate analyze: error: {said[name]}"


@pytest.mark.slow
def test_every_speech_model_is_checked_against_the_cmvn_statistics(tmp_path: Path, prepared_data: Path,
                                                                    model_files: dict[str, Path],
                                                                    capsys: pytest.CaptureFixture) -> None:
    """A model trained on other global CMVN statistics than DATA/cmvn.json was refused alone, but given after
    another speech model it shared that one's dataset unchecked and was analysed on the wrong normalisation, exit
    0. Each is now checked before any model is analysed."""
    import json

    from sate.data.cmvn_record import cmvn_record

    data = torch.load(model_files["st"], weights_only=True)
    data["cmvn"] = cmvn_record(prepared_data / "cmvn.json")
    torch.save(data, tmp_path / "same.pt")
    stats = json.loads((prepared_data / "cmvn.json").read_text())
    stats["mean"][3] -= 1.0
    (tmp_path / "cmvn.json").write_text(json.dumps(stats))
    data["cmvn"] = cmvn_record(tmp_path / "cmvn.json")
    torch.save(data, tmp_path / "other.pt")
    out = tmp_path / "out"
    assert main(["analyze", "locality", "--model", str(tmp_path / "same.pt"), str(tmp_path / "other.pt"), "--data",
                 str(prepared_data), "--split", "dev", "--max-utts", "2", "--out", str(out)]) == 2
    assert "not the CMVN statistics " in capsys.readouterr().err and not out.exists()


def test_a_full_disk_leaves_no_half_written_table_or_plot(tmp_path: Path, prepared_data: Path,
                                                          model_files: dict[str, Path],
                                                          monkeypatch: pytest.MonkeyPatch,
                                                          capsys: pytest.CaptureFixture,
                                                          full_disk: Callable[..., None]) -> None:
    """locality.csv, .md and .png were written straight into their files: a full disk (or a kill) left a cut table
    under the final name, beside none of the others."""
    full_disk(monkeypatch)
    out = tmp_path / "loc"
    assert main(["analyze", "locality", "--model", str(model_files["mt"]), "--data", str(prepared_data),
                 "--max-utts", "2", "--out", str(out)]) == 1
    assert "locality.csv: No space left on device (the disk is full" in capsys.readouterr().err
    assert not out.exists()  # nor the folder made for them


@pytest.mark.slow
def test_the_table_and_plot_are_replaced_together(tmp_path: Path, prepared_data: Path, model_files: dict[str, Path],
                                                  monkeypatch: pytest.MonkeyPatch,
                                                  capsys: pytest.CaptureFixture,
                                                  full_disk: Callable[..., None]) -> None:
    """Thirteenth hostile pass: locality.csv, .md and .png were each written whole, but one after the other, so a
    full disk (or a kill) at the plot left the new tables beside the old plot of other models."""
    out = tmp_path / "loc"
    argv = ["analyze", "locality", "--model", str(model_files["mt"]), "--data", str(prepared_data), "--max-utts", "2",
            "--out", str(out)]
    assert main(argv) == 0
    earlier = {p.name: p.read_bytes() for p in out.iterdir()}
    full_disk(monkeypatch, after=2)  # the plot, the third file, finds the disk full
    argv[3:4] = [str(model_files["asr"])]
    assert main(argv) == 1
    assert "locality.png: No space left on device" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in out.iterdir()} == earlier


@pytest.mark.slow
def test_a_second_run_into_a_folder_another_run_writes_is_refused(tmp_path: Path, prepared_data: Path,
                                                                    model_files: dict[str, Path],
                                                                    capsys: pytest.CaptureFixture) -> None:
    """Thirteenth hostile pass: two runs into one --out each replaced their set in turn, so one's table could end
    beside the other's plot. The folder is held (flock on the folder itself, no lock file) from before the models
    are analysed."""
    import fcntl
    import os

    out = tmp_path / "loc"
    argv = ["analyze", "locality", "--model", str(model_files["mt"]), "--data", str(prepared_data), "--max-utts", "2",
            "--out", str(out)]
    assert main(argv) == 0
    earlier = {p.name: p.read_bytes() for p in out.iterdir()}
    fd = os.open(out, os.O_RDONLY | os.O_DIRECTORY)  # the other run, analysing into out
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        argv[3:4] = [str(model_files["asr"])]
        assert main(argv) == 2
        assert f"{out} is in use by another sate analyze locality; wait for it" in capsys.readouterr().err
        assert {p.name: p.read_bytes() for p in out.iterdir()} == earlier
    finally:
        os.close(fd)
    assert main(argv) == 0 and {p.name for p in out.iterdir()} == set(earlier)  # no lock file among the results


def test_names_that_are_not_utf8_are_written_as_escapes(tmp_path: Path, prepared_data: Path,
                                                        model_files: dict[str, Path]) -> None:
    """A data directory or a model whose name is not UTF-8 was a UnicodeEncodeError traceback when locality.md
    (whose caption names the data) and locality.csv (the model) were written, after the work."""
    import os
    import shutil

    root = Path(os.fsdecode(os.fsencode(tmp_path) + b"/caf\xe9"))
    shutil.copytree(prepared_data, root / "data")
    shutil.copyfile(model_files["mt"], root / "mt.pt")
    assert main(["analyze", "locality", "--model", str(root / "mt.pt"), "--data", str(root / "data"), "--max-utts",
                 "2", "--out", str(tmp_path / "loc")]) == 0
    assert "caf\\udce9/data" in (tmp_path / "loc" / "locality.md").read_text(encoding="utf-8")
    assert "\nmt,mt,textual,1," in (tmp_path / "loc" / "locality.csv").read_text(encoding="utf-8")


def test_the_line_of_each_model_shows_its_name_escaped(tmp_path: Path, prepared_data: Path,
                                                       model_files: dict[str, Path],
                                                       capsys: pytest.CaptureFixture[str]) -> None:
    """Eighteenth hostile pass: the line naming each model printed a line break or a terminal escape in its name as
    it is."""
    model = tmp_path / "m\n\x1b[31m.pt"
    model.write_bytes(model_files["mt"].read_bytes())
    assert main(["analyze", "locality", "--model", str(model), "--data", str(prepared_data), "--max-utts", "1",
                 "--out", str(tmp_path / "loc")]) == 0
    line = capsys.readouterr().out.splitlines()[0]
    assert line.startswith(f"m\\n\\x1b[31m (mt, {tmp_path}/m\\n\\x1b[31m.pt): "), line


def test_a_model_named_with_a_bar_or_a_dollar_keeps_its_column_and_its_line() -> None:
    """Nineteenth hostile pass: a pack named `a|b` ended its column in locality.md one cell early (report and
    latency-plot escaped it), and `a$^$b` was a ValueError from matplotlib's formula parser at the legend."""
    rows = [LayerLocalness(name, "st", "acoustic", 1, 0.5, 2) for name in ("a|b", "a$^$b")]
    table = markdown_table(rows, "caption")
    assert "| layer | a\\|b acoustic | a$^$b acoustic |" in table
    assert plot_locality(rows, 0.1).startswith(b"\x89PNG")


def test_a_model_given_twice_is_refused(tmp_path: Path, prepared_data: Path, model_files: dict[str, Path],
                                        capsys: pytest.CaptureFixture) -> None:
    """Twenty-third hostile pass: one model file given as its directory and as its model.pt (or through a link to its
    directory) was analysed twice and drawn as two models of one model's values, exit 0."""
    asr, mt = model_files["asr"], model_files["mt"]
    (tmp_path / "link").symlink_to(asr.parent)
    out = tmp_path / "loc"
    for given in ((asr, asr.parent), (asr.parent, mt, tmp_path / "link"), (mt, mt)):
        assert main(["analyze", "locality", "--model", *map(str, given), "--data", str(prepared_data), "--max-utts",
                     "1", "--out", str(out)]) == 2
        err = capsys.readouterr().err
        assert err.strip() == (f"sate analyze: error: --model {given[-1]}: the model file of --model {given[0]} is "
                               "given already; give each model once"), err
        assert not out.exists()


@pytest.mark.slow
def test_an_experiment_not_averaged_yet_is_told_how_its_model_file_is_made(tmp_path: Path, prepared_data: Path,
                                                                            model_files: dict[str, Path],
                                                                            capsys: pytest.CaptureFixture) -> None:
    """Twenty-sixth hostile pass: `--model EXP` before `sate average` (or `--model EXP/checkpoints`) was "directory
    holds no model.pt (give a model file or a `sate pack` directory)", which named no way to the model file."""
    exp = tmp_path / "exp"
    (exp / "checkpoints").mkdir(parents=True)
    (exp / "checkpoints" / "last.ckpt").write_bytes(b"")
    base = ["analyze", "locality", "--data", str(prepared_data), "--max-utts", "1", "--out", str(tmp_path / "loc")]
    for given in (exp, exp / "checkpoints"):
        assert main([*base, "--model", str(given)]) == 2
        assert capsys.readouterr().err.strip().endswith(
            f"the experiment {exp} holds checkpoints but no model.pt yet; write it with `sate average --exp {exp} "
            "--last N` (or --best N)")
    (exp / "model.pt").write_bytes(model_files["asr"].read_bytes())
    assert main([*base, "--model", str(exp / "checkpoints")]) == 2
    assert capsys.readouterr().err.strip().endswith(f"(did you mean {exp / 'model.pt'}?)")
    assert main([*base, "--model", str(exp)]) == 0  # averaged: the experiment is read as before


@pytest.mark.slow
def test_a_pack_is_normalised_with_its_own_statistics_on_another_corpus(tmp_path: Path, prepared_data: Path,
                                                                         model_files: dict[str, Path],
                                                                         capsys: pytest.CaptureFixture) -> None:
    """Twenty-sixth hostile pass: a pack given with the --data of another corpus (held-out speech, which `sate
    evaluate` decodes with the pack's own cmvn.json) was refused as "not the CMVN statistics ... trained with", with
    no way to give its own; a model file so refused is now told to pack itself."""
    import json

    from sate.data.cmvn_record import cmvn_record

    stats = json.loads((prepared_data / "cmvn.json").read_text())
    stats["mean"][3] -= 1.0
    (tmp_path / "cmvn.json").write_text(json.dumps(stats))
    data = torch.load(model_files["asr"], weights_only=True)
    data["cmvn"] = cmvn_record(tmp_path / "cmvn.json")  # trained on another corpus: its statistics
    torch.save(data, tmp_path / "asr.pt")
    base = ["analyze", "locality", "--data", str(prepared_data), "--max-utts", "2"]
    assert main([*base, "--model", str(tmp_path / "asr.pt"), "--out", str(tmp_path / "a")]) == 2
    assert capsys.readouterr().err.strip().endswith(
        f"analyse it on the data directory it was trained on, or pack it (`sate pack --model {tmp_path / 'asr.pt'} "
        "--data TRAINING_DATA --out PACK`) and give the pack, which reads its own")
    other = tmp_path / "other_data"  # the corpus it was trained on, as far as `sate pack` reads it
    other.mkdir()
    for name in os.listdir(prepared_data):
        (other / name).symlink_to(prepared_data / name)
    (other / "cmvn.json").unlink()
    (other / "cmvn.json").write_text(json.dumps(stats))
    pack = tmp_path / "pack"
    assert main(["pack", "--model", str(tmp_path / "asr.pt"), "--data", str(other), "--out", str(pack)]) == 0
    out = tmp_path / "loc"
    # with a model of DATA's statistics beside it: each model normalised with its own
    assert main([*base, "--model", str(pack), str(model_files["asr"]), "--out", str(out)]) == 0
    capsys.readouterr()
    rows = list(csv.DictReader((out / "locality.csv").open()))
    src, tgt = Vocabulary.load(prepared_data, "src"), Vocabulary.load(prepared_data, "tgt")
    for name, cmvn in (("pack", tmp_path / "cmvn.json"), ("asr", prepared_data / "cmvn.json")):
        dataset = SpeechDataset.from_data_dir(prepared_data, "dev", src, tgt, CMVN.from_option(cmvn))
        batches = length_sorted_batches(Subset(dataset, [0, 1]), [dataset.lengths[0], dataset.lengths[1]], 1)
        model = model_from_file(tmp_path / "asr.pt" if name == "pack" else model_files["asr"])[0]
        expected = model_localness(model, batches, 0.1, CPU)
        assert [float(r["localness"]) for r in rows if r["model"] == name] == pytest.approx(
            [value for value, _ in expected.values()], abs=1e-6)
    values = {name: [r["localness"] for r in rows if r["model"] == name] for name in ("pack", "asr")}
    assert values["pack"] != values["asr"]  # the statistics differ, and so do the values


@pytest.mark.slow
def test_an_mt_pack_reads_its_own_vocabulary_on_another_corpus(tmp_path: Path, prepared_data: Path,
                                                                 model_files: dict[str, Path],
                                                                 capsys: pytest.CaptureFixture) -> None:
    """Twenty-sixth hostile pass: an MT pack given the --data of another corpus (its own vocabularies), which `sate
    evaluate` decodes with the pack's SentencePiece models, was refused for DATA's token list."""
    import shutil

    other = tmp_path / "other"
    shutil.copytree(prepared_data, other)
    assert main(["vocab", "--data", str(other), "--src-size", "40", "--tgt-size", "60"]) == 0
    pack = tmp_path / "mt"
    assert main(["pack", "--model", str(model_files["mt"]), "--data", str(prepared_data), "--out", str(pack)]) == 0
    base = ["analyze", "locality", "--max-utts", "3"]
    assert main([*base, "--model", str(model_files["mt"]), "--data", str(other), "--out", str(tmp_path / "a")]) == 2
    assert capsys.readouterr().err.strip().endswith(
        f"analyse it on the data directory it was trained on, or pack it (`sate pack --model {model_files['mt']} "
        "--data TRAINING_DATA --out PACK`) and give the pack, which reads its own")
    assert main([*base, "--model", str(pack), "--data", str(other), "--out", str(tmp_path / "packed")]) == 0
    assert main([*base, "--model", str(model_files["mt"]), "--data", str(prepared_data), "--out",
                 str(tmp_path / "own")]) == 0
    capsys.readouterr()
    # the same sentences, encoded with the same vocabulary: the same values
    packed, own = (list(csv.reader((tmp_path / name / "locality.csv").open())) for name in ("packed", "own"))
    assert [row[2:] for row in packed] == [row[2:] for row in own] and len(packed) == 3
    assert main(["analyze", "attention", "--model", str(pack), "--data", str(other), "--utt", "ted_2_0", "--out",
                 str(tmp_path / "heat.png")]) == 0


@pytest.mark.slow
def test_an_mt_model_of_a_marian_data_directory(tmp_path: Path, prepared_data: Path, marian_dir: Path,
                                                capsys: pytest.CaptureFixture) -> None:
    """Twenty-sixth hostile pass: an MT model on a Marian vocabulary (`sate vocab --marian`), analysed on the data
    directory it was trained on, was told its source token list differs from tokens_src.txt, and to analyse it on the
    data directory it was trained on."""
    import shutil

    from sate.data.marian_vocab import marian_pieces
    from sate.models import build_model, save_model_file
    from sate.models.hub.load import load_hub_parts

    data = tmp_path / "data"
    shutil.copytree(prepared_data, data)
    assert main(["vocab", "--data", str(data), "--marian", str(marian_dir)]) == 0
    pieces = marian_pieces(marian_dir)
    model = build_model("mt", {"textual": {"type": "hf_marian", "path": str(marian_dir)},
                               "decoder": {"type": "hf_marian"}}, len(pieces), len(pieces))
    load_hub_parts(model, pieces, pieces, log=lambda line: None)
    save_model_file(tmp_path / "mt" / "model.pt", model.eval(), pieces, pieces)
    assert main(["analyze", "locality", "--model", str(tmp_path / "mt"), "--data", str(data), "--max-utts", "2",
                 "--out", str(tmp_path / "loc")]) == 0
    rows = list(csv.DictReader((tmp_path / "loc" / "locality.csv").open()))
    assert {r["encoder"] for r in rows} == {"textual"} and all(0 < float(r["localness"]) <= 1 for r in rows)
    assert main(["analyze", "attention", "--model", str(tmp_path / "mt"), "--data", str(data), "--utt", "ted_2_0",
                 "--out", str(tmp_path / "heat.png")]) == 0
    capsys.readouterr()
    # a model of another token list is refused naming the Marian vocabulary compared, not tokens_src.txt (review26i)
    save_model_file(tmp_path / "mt2" / "model.pt", model.eval(), [*pieces[:5], "▁other", *pieces[6:]], pieces)
    assert main(["analyze", "locality", "--model", str(tmp_path / "mt2" / "model.pt"), "--data", str(data),
                 "--max-utts", "2", "--out", str(tmp_path / "loc2")]) == 2
    assert f"its source token list differs from {data / 'marian'}; " in capsys.readouterr().err


def _transcript_only(data: Path) -> None:
    """Every split's rows without translations (``tgt`` null), as LibriSpeech and Kaldi corpora give them."""
    import json

    for split in ("train", "dev", "tst-COMMON"):
        manifest = data / f"{split}.jsonl"
        rows = [{**json.loads(line), "tgt": None} for line in manifest.read_text(encoding="utf-8").splitlines()]
        manifest.write_text("".join(json.dumps(row, ensure_ascii=False) + "\n" for row in rows), encoding="utf-8")

@pytest.mark.slow
def test_speech_models_on_a_transcript_only_corpus(tmp_path: Path, prepared_data: Path, model_files: dict[str, Path],
                                                   capsys: pytest.CaptureFixture) -> None:
    """Twenty-sixth hostile pass: an ASR model analysed on a transcript-only corpus (LibriSpeech, Kaldi: `tgt` null,
    no target vocabulary), which `sate evaluate` scores, was refused: "rows have no translation ...: it can train ASR
    only", then "spm_tgt.model is missing". The analysis reads no translation; the values are those of the same
    audio with translations."""
    import shutil

    data = tmp_path / "asr_data"
    shutil.copytree(prepared_data, data)
    _transcript_only(data)
    for name in ("spm_tgt.model", "tokens_tgt.txt"):
        (data / name).unlink()
    models = [str(model_files["asr"]), str(model_files["st"])]
    for where, name in ((data, "only"), (prepared_data, "both")):
        assert main(["analyze", "locality", "--model", *models, "--data", str(where), "--max-utts", "2", "--out",
                     str(tmp_path / name)]) == 0
    capsys.readouterr()
    assert (tmp_path / "only" / "locality.csv").read_text() == (tmp_path / "both" / "locality.csv").read_text()
    assert main(["analyze", "attention", "--model", str(model_files["asr_hybrid"]), "--data", str(data), "--utt",
                 "ted_2_0", "--out", str(tmp_path / "heat.png")]) == 0


def _pack(model_file: Path, data: Path, out: Path, capsys: pytest.CaptureFixture) -> Path:
    assert main(["pack", "--model", str(model_file), "--data", str(data), "--out", str(out)]) == 0
    capsys.readouterr()
    return out


@pytest.mark.slow
def test_a_pack_whose_vocabulary_is_not_its_models_is_refused(tmp_path: Path, prepared_data: Path,
                                                               model_files: dict[str, Path],
                                                               capsys: pytest.CaptureFixture) -> None:
    """Review of the twenty-sixth hostile pass: a pack's own vocabularies, read since that pass, were not compared with
    its model's token lists (a vocabulary copied into the pack, a model.pt copied over its own): an IndexError
    traceback or values of wrongly encoded ids, exit 0, where `sate evaluate` refuses the pack."""
    import shutil

    other = tmp_path / "other"
    shutil.copytree(prepared_data, other)
    assert main(["vocab", "--data", str(other), "--src-size", "40", "--tgt-size", "60"]) == 0
    for task in ("mt", "st"):
        pack = _pack(model_files[task], prepared_data, tmp_path / task, capsys)
        for name in ("spm_src.model", "tokens_src.txt"):
            shutil.copy(other / name, pack / name)
        expected = (f"sate analyze: error: {pack / 'model.pt'}: its src token list differs from "
                    f"{pack / 'tokens_src.txt'}")
        assert main(["analyze", "locality", "--model", str(pack), "--data", str(prepared_data), "--max-utts", "2",
                     "--out", str(tmp_path / "loc")]) == 2
        assert capsys.readouterr().err.strip() == expected
        assert main(["analyze", "attention", "--model", str(pack), "--data", str(prepared_data), "--utt", "ted_2_0",
                     "--out", str(tmp_path / "heat.png")]) == 2
        assert capsys.readouterr().err.strip() == expected
        assert not (tmp_path / "loc").exists() and not (tmp_path / "heat.png").exists()


@pytest.mark.slow
def test_a_speech_pack_on_held_out_speech_with_no_vocabulary(tmp_path: Path, prepared_data: Path,
                                                             model_files: dict[str, Path],
                                                             capsys: pytest.CaptureFixture) -> None:
    """Review of the twenty-sixth hostile pass: an ST or ASR pack on a data directory of `sate prep` and `sate
    features` alone (held-out speech, which `sate evaluate` decodes) was told "spm_src.model is missing (run `sate
    vocab`)", for transcripts the analysis never reads; on a transcript-only corpus `sate vocab` refuses. A pack reads
    its own source vocabulary; the values are those on the data directory with its vocabularies."""
    import shutil

    packs = [str(_pack(model_files[task], prepared_data, tmp_path / task, capsys)) for task in ("asr", "st")]
    data = tmp_path / "held_out"
    shutil.copytree(prepared_data, data)
    _transcript_only(data)
    for name in os.listdir(data):
        if name.startswith(("spm_", "tokens_")) or name == "vocab.json":
            (data / name).unlink()
    for where, name in ((data, "held_out"), (prepared_data, "own")):
        assert main(["analyze", "locality", "--model", *packs, "--data", str(where), "--max-utts", "2", "--out",
                     str(tmp_path / f"loc_{name}")]) == 0
    assert (tmp_path / "loc_held_out" / "locality.csv").read_text() == (tmp_path / "loc_own" /
                                                                         "locality.csv").read_text()
    assert main(["analyze", "attention", "--model", packs[1], "--data", str(data), "--utt", "ted_2_0", "--out",
                 str(tmp_path / "heat.png")]) == 0
    # a model file still reads DATA's vocabulary, named when it is missing
    assert main(["analyze", "locality", "--model", str(model_files["asr"]), "--data", str(data), "--out",
                 str(tmp_path / "loc_file")]) == 2
    assert "spm_src.model" in capsys.readouterr().err


@pytest.mark.slow
def test_a_pack_is_told_as_a_pack(tmp_path: Path, prepared_data: Path, model_files: dict[str, Path],
                                  capsys: pytest.CaptureFixture) -> None:
    """Review of the twenty-sixth hostile pass: a pack's model.pt given on another corpus, and a pack missing its
    cmvn.json (read with DATA's statistics), were told to "pack it (`sate pack ...`)", though each is packed; `sate
    evaluate` refuses the second as a pack missing cmvn.json. `attention --help` said --data gave the statistics."""
    import json
    import shutil

    from sate.data.cmvn_record import cmvn_record

    stats = json.loads((prepared_data / "cmvn.json").read_text())
    stats["mean"][3] -= 1.0
    other = tmp_path / "other"  # another corpus: other statistics
    shutil.copytree(prepared_data, other)
    (other / "cmvn.json").write_text(json.dumps(stats))
    data = torch.load(model_files["asr"], weights_only=True)
    data["cmvn"] = cmvn_record(prepared_data / "cmvn.json")
    torch.save(data, tmp_path / "asr.pt")
    pack = _pack(tmp_path / "asr.pt", prepared_data, tmp_path / "packs" / "asr", capsys)
    base = ["analyze", "locality", "--data", str(other), "--max-utts", "1", "--out", str(tmp_path / "loc")]
    assert main([*base, "--model", str(pack / "model.pt")]) == 2
    assert capsys.readouterr().err.strip().endswith(
        f"analyse it on the data directory it was trained on, or give its pack {pack} instead of its model.pt, which "
        "reads its own")
    assert main([*base, "--model", str(pack)]) == 0  # the advice, followed
    capsys.readouterr()
    (pack / "cmvn.json").unlink()
    for data_dir in (other, prepared_data):
        assert main([*base[:3], str(data_dir), *base[4:], "--model", str(pack)]) == 2
        assert capsys.readouterr().err.strip() == (f"sate analyze: error: {pack}: packed model is missing cmvn.json "
                                                   "(the CMVN statistics)")
    with pytest.raises(SystemExit):
        main(["analyze", "attention", "--help"])
    assert "the global CMVN statistics of a model file or experiment (a pack reads its own)" in " ".join(
        capsys.readouterr().out.split())


@pytest.mark.slow  # four runs of the command: 0.5 s
def test_out_of_memory_over_long_rows_gives_advice_that_works(tmp_path: Path, prepared_data: Path,
                                                             model_files: dict[str, Path],
                                                             capsys: pytest.CaptureFixture,
                                                             monkeypatch: pytest.MonkeyPatch) -> None:
    """A split of whole recordings (a Kaldi directory without `segments`) ran the encoder out of memory, and the line
    advised "give it less at once (smaller inputs or batches)", which does nothing at `--batch-size 1`, the default
    (hand31n). The longest row is named, with what to do; --batch-size 1 is advised only where it was larger. Rows
    short already (under LONG_ROW) are not told to be cut, which would do nothing either (review32k): the memory is
    what to raise (a ulimit named where there is one), or, on a GPU, --device cpu."""
    from sate.analysis import cli, locality

    def exhausted(*_: object) -> None:
        raise RuntimeError("[enforce fail at alloc_cpu.cpp:117] DefaultCPUAllocator: can't allocate memory: you tried "
                           "to allocate 32400000000 bytes. Error code 12 (Cannot allocate memory)")

    monkeypatch.setattr(locality, "model_localness", exhausted)
    monkeypatch.setattr(cli, "address_space_limit", lambda: None, raising=False)
    rows = [json.loads(line) for line in (prepared_data / "dev.jsonl").read_text().splitlines()]
    longest = max(rows, key=lambda row: row["n_frames"])
    assert longest["duration"] < 30  # the fixture's rows are short: a split of segments
    base = ["analyze", "locality", "--model", str(model_files["asr"]), "--data", str(prepared_data), "--split", "dev",
            "--device", "cpu"]
    said = (f"sate analyze: error: out of memory encoding dev of {prepared_data} with asr on cpu: its longest row, "
            f"{longest['id']}, lasts {longest['duration']:,.1f} s ({longest['n_frames']:,} frames)")
    batch = "give --batch-size 1 (one row at a time; it was 4), or "
    assert main([*base, "--out", str(tmp_path / "short")]) == 2
    assert capsys.readouterr().err == (f"{said}, short already: the model and its activations need more memory than "
                                       "the machine could give; free memory (other processes), or run it on a "
                                       "machine with more\n")
    monkeypatch.setattr(cli, "address_space_limit", lambda: 2 * 2**30)
    assert main([*base, "--batch-size", "4", "--out", str(tmp_path / "limited")]) == 2
    assert capsys.readouterr().err == (f"{said}, short already: the model and its activations need more memory than "
                                       "a memory limit allows (ulimit -v: 2,048 MiB of address space); " + batch +
                                       "raise or lift the limit\n")
    monkeypatch.setattr(cli, "LONG_ROW", longest["duration"] / 2)  # rows long for it: whole recordings
    advice = "analyse rows cut into segments of a few seconds (a Kaldi `segments` file for `sate prep`: docs/data.md)\n"
    long = f"{said}, and self-attention's memory grows with the square of a row's length; "
    assert main([*base, "--out", str(tmp_path / "one")]) == 2
    assert capsys.readouterr().err == long + advice
    assert main([*base, "--batch-size", "4", "--out", str(tmp_path / "four")]) == 2
    assert capsys.readouterr().err == long + batch + advice
    assert not (tmp_path / "one").exists() or not any((tmp_path / "one").iterdir())


def test_out_of_memory_on_a_gpu_over_short_rows_advises_the_cpu() -> None:
    """On a GPU, rows short already out of memory: the model does not fit what the GPU has free, and `--device cpu`
    is the way on (review32k); cutting the rows, the advice before, does nothing. No GPU needed: the line alone."""
    import argparse
    from types import SimpleNamespace

    from sate.analysis.cli import _too_long

    args = argparse.Namespace(split="dev", data=Path("data"), batch_size=1)
    said = _too_long(args, SimpleNamespace(name="hub"), {"id": "u1", "duration": 6.0}, 600, torch.device("cuda", 0))
    assert said == ("out of memory encoding dev of data with hub on cuda:0: its longest row, u1, lasts 6.0 s (600 "
                    "frames), short already: the model and its activations need more memory than cuda:0 has free; "
                    "give --device cpu (the machine's memory; slower), or free the GPU of other processes")
    assert "segments" in _too_long(args, SimpleNamespace(name="hub"), {"id": "u1"}, 90_000, torch.device("cuda", 0))
