"""`sate prep --libri-trans` on a voiced Augmented-LibriSpeech-layout corpus; its doubled rows in `sate features`."""

from __future__ import annotations

import json
import re
import shutil
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from sate.data.audio import num_frames, read_segment
from sate.data.feature_index import FeatureIndex
from sate.data.manifest import read_manifest
from sate.data.prep import report
from sate.data.rows import SplitResult
from sate.data.text import normalize_source


def _lines(root: Path, name: str, file_name: str) -> list[str]:
    return (root / name / file_name).read_text(encoding="utf-8").splitlines()


def test_default_sets_with_the_gtranslate_rows_of_train(run_sate, libri_trans_root: Path, tmp_path: Path) -> None:
    rc, out, err = run_sate("prep", "--libri-trans", libri_trans_root, "--out", tmp_path)
    assert rc == 0, err
    assert sorted(p.name for p in tmp_path.glob("*.jsonl")) == ["dev.jsonl", "test.jsonl", "train.jsonl"]
    assert "train: 6 rows of 3 segments (the hours count each segment once)" in out and "dev: 2 segments," in out
    for name in ("train", "dev", "test"):
        rows = read_manifest(tmp_path / f"{name}.jsonl")
        meta = [line.split("\t") for line in _lines(libri_trans_root, name, "alignments.meta")[1:]]
        en, fr = _lines(libri_trans_root, name, f"{name}.en"), _lines(libri_trans_root, name, f"{name}.fr")
        gt = _lines(libri_trans_root, name, f"{name}_gtranslate.fr")
        step = 2 if name == "train" else 1
        assert len(rows) == step * len(meta)
        for k, columns in enumerate(meta):
            file_name = columns[4]
            own = rows[step * k]  # a segment's rows are adjacent: its own translation, then Google Translate's
            assert own["id"] == file_name and own["tgt"] == fr[k] and own["src"] == en[k]
            assert own["src_norm"] == normalize_source(en[k])
            assert own["speaker"] == "-".join(file_name.split("-")[:2])
            audio = libri_trans_root / name / "audiofiles" / f"{file_name}.wav"
            assert own["audio"] == str(audio.resolve()) and own["offset"] == 0.0
            frames = sf.info(str(audio)).frames
            assert own["duration"] == frames / 16000 and own["n_frames"] == num_frames(frames)
            assert float(columns[5]) == pytest.approx(own["duration"], abs=0.01)
            if step == 2:
                assert rows[2 * k + 1] == {**own, "id": f"{file_name}.gtranslate", "tgt": gt[k]}


def test_the_hours_count_a_doubled_segment_once(capsys: pytest.CaptureFixture[str]) -> None:
    """A segment and its Google Translate row read one slice of audio: Augmented LibriSpeech's train (47,271 segments,
    100 h) printed 94,542 segments and 200 h (28th hostile pass). Rows are counted as rows, the hours by slice."""
    def row(seg: str, tgt: str) -> dict:
        return {"id": seg, "audio": f"/c/{seg.split('.')[0]}.wav", "offset": 0.0, "duration": 1800.0, "tgt": tgt}

    doubled = SplitResult("train", [row("a", "x"), row("a.gtranslate", "y"), row("b", "x"), row("b.gtranslate", "y")])
    doubled.dropped["empty text"] = 2  # one segment's two rows
    report(doubled)
    report(SplitResult("dev", [row("a", "x"), row("b", "x")]))
    assert capsys.readouterr().out.splitlines() == [
        "train: 4 rows of 2 segments (the hours count each segment once), 1.00 h",
        "train: dropped 2 row(s): empty text", "dev: 2 segments, 1.00 h"]


def test_other_is_the_training_split_train_other_and_reads_flac_named_wav(run_sate, libri_trans_root: Path,
                                                                          tmp_path: Path) -> None:
    rc, _, err = run_sate("prep", "--libri-trans", libri_trans_root, "--out", tmp_path, "--splits", "other")
    assert rc == 0, err
    rows = read_manifest(tmp_path / "train-other.jsonl")
    flac = libri_trans_root / "other" / "audiofiles" / f"{rows[0]['id']}.wav"
    assert flac.read_bytes()[:4] == b"fLaC" and sf.info(str(flac)).format == "FLAC"
    audio, _ = sf.read(str(flac), dtype="float32")
    assert rows[0]["duration"] == len(audio) / 16000
    assert read_segment(flac, 0.0, rows[0]["duration"]) == pytest.approx(audio, abs=1e-6)
    assert [r["id"] for r in rows][1::2] == [f"{r['id']}.gtranslate" for r in rows[::2]]
    # a training split: filtered like train (both rows of the shorter segment go)
    shortest = min(r["duration"] for r in rows)
    rc, out, err = run_sate("prep", "--libri-trans", libri_trans_root, "--out", tmp_path, "--splits", "other",
                            "--min-duration", str(shortest + 0.01))
    assert rc == 0, err
    assert f"train-other: dropped 2 row(s): duration outside {shortest + 0.01:g}-30 s" in out  # of one segment
    assert len(read_manifest(tmp_path / "train-other.jsonl")) == 2


