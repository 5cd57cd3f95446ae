"""`sate prep --librispeech`: a voiced LibriSpeech-layout subset (FLAC) into a transcript-only manifest."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest
import soundfile as sf

from sate.data.audio import num_frames, read_segment
from sate.data.manifest import read_manifest
from sate.data.text import normalize_source


@pytest.mark.slow
def test_rows_are_the_voiced_utterances(run_sate, librispeech_subset, tmp_path: Path) -> None:
    subset, voiced = librispeech_subset
    rc, out, err = run_sate("prep", "--librispeech", subset, "--out", tmp_path)
    assert rc == 0, err
    assert "train-clean-5: 8 segments" in out and "(transcripts only: ASR)" in out
    rows = read_manifest(tmp_path / "train-clean-5.jsonl")  # the subset's own name: a training split
    assert [r["id"] for r in rows] == [v.id for v in voiced]
    for row, v in zip(rows, voiced, strict=True):
        reader, chapter, _ = v.id.split("-")
        assert row["audio"] == str((subset / reader / chapter / f"{v.id}.flac").resolve())
        assert row["speaker"] == reader and row["src"] == v.text and row["tgt"] is None
        assert row["src_norm"] == normalize_source(v.text) == v.text.lower()
        assert row["offset"] == 0.0 and row["duration"] == v.samples / 16000
        assert row["n_frames"] == num_frames(v.samples)
    audio, rate = sf.read(rows[0]["audio"], dtype="float32")
    assert rate == 16000
    assert read_segment(rows[0]["audio"], 0.0, rows[0]["duration"]) == pytest.approx(audio, abs=1e-6)


def test_splits_name_each_subset_in_order(run_sate, librispeech_subset, tmp_path: Path) -> None:
    subset, voiced = librispeech_subset
    other = tmp_path / "dev-clean"
    shutil.copytree(subset / "19", other / "19")
    rc, _, err = run_sate("prep", "--librispeech", subset, other, "--out", tmp_path / "data", "--splits", "ls",
                          "ls_dev")
    assert rc == 0, err
    assert len(read_manifest(tmp_path / "data" / "ls.jsonl")) == 8
    assert [r["id"] for r in read_manifest(tmp_path / "data" / "ls_dev.jsonl")] == [v.id for v in voiced[:4]]
    rc, _, err = run_sate("prep", "--librispeech", subset, other, "--out", tmp_path / "data", "--splits", "ls")
    assert rc == 2 and "give one split name per directory (2 directories, 1 names)" in err


def _copy(subset: Path, tmp_path: Path) -> Path:
    target = tmp_path / "train-clean-5"
    shutil.copytree(subset, target)
    return target


def _trans(subset: Path) -> Path:
    return subset / "19" / "198" / "19-198.trans.txt"


def _malformed(subset: Path) -> None:  # an id without its transcript
    path = _trans(subset)
    path.write_text(path.read_text().splitlines()[0] + "\n19-198-0001\n")


def _other_chapter(subset: Path) -> None:
    path = _trans(subset)
    path.write_text(path.read_text().replace("19-198-0001", "19-227-0001", 1))


def _twice(subset: Path) -> None:
    path = _trans(subset)
    lines = path.read_text().splitlines()
    path.write_text("\n".join([lines[0], lines[0].replace("0000", "0000 AGAIN", 1)]) + "\n")


def _missing_flac(subset: Path) -> None:
    (subset / "19" / "198" / "19-198-0001.flac").unlink()


def _unreadable_flac(subset: Path) -> None:
    (subset / "19" / "198" / "19-198-0001.flac").write_bytes(b"fLaC not really")


def _nel_line_ends(subset: Path) -> None:  # one utterance holding every other line, exit 0 (twentieth hostile pass)
    path = _trans(subset)
    path.write_text(path.read_text().replace("\n", "\x85"), encoding="utf-8")


@pytest.mark.parametrize(("edit", "pattern"), [
    (_nel_line_ends, r"19-198\.trans\.txt:1: a next line \(U\+0085\) inside a line, not a transcript line \(lines "
                     r"end with \\n; a file whose lines end with it\?\): '19-198-0000 "),
    (_malformed, r"19-198\.trans\.txt:2: expected '19-198-<n> <TRANSCRIPT>', got '19-198-0001'"),
    (_other_chapter, r"19-198\.trans\.txt:2: expected '19-198-<n> <TRANSCRIPT>', got '19-227-0001 "),
    (_twice, r"19-198\.trans\.txt:2: utterance 19-198-0000 appears twice \(first at .*19-198\.trans\.txt:1\)"),
    (_missing_flac, r"19-198\.trans\.txt:2: .*19-198-0001\.flac: audio file is missing"),
    (_unreadable_flac, r"19-198\.trans\.txt:2: .*19-198-0001\.flac: cannot read audio"),
])
def test_errors_name_the_transcript_file_and_line(run_sate, librispeech_subset, tmp_path: Path, edit,
                                                  pattern: str) -> None:
    subset = _copy(librispeech_subset[0], tmp_path)
    edit(subset)
    rc, _, err = run_sate("prep", "--librispeech", subset, "--out", tmp_path / "data")
    assert rc == 2 and re.search(pattern, err), err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "data").exists()


def test_a_directory_without_transcripts_is_named(run_sate, librispeech_subset, tmp_path: Path) -> None:
    root = librispeech_subset[0].parent  # LibriSpeech/ itself, not a subset
    rc, _, err = run_sate("prep", "--librispeech", root, "--out", tmp_path)
    assert rc == 2 and f"{root}: no transcripts" in err and "LibriSpeech/train-clean-100" in err
    rc, _, err = run_sate("prep", "--librispeech", tmp_path / "nowhere", "--out", tmp_path)
    assert rc == 2 and "nowhere: not a directory" in err
    subset = _copy(librispeech_subset[0], tmp_path)
    _trans(subset).rename(subset / "19" / "198" / "19-199.trans.txt")
    rc, _, err = run_sate("prep", "--librispeech", subset, "--out", tmp_path)
    assert rc == 2 and "19-199.trans.txt: a transcript file in 19/198/ must be named 19-198.trans.txt" in err


def test_options_of_other_corpora_are_refused(run_sate, librispeech_subset, tmp_path: Path) -> None:
    subset = librispeech_subset[0]
    for option in (["--tgt-lang", "fr"], ["--no-gtranslate"]):
        rc, _, err = run_sate("prep", "--librispeech", subset, "--out", tmp_path, *option)
        assert rc == 2 and "is for --" in err, err


def test_a_subset_converted_to_wav_is_read(run_sate, librispeech_subset, tmp_path: Path) -> None:
    """A LibriSpeech subset converted to WAV (each `UTT.flac` now `UTT.wav`, as Kaldi-era scripts leave it) was
    "UTT.flac: audio file is missing", the one name its folder did not hold (twenty-seventh hostile pass); its wavs
    are read, to the same rows, and a flac, where there, is read first."""
    subset = tmp_path / "train-clean-5"
    shutil.copytree(librispeech_subset[0], subset)
    assert run_sate("prep", "--librispeech", subset, "--out", tmp_path / "flac")[0] == 0
    flacs = sorted(subset.rglob("*.flac"))
    for flac in flacs[1:]:
        flac.parent.chmod(0o755)  # the fixture's folders are read-only
        data, rate = sf.read(flac, dtype="int16")
        sf.write(flac.with_suffix(".wav"), data, rate, subtype="PCM_16")
        flac.unlink()
    rc, _, err = run_sate("prep", "--librispeech", subset, "--out", tmp_path / "wav")
    assert rc == 0, err
    rows, before = read_manifest(tmp_path / "wav" / "train-clean-5.jsonl"), \
        read_manifest(tmp_path / "flac" / "train-clean-5.jsonl")
    assert [r["audio"] for r in rows] == [before[0]["audio"], *(str(f.with_suffix(".wav").resolve())
                                                                 for f in flacs[1:])]
    assert [{**r, "audio": ""} for r in rows] == [{**r, "audio": ""} for r in before]
