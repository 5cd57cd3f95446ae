"""Heatmaps: CTC position labels, figure sizes, and `sate analyze attention` on tiny models."""

from __future__ import annotations

import json
import os
import shutil
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf
import torch

from sate.analysis import cli as analyze
from sate.analysis.heatmap import (
    EOS_LABEL,
    HEATMAP_DPI,
    ctc_frame_labels,
    figure_inches,
    parse_choice,
    select,
    shrink_segment_labels,
    utterance_attention,
)
from sate.cli import main
from sate.data.audio import read_segment
from sate.data.cmvn_record import cmvn_record
from sate.data.manifest import read_manifest
from sate.errors import SateError
from sate.models.shrink import ctc_shrink

CPU = torch.device("cpu")


def logits_for(path: list[int], vocab: int = 9) -> torch.Tensor:
    """(T, V) logits whose greedy path is `path`."""
    return torch.nn.functional.one_hot(torch.tensor(path), vocab).float()


def test_ctc_labels_by_hand() -> None:
    path = [0, 5, 5, 0, 7, 7, 7, 0, 5, 5]
    assert ctc_frame_labels(logits_for(path)) == [None, 5, None, None, 7, None, None, None, 5, None]
    assert shrink_segment_labels(logits_for(path), keep_blank=False) == [5, 7, 5]
    assert shrink_segment_labels(logits_for(path), keep_blank=True) == [None, 5, None, 7, None, 5]
    assert shrink_segment_labels(logits_for([0, 0, 0]), keep_blank=False) == [None]  # all blank: one segment
    assert shrink_segment_labels(logits_for([3, 0, 3]), keep_blank=False) == [3, 3]


@pytest.mark.parametrize("keep_blank", [False, True])
def test_shrink_labels_match_the_shrink_adaptor(keep_blank: bool) -> None:
    g = torch.Generator().manual_seed(0)
    for _ in range(50):
        frames = int(torch.randint(1, 30, (1,), generator=g))
        logits = torch.randn(frames, 4, generator=g) + torch.tensor([1.0, 0, 0, 0])  # blank-heavy, with repeats
        _, _, lengths = ctc_shrink(torch.zeros(1, frames, 2), logits[None], torch.tensor([frames]), keep_blank)
        assert len(shrink_segment_labels(logits, keep_blank)) == int(lengths[0])


def test_figure_sizes_by_hand() -> None:
    assert figure_inches(5, 20) == (6.0, 4.0)  # at the minimum
    assert figure_inches(10, 100) == (15.0, 4.75)  # 3 + 12 in wide; 2.5 + 2.2 = 4.7, to the quarter inch
    assert figure_inches(200, 500) == (30.0, 20.0)  # at the maximum


def test_layer_and_head_choice() -> None:
    assert parse_choice("mean") is None and parse_choice("3") == 3
    # other scripts' digits, spaces and '_' (nineteenth hostile pass: '1_0' was layer 10, '١' layer 1, where every
    # other whole-number option refuses them)
    for bad in ("0", "-1", "last", "\u0661", "\uff11", "1\u0662", " 2 ", "1_0", "\u00b9"):
        with pytest.raises(ValueError):
            parse_choice(bad)


def expected_size(rows: int, cols: int) -> tuple[int, int]:
    width, height = figure_inches(rows, cols)
    return int(width * HEATMAP_DPI), int(height * HEATMAP_DPI)