def test_a_doubled_split_filtered_to_nothing_counts_its_segments(run_sate, libri_trans_root: Path,
                                                                 tmp_path: Path) -> None:
    """"no segments left after filtering (dropped: ... (6))" counted the 6 rows of 3 segments as segments, where the
    report's lines count rows and segments apart (review of hand28d)."""
    window = ("--min-duration", "100", "--max-duration", "200")
    rc, _, err = run_sate("prep", "--libri-trans", libri_trans_root, "--out", tmp_path, "--splits", "train", *window)
    assert rc == 2 and err.strip().endswith("train: no segments left after filtering (dropped: duration outside "
                                            "100-200 s (6 rows of 3 segments))"), err
    rc, _, err = run_sate("prep", "--libri-trans", libri_trans_root, "--out", tmp_path, "--splits", "train", *window,
                          "--no-gtranslate")
    assert rc == 2 and err.strip().endswith("(dropped: duration outside 100-200 s (3))"), err


def test_no_gtranslate_keeps_one_row_per_segment(run_sate, libri_trans_root: Path, tmp_path: Path) -> None:
    rc, _, err = run_sate("prep", "--libri-trans", libri_trans_root, "--out", tmp_path, "--no-gtranslate",
                          "--splits", "train")
    assert rc == 0, err
    rows = read_manifest(tmp_path / "train.jsonl")
    assert [r["tgt"] for r in rows] == _lines(libri_trans_root, "train", "train.fr")


def test_a_doubled_segment_is_computed_and_stored_once(run_sate, libri_trans_root: Path, tmp_path: Path) -> None:
    doubled, single = tmp_path / "doubled", tmp_path / "single"
    for data, extra in ((doubled, []), (single, ["--no-gtranslate"])):
        assert run_sate("prep", "--libri-trans", libri_trans_root, "--out", data, "--splits", "train", *extra)[0] == 0
        assert run_sate("features", "--data", data, "--jobs", "1")[0] == 0
    scp = [line.split() for line in (doubled / "fbank" / "train.scp").read_text().splitlines()]
    assert [utt for utt, _ in scp] == [r["id"] for r in read_manifest(doubled / "train.jsonl")]
    assert all(scp[k][1] == scp[k + 1][1] for k in range(0, len(scp), 2))  # both ids: one stored matrix
    assert len({where for _, where in scp}) == 3
    feats = FeatureIndex(doubled / "fbank" / "train.scp")
    plain = FeatureIndex(single / "fbank" / "train.scp")
    for utt in plain:
        assert np.array_equal(feats[utt], plain[utt]) and np.array_equal(feats[f"{utt}.gtranslate"], plain[utt])
    ark = [sum(p.stat().st_size for p in (d / "fbank" / "train").glob("*.ark")) for d in (doubled, single)]
    assert ark[0] == ark[1]  # no second copy on disk
    cmvn = [json.loads((d / "cmvn.json").read_text()) for d in (doubled, single)]
    assert cmvn[0] == cmvn[1]  # every frame counted once


def _edit(path: str, change):  # noqa: ANN001, ANN202 - change(list of lines) -> list of lines
    def edit(root: Path) -> None:
        target = root / path
        target.write_text("\n".join(change(target.read_text().splitlines())) + "\n")
    return edit


def _empty_meta(root: Path) -> None:
    (root / "dev" / "alignments.meta").write_text("")


def _missing_audio(root: Path) -> None:
    next((root / "dev" / "audiofiles").iterdir()).unlink()


@pytest.mark.parametrize(("edit", "pattern"), [
    (_edit("train/train.fr", lambda lines: lines[:-1]),
     r"train: line counts differ: alignments\.meta has 3 segment lines after its header, train\.en 3 lines, "
     r"train\.fr 2 lines, train_gtranslate\.fr 3 lines"),
    (_edit("train/train_gtranslate.fr", lambda lines: lines + ["extra"]), r"train_gtranslate\.fr 4 lines"),
    # 30th hostile pass: a blank line at a text's end (read as a segment's text) was not named, as MuST-C's is
    (_edit("dev/dev.fr", lambda lines: [*lines, ""]),
     r"dev: line counts differ: .* dev\.fr 3 lines; dev\.fr ends with 1 blank line\(s\), each read as a segment's "
     r"text: remove them$"),
    # 31st: a text whose lines end with \r alone (an old Mac editor's) read as one line, and the counts did not say why
    (lambda root: (root / "dev" / "dev.fr").write_bytes((root / "dev" / "dev.fr").read_bytes().replace(b"\n", b"\r")),
     r"dev: line counts differ: .* dev\.fr 1 lines; dev\.fr ends lines with a carriage return \(\\r\) alone, not \\n, "
     r"so it reads as 1 line\(s\): convert it \(sed 's/\\r\$//' dev\.fr \| tr '\\r' '\\n' > dev\.fr\.lf && "
     r"mv dev\.fr\.lf dev\.fr\)$"),
    (_edit("dev/alignments.meta", lambda lines: lines[:2] + ["100\t2000\t1\t0.9"] + lines[3:]),
     r"dev/alignments\.meta:3: expected at least 5 whitespace-separated columns .* got 4"),
    (_edit("dev/alignments.meta", lambda lines: lines[:2] + [lines[1]]),
     r"dev/alignments\.meta:3: segment \S+ appears twice \(first at line 2\)"),
    (_empty_meta, r"dev/alignments\.meta: empty \(expected a header line, then one line per segment\)"),
    # a file that is only a byte-order mark (an empty file saved "with BOM") is empty too, not a blank header
    (lambda root: (root / "dev" / "alignments.meta").write_bytes(b"\xef\xbb\xbf"),
     r"dev/alignments\.meta: empty \(expected a header line, then one line per segment\)"),
    (_missing_audio, r"dev/alignments\.meta:\d: .*dev/audiofiles/\S+\.wav: audio file is missing"),
    # twenty-second hostile pass: another file of as many lines copied as a text became the transcripts, exit 0
    (lambda root: shutil.copyfile(root / "dev" / "alignments.meta", root / "train" / "train.en"),
     r"train/train\.en: a table of tab-separated columns \('book_id\\tchapter_id.*\), not the set's text of one "
     r"segment a line"),
])
def test_errors_name_the_file_and_line(run_sate, libri_trans_root: Path, tmp_path: Path, edit,
                                       pattern: str) -> None:
    root = tmp_path / "libri_trans"
    shutil.copytree(libri_trans_root, root)
    edit(root)
    rc, _, err = run_sate("prep", "--libri-trans", root, "--out", tmp_path / "data")
    assert rc == 2 and re.search(pattern, err), err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "data").exists()


def test_a_missing_gtranslate_file_names_the_option_without_it(run_sate, libri_trans_root: Path,
                                                                tmp_path: Path) -> None:
    """A copy without train_gtranslate.fr was "file is missing" alone (30th hostile pass): the advice, followed,
    prepares the set with one row a segment."""
    root = tmp_path / "libri_trans"
    shutil.copytree(libri_trans_root, root)
    (root / "train" / "train_gtranslate.fr").unlink()
    rc, _, err = run_sate("prep", "--libri-trans", root, "--out", tmp_path / "data", "--splits", "train")
    assert rc == 2 and err.strip().endswith("train/train_gtranslate.fr: file is missing (the Google Translate "
                                            "references, read to double the training set train: --no-gtranslate "
                                            "prepares it without them)"), err
    rc, _, err = run_sate("prep", "--libri-trans", root, "--out", tmp_path / "data", "--splits", "train",
                          "--no-gtranslate")
    assert rc == 0 and len(read_manifest(tmp_path / "data" / "train.jsonl")) == 3, err
    # train.fr missing too (a half copy): its refusal first, where the option's advice, followed, fails on it
    (root / "train" / "train.fr").unlink()
    rc, _, err = run_sate("prep", "--libri-trans", root, "--out", tmp_path / "data2", "--splits", "train")
    assert rc == 2 and err.strip().endswith("train/train.fr: file is missing"), err