@pytest.mark.slow
def test_attention_command_with_shrink(tmp_path: Path, prepared_data: Path, model_files: dict[str, Path],
                                       png_size: Callable[[Path], tuple[int, int]],
                                       capsys: pytest.CaptureFixture) -> None:
    utt = read_manifest(prepared_data / "dev.jsonl")[1]["id"]
    model = analyze.load_model(model_files["st_shrink"])
    view = utterance_attention(model.model, model.meta, analyze.utterance_batch(model, prepared_data, "dev", utt), CPU)
    # one textual position per shrink segment, labelled by its token; rows: greedy tokens (+ </s>)
    assert len(view.positions["textual"]) == view.maps[("textual", 1)].size(-1)
    assert view.positions["textual"] == [t for t in view.positions["acoustic"] if t is not None] or \
        view.positions["textual"] == [None]
    assert view.translation == "".join(t for t in view.targets if t != EOS_LABEL).replace("\u2581", " ").strip()
    cross = select(view, "cross", None, None)
    assert cross.shape == (len(view.targets), len(view.positions["textual"]))
    assert torch.allclose(cross.sum(-1), torch.ones(len(view.targets)))
    assert torch.equal(select(view, "cross", 3, 2), view.maps[("cross", 3)][1])
    assert torch.allclose(select(view, "cross", None, None), torch.stack([view.maps[("cross", k)]
                                                                         for k in (1, 2, 3)]).mean((0, 1)))

    out = tmp_path / "heat.png"
    argv = ["analyze", "attention", "--model", str(model_files["st_shrink"]), "--data", str(prepared_data),
            "--split", "dev", "--utt", utt, "--out", str(out), "--layer", "3", "--head", "2",
            "--encoder-layers", "1", "2"]
    assert main(argv) == 0
    assert png_size(out) == expected_size(len(view.targets), len(view.positions["textual"]))
    for encoder in ("acoustic", "textual"):
        size = len(view.positions[encoder])
        for layer in (1, 2):
            assert png_size(tmp_path / f"heat.{encoder}-layer{layer}.png") == expected_size(size, size)
    printed = capsys.readouterr().out
    assert f"{utt}: output: {view.translation}" in printed


@pytest.mark.slow
def test_attention_command_on_mt(tmp_path: Path, prepared_data: Path, model_files: dict[str, Path],
                                 png_size: Callable[[Path], tuple[int, int]]) -> None:
    row = read_manifest(prepared_data / "dev.jsonl")[0]
    model = analyze.load_model(model_files["mt"])
    view = utterance_attention(model.model, model.meta, analyze.utterance_batch(model, prepared_data, "dev",
                                                                                row["id"]), CPU)
    assert view.transcript == row["src_norm"]  # the source tokens label the columns
    assert all(label is not None for label in view.positions["textual"])
    out = tmp_path / "mt.png"
    assert main(["analyze", "attention", "--model", str(model_files["mt"]), "--data", str(prepared_data),
                 "--utt", row["id"], "--out", str(out)]) == 0
    assert png_size(out) == expected_size(len(view.targets), len(view.positions["textual"]))


def test_hybrid_asr_attends_to_acoustic_frames(prepared_data: Path, model_files: dict[str, Path]) -> None:
    model = analyze.load_model(model_files["asr_hybrid"])
    utt = read_manifest(prepared_data / "dev.jsonl")[0]["id"]
    view = utterance_attention(model.model, model.meta, analyze.utterance_batch(model, prepared_data, "dev", utt), CPU)
    assert view.memory == "acoustic" and set(view.positions) == {"acoustic"}
    assert select(view, "cross", 1, None).shape == (len(view.targets), len(view.positions["acoustic"]))
    assert set(view.targets) <= set(model.meta["src_tokens"]) | {EOS_LABEL}  # an ASR decoder writes source pieces


def test_a_blank_the_hybrid_asrs_decoder_writes_is_no_output_text(prepared_data: Path,
                                                                 model_files: dict[str, Path]) -> None:
    """A hybrid ASR's decoder covers the CTC token list, `<blank>` included: where it wrote one, the printed output
    showed "<blank>" (the twenty-sixth pass's note); the axis keeps it, the text skips it as `Vocabulary.decode`
    does."""
    model = analyze.load_model(model_files["asr_hybrid"])
    with torch.no_grad():  # the decoder writes <blank> (id 0) wherever it may
        model.model.decoder.output_layer.bias[0] = 1e4
    utt = read_manifest(prepared_data / "dev.jsonl")[0]["id"]
    view = utterance_attention(model.model, model.meta, analyze.utterance_batch(model, prepared_data, "dev", utt), CPU)
    assert view.targets and set(view.targets) == {"<blank>"}
    assert view.translation == ""