def test_bad_options(run_sate, libri_trans_root: Path, tmp_path: Path) -> None:
    rc, _, err = run_sate("prep", "--libri-trans", libri_trans_root, "--out", tmp_path, "--splits", "valid")
    assert rc == 2 and "--splits valid: Augmented LibriSpeech has the sets train, other, dev, test" in err
    rc, _, err = run_sate("prep", "--libri-trans", libri_trans_root, "--out", tmp_path, "--tgt-lang", "fr")
    assert rc == 2 and "--tgt-lang is for --mustc-root only" in err
    rc, _, err = run_sate("prep", "--libri-trans", tmp_path / "none", "--out", tmp_path)
    assert rc == 2 and "none: not a directory" in err
    root = tmp_path / "partial"
    shutil.copytree(libri_trans_root / "train", root / "train")
    rc, _, err = run_sate("prep", "--libri-trans", root, "--out", tmp_path)
    assert rc == 2 and re.search(r"partial/dev: split directory is missing", err), err


def test_a_folder_above_or_inside_the_root_is_named(run_sate, libri_trans_root: Path, tmp_path: Path) -> None:
    """Twenty-first hostile pass: `--libri-trans` given the folder holding the root, one set's folder, or another
    folder said "DIR/train: split directory is missing", a path nobody gave; the root to give is named."""
    shutil.copytree(libri_trans_root, tmp_path / "corpora" / "libri_trans")
    root = tmp_path / "corpora" / "libri_trans"
    says = {root.parent: f"no Augmented LibriSpeech root itself; it holds {root}: give it",
            root / "dev": f"the set folder dev/ of the Augmented LibriSpeech root {root}: give {root}",
            tmp_path / "corpora" / "libri_trans" / "dev" / "audiofiles":
                "none of train/, other/, dev/, test/ in it (give the Augmented LibriSpeech root holding them)"}
    for given, why in says.items():
        rc, _, err = run_sate("prep", "--libri-trans", given, "--out", tmp_path / "data")
        assert rc == 2 and err == f"sate prep: error: --libri-trans {given}: {why}\n", err
    assert not (tmp_path / "data").exists()


def test_mt_text_of_another_target_language_is_said(run_sate, libri_trans_root: Path, tmp_path: Path) -> None:
    """Augmented LibriSpeech is En-Fr: `--mt-text news.en news.de` trained the target vocabulary on German beside
    its French, exit 0, without a word (24th hostile pass). Its language is told by its audiofiles/ folders; the
    fixture's train split is too small for the words to decide, so a note says it; French MT text says nothing."""
    data = tmp_path / "data"
    assert run_sate("prep", "--libri-trans", libri_trans_root, "--out", data)[0] == 0
    english = tmp_path / "news.en"
    english.write_text("the house is old\nthe cat sleeps\n" * 20, encoding="utf-8")
    for lang in ("de", "fr"):
        shutil.copy(english, tmp_path / f"news.{lang}")
        code, _, err = run_sate("vocab", "--data", data, "--joint", "40", "--mt-text", english,
                                tmp_path / f"news.{lang}")
        assert code == 0, err
        assert ("news.de is named as .de text, and the data directory's train split is en-fr (by its audio's folder "
                f"{libri_trans_root / 'train' / 'audiofiles'})" in err) == (lang == "de"), err  # no en-fr: fix24d


def test_blank_lines_at_the_meta_s_end_are_no_segments(run_sate, libri_trans_root: Path, tmp_path: Path) -> None:
    """An editor's blank last line in alignments.meta (`echo >> alignments.meta`) was "expected at least 5
    whitespace-separated columns ..., got 0: ''" (review30d): blank lines at its end are no segments, as a MuST-C
    yaml's are not; a blank line between segments is still refused."""
    root = tmp_path / "libri_trans"
    shutil.copytree(libri_trans_root, root)
    meta = root / "dev" / "alignments.meta"
    lines = meta.read_text().splitlines()
    meta.write_text("\n".join(lines) + "\n\n \n")
    rc, _, err = run_sate("prep", "--libri-trans", root, "--out", tmp_path / "data", "--splits", "dev")
    assert rc == 0, err
    assert len(read_manifest(tmp_path / "data" / "dev.jsonl")) == len(lines) - 1
    meta.write_text("\n".join([*lines[:2], "", *lines[2:]]) + "\n")
    rc, _, err = run_sate("prep", "--libri-trans", root, "--out", tmp_path / "data2", "--splits", "dev")
    assert rc == 2 and "alignments.meta:3: expected at least 5 whitespace-separated columns" in err, err