@pytest.mark.slow
def test_baseline_st_attends_to_acoustic_frames(tmp_path: Path, prepared_data: Path, model_files: dict[str, Path],
                                                png_size: Callable[[Path], tuple[int, int]],
                                                capsys: pytest.CaptureFixture[str]) -> None:
    """The E2E ST baseline has no textual encoder: its memory is the acoustic encoder's output. A layer given twice
    is drawn once (`--encoder-layers 2 2` drew and named each map twice)."""
    model = analyze.load_model(model_files["st_baseline"])
    utt = read_manifest(prepared_data / "dev.jsonl")[0]["id"]
    view = utterance_attention(model.model, model.meta, analyze.utterance_batch(model, prepared_data, "dev", utt), CPU)
    assert view.memory == "acoustic" and set(view.positions) == {"acoustic"}
    assert {kind for kind, _ in view.maps} == {"acoustic", "cross"}
    out = tmp_path / "baseline.png"
    assert main(["analyze", "attention", "--model", str(model_files["st_baseline"]), "--data", str(prepared_data),
                 "--utt", utt, "--out", str(out), "--encoder-layers", "2", "2"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["baseline.acoustic-layer2.png", "baseline.png"]
    assert capsys.readouterr().out.splitlines()[-1] == f"wrote {out}, {tmp_path / 'baseline.acoustic-layer2.png'}"
    assert png_size(out) == expected_size(len(view.targets), len(view.positions["acoustic"]))


@pytest.mark.slow
def test_audio_file_gives_the_prepared_features(tmp_path: Path, prepared_data: Path, model_files: dict[str, Path],
                                                png_size: Callable[[Path], tuple[int, int]]) -> None:
    row = read_manifest(prepared_data / "dev.jsonl")[2]
    wav = tmp_path / "segment.wav"
    sf.write(wav, read_segment(row["audio"], row["offset"], row["duration"]), 16000)
    model = analyze.load_model(model_files["st"])
    from_file = analyze.audio_batch(model, wav, prepared_data)
    from_split = analyze.utterance_batch(model, prepared_data, "dev", row["id"])
    assert torch.equal(from_file["feats_lengths"], from_split["feats_lengths"])
    assert torch.allclose(from_file["feats"], from_split["feats"], atol=1e-3)
    out = tmp_path / "file.png"
    assert main(["analyze", "attention", "--model", str(model_files["st"]), str(wav), "--data", str(prepared_data),
                 "--out", str(out)]) == 0
    view = utterance_attention(model.model, model.meta, from_file, CPU)
    # league adaptor: one textual position per acoustic frame, both labelled the same way
    assert view.positions["textual"] == view.positions["acoustic"]
    assert png_size(out) == expected_size(len(view.targets), len(view.positions["textual"]))


@pytest.mark.slow
def test_attention_errors_name_the_input(tmp_path: Path, prepared_data: Path, model_files: dict[str, Path],
                                         capsys: pytest.CaptureFixture) -> None:
    out = str(tmp_path / "h.png")
    base = ["analyze", "attention", "--data", str(prepared_data), "--out", out]
    utt = read_manifest(prepared_data / "dev.jsonl")[0]["id"]
    dev_ids = [row["id"] for row in read_manifest(prepared_data / "dev.jsonl")]
    tested = read_manifest(prepared_data / "tst-COMMON.jsonl")[-1]["id"]
    cases = [
        (["--model", str(model_files["st"]), "--utt", "nosuch"],
         f"dev.jsonl: no utterance 'nosuch' (5 utterances, e.g. {', '.join(dev_ids[:3])})\n"),
        # an id of tst-COMMON, where `sate evaluate` decodes, looked up in the default dev (twenty-third hostile pass)
        (["--model", str(model_files["mt"]), "--utt", tested],
         f"dev.jsonl: no utterance '{tested}' (5 utterances, e.g. {', '.join(dev_ids[:3])}); it is in "
         "tst-COMMON.jsonl: give --split tst-COMMON\n"),
        (["--model", str(model_files["st"]), "--utt", utt, "--layer", "3"], "--layer 3: the decoder has 2 layers"),
        (["--model", str(model_files["st"]), "--utt", utt, "--head", "4"], "--head 4: the decoder has 2 heads"),
        (["--model", str(model_files["st"]), "--utt", utt, "--encoder-layers", "5"],
         "--encoder-layers 5: the encoders of st have 1..2 layers"),
        (["--model", str(model_files["asr"]), "--utt", utt],  # named (twenty-second hostile pass: it named no file)
         f"--model {model_files['asr']}: a CTC-only ASR model has no decoder"),
        (["--model", str(model_files["st"])], "give an audio FILE, or --data DATA_DIR and --utt ID"),
        (["--model", str(model_files["mt"]), str(tmp_path / "a.wav")], "is an MT model: it reads text"),
        (["--model", str(model_files["st"]), str(tmp_path / "long.wav")],
         "long.wav: 120.1 s of audio; `sate analyze attention` reads a file whole as one utterance"),
        # --split with a FILE was ignored, the default told apart from one given (twenty-fourth hostile pass)
        *[(["--model", str(model_files["st"]), str(tmp_path / "long.wav"), "--split", split],
           f"--split {split}: an audio FILE is analysed whole, and --split names the split holding --utt")
          for split in ("tst-COMMON", "dev")],
    ]
    # a whole recording was read as one utterance: a 20-minute file held every attention map (gigabytes)
    sf.write(tmp_path / "long.wav", np.zeros(16000 * 1201 // 10, np.int16), 16000)
    for extra, message in cases:
        assert main([*base, *extra]) == 2, extra
        assert message in capsys.readouterr().err


def test_a_cmvn_json_of_other_statistics_than_the_model_records_is_refused(tmp_path: Path, prepared_data: Path,
                                                                           model_files: dict[str, Path]) -> None:
    """The analysis normalises features as decoding does: with the statistics the model was trained with."""
    data = torch.load(model_files["st"], weights_only=True)
    data["cmvn"] = cmvn_record(prepared_data / "cmvn.json")
    torch.save(data, tmp_path / "st.pt")
    model = analyze.load_model(tmp_path / "st.pt")
    assert analyze.normalizer(model, prepared_data).mean is not None
    other = tmp_path / "data"
    other.mkdir()
    stats = json.loads((prepared_data / "cmvn.json").read_text())
    stats["mean"][3] -= 1.0
    (other / "cmvn.json").write_text(json.dumps(stats))
    with pytest.raises(SateError, match=r"data/cmvn.json: not the CMVN statistics .*st.pt was trained with "
                                        r"\(mean\[3\]"):
        analyze.normalizer(model, other)
    (tmp_path / "config.yaml").write_text("task: st\ndata: {cmvn: none}\n")  # a run's snapshot, edited
    with pytest.raises(SateError, match=r"config.yaml: data.cmvn none: .*st.pt was trained with global CMVN"):
        analyze.load_model(tmp_path / "st.pt")  # it read raw features without a word


def test_every_map_beside_out_is_checked_before_any_work(tmp_path: Path, prepared_data: Path,
                                                         model_files: dict[str, Path],
                                                         capsys: pytest.CaptureFixture) -> None:
    """`--encoder-layers` writes `<stem>.<encoder>-layer<l>.png` beside --out; those were not checked: a symlink
    there into a checkpoint folder replaced the resume point with a PNG, and a file of the user's was replaced, both
    after all the work."""
    checkpoints = tmp_path / "exp" / "checkpoints"
    checkpoints.mkdir(parents=True)
    last = checkpoints / "last.ckpt"
    last.write_bytes(b"PK\x03\x04 the resume point")
    (tmp_path / "heat.textual-layer1.png").symlink_to(last)
    notes = tmp_path / "heat.acoustic-layer2.png"
    notes.write_text("my notes\n")
    utt = read_manifest(prepared_data / "dev.jsonl")[0]["id"]
    base = ["analyze", "attention", "--model", str(model_files["st"]), "--data", str(prepared_data), "--utt", utt,
            "--out", str(tmp_path / "heat.png"), "--encoder-layers"]
    for layers, says in ((["1"], "checkpoint folder"),
                         (["2"], "heat.acoustic-layer2.png: refusing to replace it: it is not a PNG image"),
                         (["0"], "--encoder-layers 0: layers are numbered from 1")):
        assert main([*base, *layers]) == 2, layers
        err = capsys.readouterr().err
        assert says in err and err.count("\n") == 1, err
    assert last.read_bytes() == b"PK\x03\x04 the resume point" and notes.read_text() == "my notes\n"
    assert not (tmp_path / "heat.png").exists()  # refused before any work


@pytest.mark.slow
def test_a_full_disk_leaves_no_half_written_map(tmp_path: Path, prepared_data: Path, model_files: dict[str, Path],
                                                monkeypatch: pytest.MonkeyPatch,
                                                capsys: pytest.CaptureFixture, full_disk: Callable[..., None]) -> None:
    """The PNGs were drawn straight into their files: a full disk or a kill left a cut PNG under the final name."""
    full_disk(monkeypatch)
    out = tmp_path / "maps"
    out.mkdir()
    utt = read_manifest(prepared_data / "dev.jsonl")[0]["id"]
    assert main(["analyze", "attention", "--model", str(model_files["st"]), "--data", str(prepared_data), "--utt",
                 utt, "--out", str(out / "heat.png"), "--encoder-layers", "1"]) == 1
    assert "heat.png: No space left on device (the disk is full" in capsys.readouterr().err
    assert sorted(out.iterdir()) == []



@pytest.mark.slow
def test_an_earlier_runs_maps_go_with_the_map_they_were_drawn_with(tmp_path: Path, prepared_data: Path,
                                                                   model_files: dict[str, Path],
                                                                   capsys: pytest.CaptureFixture) -> None:
    """Twenty-third hostile pass: an ST model's maps with `--encoder-layers 1 2`, then a hybrid ASR model's with
    `--encoder-layers 1` into the same --out: the ST model's `heat.textual-layer*.png` and `heat.acoustic-layer2.png`
    stayed beside the ASR model's cross-attention, one folder of maps of two models, exit 0. The earlier run's maps
    that this run does not draw go with it; other files beside it stay."""
    utt = read_manifest(prepared_data / "dev.jsonl")[0]["id"]
    out = tmp_path / "heat.png"
    argv = ["analyze", "attention", "--data", str(prepared_data), "--utt", utt, "--out", str(out), "--encoder-layers"]
    assert main([*argv, "1", "2", "--model", str(model_files["st"])]) == 0
    assert len(list(tmp_path.iterdir())) == 5
    kept = ["heat.notes.txt", "heat.textual-layer.png", "other.textual-layer1.png"]
    for name in kept:
        (tmp_path / name).write_text("the user's")
    capsys.readouterr()
    assert main([*argv, "1", "--model", str(model_files["asr_hybrid"])]) == 0
    assert capsys.readouterr().out.splitlines()[-1] == f"wrote {out}, {tmp_path / 'heat.acoustic-layer1.png'}"
    assert sorted(p.name for p in tmp_path.iterdir()) == sorted(["heat.acoustic-layer1.png", "heat.png", *kept])


@pytest.mark.slow
def test_the_maps_of_one_run_are_replaced_together(tmp_path: Path, prepared_data: Path,
                                                   model_files: dict[str, Path], monkeypatch: pytest.MonkeyPatch,
                                                   capsys: pytest.CaptureFixture,
                                                   full_disk: Callable[..., None]) -> None:
    """Thirteenth hostile pass: the cross-attention map and each layer's map beside it were written one after the
    other: a full disk (or a kill) at a layer's map left the new cross-attention map beside the old layer maps of
    another utterance."""
    rows = read_manifest(prepared_data / "dev.jsonl")
    argv = ["analyze", "attention", "--model", str(model_files["st"]), "--data", str(prepared_data), "--utt",
            rows[0]["id"], "--out", str(tmp_path / "heat.png"), "--encoder-layers", "1"]
    assert main(argv) == 0
    earlier = {p.name: p.read_bytes() for p in tmp_path.iterdir()}
    assert len(earlier) == 3
    full_disk(monkeypatch, after=2)  # the third map finds the disk full
    argv[argv.index("--utt") + 1] = rows[1]["id"]
    assert main(argv) == 1
    assert "No space left on device" in capsys.readouterr().err
    assert {p.name: p.read_bytes() for p in tmp_path.iterdir()} == earlier

def test_an_utterance_longer_than_a_segment_is_refused_before_its_features(tmp_path: Path, prepared_data: Path,
                                                                          model_files: dict[str, Path],
                                                                          capsys: pytest.CaptureFixture) -> None:
    """Twenty-third hostile pass: an audio FILE over 120 s was refused, but `--utt` of a manifest row that long (a
    Kaldi directory's whole recording as a row) was analysed: a 130-s row took 411 s and 3.2 GB for the tiny model,
    every attention map kept for the plot. Refused as the file is, before its features are read."""
    data = tmp_path / "data"
    shutil.copytree(prepared_data, data)
    sf.write(tmp_path / "long.wav", np.zeros(16000 * 121, np.int16), 16000)
    rows = read_manifest(data / "dev.jsonl")
    long_row = {**rows[0], "id": "long_0", "audio": str(tmp_path / "long.wav"), "offset": 0.0, "duration": 121.0}
    (data / "dev.jsonl").write_text("".join(json.dumps(row) + "\n" for row in [*rows, long_row]))
    out = tmp_path / "heat.png"
    assert main(["analyze", "attention", "--model", str(model_files["st"]), "--data", str(data), "--utt", "long_0",
                 "--out", str(out)]) == 2
    assert capsys.readouterr().err.strip() == (
        f"sate analyze: error: {data / 'dev.jsonl'}: utterance 'long_0' is 121.0 s long; `sate analyze attention` "
        "keeps every attention map of an utterance, so it takes 120 s at most: give a shorter one, or cut its "
        "recording with `sate segment` and give one segment as an audio file")
    assert not out.exists()


def test_a_model_that_reads_waveforms_is_refused_before_any_work(tmp_path: Path, prepared_data: Path,
                                                                 whisper_hub_dir: Path,
                                                                 capsys: pytest.CaptureFixture) -> None:
    """A hub acoustic encoder (Whisper here) reads samples; `sate analyze` feeds fbank features: it failed after
    the work, telling the user to "set data.features waveform", a training key the command does not read."""
    from sate.models import build_model, save_model_file
    from sate.models.tiny import tiny_config

    conf = {**tiny_config("st", 12), "acoustic": {"type": "whisper", "path": str(whisper_hub_dir)}}
    save_model_file(tmp_path / "whisper_st.pt", build_model("st", conf, 5, 6), list("abcde"), list("abcdef"))
    utt = read_manifest(prepared_data / "dev.jsonl")[0]["id"]
    for argv in (["attention", "--data", str(prepared_data), "--utt", utt, "--out", str(tmp_path / "h.png")],
                 ["locality", "--data", str(prepared_data), "--split", "dev", "--out", str(tmp_path / "loc")]):
        assert main(["analyze", *argv, "--model", str(tmp_path / "whisper_st.pt")]) == 2
        err = capsys.readouterr().err
        assert err.endswith("whisper_st.pt: its acoustic encoder (whisper) reads waveforms; `sate analyze` feeds "
                            "fbank features (the split's, or an audio file's as `sate features` computes them), so it "
                            "cannot analyse this model\n") and err.count("\n") == 1
    assert not (tmp_path / "h.png").exists() and not (tmp_path / "loc").exists()


@pytest.mark.slow  # draws a map
@pytest.mark.parametrize("kind", ["ogg", "flac"])
def test_an_audio_file_joined_from_two_with_cat_is_refused(tmp_path: Path, prepared_data: Path,
                                                            model_files: dict[str, Path], kind: str,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Thirty-first hostile pass: an Ogg or FLAC joined from two files with cat (an Ogg chain) was read as its first
    file alone, and its map drawn and named by the whole file, exit 0, where `sate translate` refuses it; the two
    parts it names, given one at a time, are analysed."""
    row = read_manifest(prepared_data / "dev.jsonl")[0]
    wave = read_segment(row["audio"], row["offset"], row["duration"])
    parts = [tmp_path / f"part{n}.{kind}" for n in (1, 2)]
    for part, half in zip(parts, (wave[: len(wave) // 2], wave[len(wave) // 2:]), strict=True):
        sf.write(part, half, 16000)
    joined = tmp_path / f"talk.{kind}"
    joined.write_bytes(parts[0].read_bytes() + parts[1].read_bytes())
    out = tmp_path / "heat.png"
    assert main(["analyze", "attention", "--model", str(model_files["st"]), str(joined), "--data",
                 str(prepared_data), "--out", str(out)]) == 2
    err = capsys.readouterr().err
    assert f"talk.{kind}: another {'Ogg' if kind == 'ogg' else 'FLAC'} stream begins at byte " \
           f"{parts[0].stat().st_size:,}" in err
    assert not out.exists()
    assert main(["analyze", "attention", "--model", str(model_files["st"]), str(parts[0]), "--data",
                 str(prepared_data), "--out", str(out)]) == 0


def test_an_audio_file_that_is_a_pipe_is_told_to_be_saved_first(tmp_path: Path, model_files: dict[str, Path]) -> None:
    """Thirty-first hostile pass: a pipe given as the FILE (`cat talk.wav | sate analyze attention ... /dev/stdin`)
    was "not an audio file (a segment is read at its offset)", words about a split's rows, with nothing to do."""
    fifo = tmp_path / "talk.wav"
    os.mkfifo(fifo)
    model = analyze.load_model(model_files["st"])
    with pytest.raises(SateError, match=r"talk\.wav: a pipe or a device; .* save the stream to a file"):
        analyze.audio_batch(model, fifo, None)
