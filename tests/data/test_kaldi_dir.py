"""`sate prep --kaldi-dir`: a voiced Kaldi data directory (segments, an 8 kHz stereo recording) into a manifest."""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import numpy as np
import pytest
import soundfile as sf

from sate.data.audio import num_frames, read_segment
from sate.data.kaldi_dir import audio_paths
from sate.data.manifest import read_manifest
from sate.data.text import normalize_source
from sate.errors import SateError, shown


def test_rows_are_the_voiced_segments(run_sate, kaldi_corpus, tmp_path: Path) -> None:
    directory, voiced = kaldi_corpus
    rc, out, err = run_sate("prep", "--kaldi-dir", directory, "--out", tmp_path, "--splits", "kaldi")
    assert rc == 0, err
    assert "kaldi: 6 segments" in out and "kaldi: dropped 1 segment(s): no line in text (not transcribed)" in out
    rows = read_manifest(tmp_path / "kaldi.jsonl")
    assert [r["id"] for r in rows] == [v.id for v in voiced]
    for row, v in zip(rows, voiced, strict=True):
        assert row["speaker"] == v.speaker and row["src"] == v.text and row["tgt"] is None
        assert row["src_norm"] == normalize_source(v.text)
        assert row["audio"] == str(directory.parent / "audio" / f"{v.id.split('-')[1]}.wav")
        assert row["offset"] == v.offset and row["duration"] == v.samples / 16000
        assert row["n_frames"] == num_frames(v.samples)
    # recB is 8 kHz stereo: read back at 16 kHz mono, its segments hold the voiced sentence (left + right) / 2
    last = rows[-1]
    data, rate = sf.read(last["audio"], dtype="float32")
    assert rate == 8000 and data.shape[1] == 2
    wave = read_segment(last["audio"], last["offset"], last["duration"])
    assert len(wave) == voiced[-1].samples
    start = round(last["offset"] * 8000)
    expected = data[start:, :].mean(axis=1)
    assert np.corrcoef(wave[::2][: len(expected) - 4], expected[: len(wave[::2]) - 4])[0, 1] > 0.9


def test_without_segments_and_utt2spk_a_recording_is_an_utterance(run_sate, kaldi_corpus, tmp_path: Path) -> None:
    source = kaldi_corpus[0]
    directory = tmp_path / "recordings"
    directory.mkdir()
    shutil.copy(source / "wav.scp", directory / "wav.scp")
    (directory / "text").write_text("recB ONLY THIS ONE\n")
    rc, out, err = run_sate("prep", "--kaldi-dir", directory, "--out", tmp_path / "data")
    assert rc == 0, err
    assert "recordings: dropped 1 segment(s): no line in text" in out  # recA
    [row] = read_manifest(tmp_path / "data" / "recordings.jsonl")
    assert row["id"] == "recB" and row["speaker"] == "recB" and row["offset"] == 0.0
    assert row["src"] == "ONLY THIS ONE" and row["src_norm"] == "only this one"
    assert row["duration"] == sf.info(row["audio"]).frames / 8000


def test_relative_audio_paths_are_read_from_the_current_directory(run_sate, kaldi_corpus, tmp_path: Path,
                                                                  monkeypatch: pytest.MonkeyPatch) -> None:
    source = kaldi_corpus[0]
    directory = tmp_path / "rel"
    shutil.copytree(source, directory)
    (directory / "wav.scp").write_text("recA audio/recA.wav\nrecB audio/recB.wav\n")
    monkeypatch.chdir(source.parent)
    rc, _, err = run_sate("prep", "--kaldi-dir", directory, "--out", tmp_path / "data")
    assert rc == 0, err
    assert read_manifest(tmp_path / "data" / "rel.jsonl")[0]["audio"] == str(source.parent / "audio" / "recA.wav")


def _edit(name: str, old: str, new: str, count: int = 1):  # noqa: ANN202 - an edit of one file
    def edit(directory: Path) -> None:
        path = directory / name
        text = path.read_text()
        assert old in text, (name, old)
        path.write_text(text.replace(old, new, count))
    return edit


def _line(name: str, lineno: int, new: str):  # noqa: ANN202
    def edit(directory: Path) -> None:
        path = directory / name
        lines = path.read_text().splitlines()
        lines[lineno - 1] = new
        path.write_text("\n".join(lines) + "\n")
    return edit


def _append(name: str, line: str):  # noqa: ANN202
    def edit(directory: Path) -> None:
        with open(directory / name, "a") as f:
            f.write(line + "\n")
    return edit


def _drop(name: str):  # noqa: ANN202
    def edit(directory: Path) -> None:
        (directory / name).unlink()
    return edit


def _replace(name: str, kind: str):  # noqa: ANN202 - the file emptied, or replaced by a directory or a link
    def edit(directory: Path) -> None:
        path = directory / name
        path.unlink()
        if kind == "empty":
            path.write_text("")
        elif kind == "directory":
            path.mkdir()
        else:
            path.symlink_to("/no/such/file" if kind == "broken" else name)
    return edit


@pytest.mark.parametrize(("edit", "pattern"), [
    (_line("wav.scp", 2, "recB sox in.wav -t wav - |"),
     r"wav\.scp:2: recB is a command \('sox in.wav -t wav - \|'\); convert the recordings to audio files"),
    (_line("wav.scp", 1, "recA raw/feats.ark:1234"),
     r"wav\.scp:1: recA is an offset into an ark \('raw/feats.ark:1234'\); convert the recordings to audio files"),
    (_line("wav.scp", 1, "recA"), r"wav\.scp:1: expected '<recording> <audio path>', got only 'recA'"),
    (_append("wav.scp", "recA /elsewhere.wav"), r"wav\.scp:3: recA appears twice \(first at line 1\)"),
    (_line("wav.scp", 1, "recA /no/such.wav"), r"wav\.scp:1: /no/such\.wav: audio file is missing"),
    (_line("segments", 2, "spk0-recA-1 recA 1.5"), r"segments:2: expected '<utterance> <recording> <start> <end>'"),
    (_line("segments", 2, "spk0-recA-1 recA 1.5 one"), r"segments:2: start and end must be numbers of seconds"),
    # float() read 1_0 as 10 and the Arabic-Indic digit as 3 (thirteenth hostile pass)
    (_line("segments", 2, "spk0-recA-1 recA 1_0 1_5"), r"segments:2: start and end must be numbers of seconds \(digits "
                                                       r"0-9, a point\), got '1_0' '1_5'"),
    (_line("segments", 2, "spk0-recA-1 recA 1 \u0663"), r"segments:2: start and end must be numbers of seconds"),
    (_line("segments", 2, "spk0-recA-1 recA 1 inf"), r"segments:2: start and end must be numbers of seconds"),
    (_line("segments", 2, "spk0-recA-1 recA 2.5 1.5"), r"segments:2: need 0 <= start < end <= 10,000,000 s \(or end"),
    # 1e300 was written whole (300 digits) into the "runs past the end" line
    (_line("segments", 2, "spk0-recA-1 recA 1e300 1e301"), r"segments:2: need 0 <= start < end <= 10,000,000 s .*"
                                                           r"got 1e\+300 1e\+301$"),
    (_line("segments", 2, "spk0-recA-1 recC 1.0 1.5"), r"segments:2: recording recC is not in wav\.scp"),
    (_line("segments", 2, "spk0-recA-1 recA 1.0 99"),
     r"segments:2: segment spk0-recA-1 \(1\.000-99\.000 s\) runs past the end of .*recA\.wav \(\d+\.\d+ s\)"),
    (_append("text", "spk0-recA-0 AGAIN"), r"text:7: spk0-recA-0 appears twice \(first at line 1\)"),
    (_append("text", "spk9-recZ-0 NO AUDIO"), r"text:7: utterance spk9-recZ-0 has no line in .*segments"),
    (_drop("text"), r"kaldi_train/text: file is missing"),
    (_line("utt2spk", 3, "spk0-recA-2 two speakers"), r"utt2spk:3: expected '<utterance> <speaker>'"),
    (_edit("utt2spk", "spk1-recB-2 spk1\n", ""), r"text:6: utterance spk1-recB-2 has no speaker in .*utt2spk"),
    # an optional file that is no file was taken for none (fourteenth hostile pass): a `segments` so made each
    # recording an utterance ("has no recording in wav.scp"), and `utt2spk` gave rows their recording as speaker,
    # exit 0; an empty text said "no segments left after filtering", naming no file
    (_replace("segments", "directory"), r"kaldi_train/segments: is a directory, not a text file$"),
    (_replace("segments", "broken"),
     r"kaldi_train/segments: a broken symlink \(to /no/such/file, which is not there\)$"),
    (_replace("utt2spk", "directory"), r"kaldi_train/utt2spk: is a directory, not a text file$"),
    (_replace("utt2spk", "loop"), r"kaldi_train/utt2spk: a symlink loop \(it leads back to itself\)$"),
    (_replace("text", "loop"), r"kaldi_train/text: a symlink loop \(it leads back to itself\)$"),
    (_replace("text", "empty"), r"kaldi_train/text: holds no transcripts"),
    # a `text` whose lines end with \r alone or U+2028 was one utterance holding every other line, exit 0 (twentieth
    # hostile pass)
    (_edit("text", "\n", "\r", -1), r"text:1: a carriage return \(\\r\) inside a line, not a line of a Kaldi table "
                                    r"\(lines end with \\n; a file whose lines end with it\?\): 'spk0-recA-0 "),
    (_edit("segments", "\n", "\u2028", -1), r"segments:1: a line separator \(U\+2028\) inside a line, not a line of "),
])
def test_errors_name_the_file_and_line(run_sate, kaldi_corpus, tmp_path: Path, edit, pattern: str) -> None:
    directory = tmp_path / "kaldi_train"
    shutil.copytree(kaldi_corpus[0], directory)
    edit(directory)
    rc, _, err = run_sate("prep", "--kaldi-dir", directory, "--out", tmp_path / "data")
    assert rc == 2 and re.search(pattern, err), err
    assert len(err.strip().splitlines()) == 1 and not (tmp_path / "data").exists()


def test_an_utterance_without_segments_needs_a_recording(run_sate, kaldi_corpus, tmp_path: Path) -> None:
    directory = tmp_path / "plain"
    directory.mkdir()
    shutil.copy(kaldi_corpus[0] / "wav.scp", directory / "wav.scp")
    (directory / "text").write_text("recA FIRST\nrecC NOWHERE\n")
    rc, _, err = run_sate("prep", "--kaldi-dir", directory, "--out", tmp_path / "data")
    assert rc == 2 and re.search(r"plain/text:2: utterance recC has no recording in .*wav\.scp", err), err



def test_a_transcripts_angle_bracket_markers_are_no_words(run_sate, kaldi_corpus, tmp_path: Path) -> None:
    """TED-LIUM's Kaldi `text` marks a word nobody could transcribe `<unk>` (and others `<NOISE>`, `<SPOKEN_NOISE>`):
    src_norm held the words "unk", "noise", "spokennoise", which CTC learnt to spell, exit 0 (33rd hostile pass); a
    transcript of markers alone is empty, dropped from a training split."""
    directory = tmp_path / "tedlium"
    directory.mkdir()
    shutil.copy(kaldi_corpus[0] / "wav.scp", directory / "wav.scp")
    (directory / "text").write_text("recA and then <unk> said <NOISE> yes\nrecB <SPOKEN_NOISE> <unk>\n")
    rc, out, err = run_sate("prep", "--kaldi-dir", directory, "--out", tmp_path / "data", "--splits", "train_extra")
    assert rc == 0 and "train_extra: dropped 1 segment(s): empty source after normalisation" in out, err
    [row] = read_manifest(tmp_path / "data" / "train_extra.jsonl")
    assert row["src"] == "and then <unk> said <NOISE> yes" and row["src_norm"] == "and then said yes"

def test_a_bom_at_a_later_lines_start_is_a_joined_files(run_sate, kaldi_corpus, tmp_path: Path) -> None:
    """`cat a/text b/text > text` of two files that each open with a BOM: b's first key held it, invisible, and was
    refused as "utterance recB has no recording in wav.scp", whose line holds recB (30th hostile pass)."""
    directory = tmp_path / "joined"
    directory.mkdir()
    audio = kaldi_corpus[0].parent / "audio"
    (directory / "wav.scp").write_text(f"\ufeffrecA {audio / 'recA.wav'}\n\ufeffrecB {audio / 'recB.wav'}\n")
    (directory / "text").write_text("\ufeffrecA FIRST\n\ufeffrecB SECOND\n")
    rc, out, err = run_sate("prep", "--kaldi-dir", directory, "--out", tmp_path / "data", "--splits", "dev")
    assert rc == 0 and "dev: 2 segments" in out, err
    assert [row["id"] for row in read_manifest(tmp_path / "data" / "dev.jsonl")] == ["recA", "recB"]


@pytest.mark.parametrize("utt", ["u\u200b1", "u\x1b1"])  # a zero-width space, an ESC: both invisible
def test_an_id_every_later_stage_refuses_is_refused_by_prep(run_sate, kaldi_corpus, tmp_path: Path, utt: str) -> None:
    """`sate prep` wrote a row whose id `sate features` then refused ("id must be ... without invisible characters"):
    the rule of the manifest reader is the rule of prep's rows, before anything is written."""
    directory = tmp_path / "kd"
    directory.mkdir()
    wav = kaldi_corpus[0].parent / "audio" / "recB.wav"
    (directory / "wav.scp").write_text(f"recB {wav}\n{utt} {wav}\n")  # each recording one utterance
    (directory / "text").write_text(f"recB ONE\n{utt} TWO\n")
    rc, _, err = run_sate("prep", "--kaldi-dir", directory, "--out", tmp_path / "data", "--splits", "dev")
    assert rc == 2 and re.search(r"dev: a row every later stage would refuse: id must be a non-empty string without "
                                 r"spaces or invisible characters, got 'u\\(u200b|x1b)1'", err), err
    assert not (tmp_path / "data" / "dev.jsonl").exists()


def test_a_split_named_train_sp_is_refused(run_sate, kaldi_corpus, tmp_path: Path) -> None:
    """A Kaldi train_sp directory took its folder's name: DATA/train_sp.jsonl, which the next `sate features` over
    train replaced with train's speed copies without a word (thirteenth hostile pass). Refused before anything is
    written, by the directory's name or by --splits."""
    directory = tmp_path / "train_sp"
    shutil.copytree(kaldi_corpus[0], directory)
    rc, _, err = run_sate("prep", "--kaldi-dir", directory, "--out", tmp_path / "data")
    assert rc == 2 and err.strip() == (
        "sate prep: error: the directory names: train_sp is the split `sate features --speed-perturb` writes (train's "
        "speed copies), which would replace it; name this one otherwise (--splits)")
    rc, _, err = run_sate("prep", "--kaldi-dir", kaldi_corpus[0], "--out", tmp_path / "data", "--splits", "train_sp")
    assert rc == 2 and "--splits: train_sp is the split `sate features --speed-perturb` writes" in err
    assert not (tmp_path / "data").exists()


def test_a_folder_above_or_inside_the_data_directory_is_named(run_sate, kaldi_corpus, tmp_path: Path) -> None:
    """Twenty-first hostile pass: `--kaldi-dir` given the folder holding the Kaldi data directories (a recipe's
    data/), a folder inside one, or another folder said "DIR/wav.scp: file is missing", a path nobody gave."""
    directory = kaldi_corpus[0]
    inside = tmp_path / "inside"
    shutil.copytree(directory, inside)
    inside.chmod(0o755)  # the fixture's is read-only
    (inside / "notes").mkdir()
    says = {directory.parent: f"no Kaldi data directory itself; it holds {directory}: give it (--kaldi-dir once for "
                              "each split)",
            inside / "notes": f"a folder inside the Kaldi data directory {inside}, not one itself: give {inside}",
            tmp_path / "notes": "no wav.scp in it (give a Kaldi data directory with wav.scp and text)"}
    (tmp_path / "notes").mkdir()
    for given, why in says.items():
        rc, _, err = run_sate("prep", "--kaldi-dir", given, "--out", tmp_path / "data")
        assert rc == 2 and err == f"sate prep: error: --kaldi-dir {given}: {why}\n", err
    assert not (tmp_path / "data").exists()


def test_another_corpus_over_some_splits_of_a_data_directory_is_said(run_sate, kaldi_corpus, corpus: Path,
                                                                     tmp_path: Path) -> None:
    """A Kaldi directory prepared as train into a MuST-C data directory replaced its translated train with
    transcripts alone beside MuST-C's dev and tst-COMMON, exit 0, without a word (24th hostile pass): said in a
    note naming the splits left. The corpus prepared again, or new splits beside it, say nothing."""
    data = tmp_path / "data"
    assert run_sate("prep", "--mustc-root", corpus, "--out", data)[0] == 0
    rc, _, err = run_sate("prep", "--mustc-root", corpus, "--out", data)  # the same corpus again
    assert rc == 0 and "note:" not in err
    rc, _, err = run_sate("prep", "--mustc-root", corpus, "--out", data, "--splits", "dev")  # one split again
    assert rc == 0 and "note:" not in err
    rc, _, err = run_sate("prep", "--kaldi-dir", kaldi_corpus[0], "--out", data)  # beside: nothing replaced
    assert rc == 0 and "note:" not in err and (data / "kaldi_train.jsonl").is_file()
    rc, _, err = run_sate("prep", "--kaldi-dir", kaldi_corpus[0], "--splits", "train", "--out", data)
    assert rc == 0 and "note: train.jsonl held another corpus than this one" in err
    assert f"{data / 'dev.jsonl'}, {data / 'tst-COMMON.jsonl'}, not written now" in err  # not the extra ASR split
    assert all(row["tgt"] is None for row in read_manifest(data / "train.jsonl"))  # a note: the work goes on


def test_a_manifest_edited_with_a_bom_or_blank_lines_is_still_ours(run_sate, kaldi_corpus, corpus: Path,
                                                                   tmp_path: Path) -> None:
    """`read_manifest` reads a manifest saved with a byte-order mark or blank lines; prep over it did not: a leading
    blank line made it "no manifest of `sate prep`" (refused), and a BOM dropped the other-corpus note (twenty-seventh
    hostile pass, review)."""
    data = tmp_path / "data"
    assert run_sate("prep", "--kaldi-dir", kaldi_corpus[0], "--out", data, "--splits", "kaldi")[0] == 0
    path = data / "kaldi.jsonl"
    path.write_text("\n \n" + path.read_text())
    rc, _, err = run_sate("prep", "--kaldi-dir", kaldi_corpus[0], "--out", data, "--splits", "kaldi")
    assert rc == 0 and "note:" not in err, err
    assert run_sate("prep", "--mustc-root", corpus, "--out", data)[0] == 0
    path = data / "train.jsonl"
    path.write_text("\ufeff" + path.read_text() + "\n")
    rc, _, err = run_sate("prep", "--kaldi-dir", kaldi_corpus[0], "--splits", "train", "--out", data)
    assert rc == 0 and "note: train.jsonl held another corpus than this one" in err, err


def test_a_relative_wav_path_run_from_elsewhere_names_the_folder_to_run_from(run_sate, kaldi_corpus,
                                                                             tmp_path: Path, monkeypatch) -> None:
    """A relative wav.scp path is read from the current directory, as Kaldi reads it: run from elsewhere it was
    "audio file is missing", saying neither from where nor where it is (24th hostile pass). The folder holding the
    Kaldi directory it is there from is named; run from there, as said, the directory prepares."""
    directory, _ = kaldi_corpus
    recipe = tmp_path / "s5"
    shutil.copytree(directory, recipe / "data" / "train")
    shutil.copytree(directory.parent / "audio", recipe / "wav")
    scp = recipe / "data" / "train" / "wav.scp"
    scp.write_text("".join(f"{line.split()[0]} wav/{Path(line.split()[1]).name}\n"
                           for line in scp.read_text().splitlines()))
    monkeypatch.chdir(tmp_path)
    rc, _, err = run_sate("prep", "--kaldi-dir", "s5/data/train", "--out", "data")
    assert rc == 2 and err.strip() == (
        f"sate prep: error: s5/data/train/wav.scp:1: wav/recA.wav: no such audio file from the current directory "
        f"({tmp_path}), from which Kaldi reads a relative path; it is there from {recipe}: run `sate prep` in that "
        "folder (the Kaldi recipe's root), giving --kaldi-dir and --out from there"), err
    monkeypatch.chdir(recipe)
    assert run_sate("prep", "--kaldi-dir", "data/train", "--out", "../data")[0] == 0


def test_a_relative_wav_path_from_the_directory_itself_names_it(run_sate, kaldi_corpus, tmp_path: Path,
                                                                monkeypatch) -> None:
    """A Kaldi directory written by hand with its audio inside it (`audio/recA.wav` beside `wav.scp`), run from
    elsewhere: "audio file is missing" alone, where a folder above it was named (32nd hostile pass). Named now;
    followed, it prepares."""
    directory, _ = kaldi_corpus
    mine = tmp_path / "mine"
    shutil.copytree(directory, mine)
    shutil.copytree(directory.parent / "audio", mine / "audio")
    scp = mine / "wav.scp"
    scp.write_text("".join(f"{line.split()[0]} audio/{Path(line.split()[1]).name}\n"
                           for line in scp.read_text().splitlines()))
    monkeypatch.chdir(tmp_path)
    rc, _, err = run_sate("prep", "--kaldi-dir", "mine", "--out", "data")
    assert rc == 2 and err.strip().endswith(f"it is there from {mine}: run `sate prep` in that folder (the Kaldi "
                                            "directory itself), giving --kaldi-dir and --out from there"), err
    monkeypatch.chdir(mine)
    assert run_sate("prep", "--kaldi-dir", ".", "--splits", "mine", "--out", "../data")[0] == 0


def test_the_other_corpus_note_names_only_the_replaced_corpus_s_manifests(run_sate, kaldi_corpus, tmp_path: Path,
                                                                         write_mustc) -> None:
    """The note named every other manifest as maybe of the corpus replaced (24th hostile pass, fix24d): an extra ASR
    split beside an En-De corpus prepared again as En-Fr (all its splits), or the pair beside an extra split
    prepared again from another corpus; an extra ASR split goes with any pair, the pair with any extra split."""
    layout = {"train": (1, 3), "dev": (1, 2), "tst-COMMON": (1, 2)}
    root = write_mustc(tmp_path / "mustc", layout=layout)
    write_mustc(root, tgt_lang="fr", layout=layout)
    data = tmp_path / "data"
    assert run_sate("prep", "--mustc-root", root, "--out", data)[0] == 0
    assert run_sate("prep", "--kaldi-dir", kaldi_corpus[0], "--splits", "train-clean-5", "--out", data)[0] == 0
    rc, _, err = run_sate("prep", "--mustc-root", root, "--tgt-lang", "fr", "--out", data)  # every split of the pair
    assert rc == 0 and "note:" not in err, err
    other = tmp_path / "other"  # another Kaldi directory (other ids) prepared again as the extra split
    shutil.copytree(kaldi_corpus[0], other)
    for name in ("text", "segments", "utt2spk"):
        if (other / name).is_file():
            lines = (other / name).read_text().splitlines()
            (other / name).write_text("".join(f"x{line}\n" for line in lines))
    rc, _, err = run_sate("prep", "--kaldi-dir", other, "--splits", "train-clean-5", "--out", data)
    assert rc == 0 and "note:" not in err, err
    assert read_manifest(data / "train-clean-5.jsonl")[0]["id"].startswith("x")
    rc, _, err = run_sate("prep", "--mustc-root", root, "--tgt-lang", "de", "--splits", "train", "dev", "--out", data)
    assert rc == 0 and f"{data / 'tst-COMMON.jsonl'}, not written now" in err and "train-clean-5" not in err, err


def test_espnets_target_side_of_a_pair_is_refused_and_its_pair_directory_named(run_sate, kaldi_corpus,
                                                                                tmp_path: Path) -> None:
    """ESPnet's speech-translation recipes split a pair's data directory into one a language (`train.en-de.en`,
    `train.en-de.de`), each with `text` in its language: the German side's translations became the English
    transcripts of an extra ASR split, exit 0; the pair's own directory, which keeps `text.tc.en` and `text.tc.de`
    and no `text`, was "DIR/text: file is missing" (twenty-seventh hostile pass). The English side is read, and each
    piece of advice, followed, prepares the split."""
    pair = tmp_path / "train.en-de"
    shutil.copytree(kaldi_corpus[0], pair)
    pair.chmod(0o755)  # the fixture's is read-only
    (pair / "text").rename(pair / "text.tc.en")
    (pair / "text.tc.de").write_text((pair / "text.tc.en").read_text())
    german = tmp_path / "train.en-de.de"
    shutil.copytree(pair, german)
    german.chmod(0o755)
    (german / "text.tc.de").rename(german / "text")
    out = tmp_path / "data"
    rc, _, err = run_sate("prep", "--kaldi-dir", german, "--out", out, "--splits", "extra")
    assert rc == 2 and err.strip() == (
        f"sate prep: error: --kaldi-dir {german}: ESPnet's de side of the language pair train.en-de, whose text holds "
        "the translations, not English transcripts; give a directory whose text holds the English transcripts "
        "(ESPnet's English side is train.en-de.en)")
    rc, _, err = run_sate("prep", "--kaldi-dir", pair, "--out", out, "--splits", "extra")
    assert rc == 2 and err.strip() == (
        f"sate prep: error: --kaldi-dir {pair}: {pair / 'text'}: file is missing; the directory holds ESPnet's "
        f"text.tc.de, text.tc.en: copy text.tc.en to {pair / 'text'}")
    english = tmp_path / "train.en-de.en"
    shutil.copytree(pair, english)
    english.chmod(0o755)
    (english / "text.tc.en").rename(english / "text")
    rc, _, err = run_sate("prep", "--kaldi-dir", german, "--out", out, "--splits", "extra")
    assert rc == 2 and err.strip().endswith(f"not English transcripts; give its English side, {english}")
    rc, _, err = run_sate("prep", "--kaldi-dir", pair, "--out", out, "--splits", "extra")
    assert rc == 2 and f"give ESPnet's English data directory {english}, or copy text.tc.en to" in err
    assert not out.exists()
    assert run_sate("prep", "--kaldi-dir", english, "--out", out, "--splits", "extra")[0] == 0
    shutil.copy(pair / "text.tc.en", pair / "text")
    assert run_sate("prep", "--kaldi-dir", pair, "--out", tmp_path / "other", "--splits", "extra")[0] == 0
    assert read_manifest(out / "extra.jsonl") == read_manifest(tmp_path / "other" / "extra.jsonl")


@pytest.mark.parametrize(("name", "refused"), [
    ("train_sp.es-en.en", "ESPnet's en side of the language pair train_sp.es-en, whose speech is es, not English"),
    ("train_sp.es-en.es", "ESPnet's es side of the language pair train_sp.es-en, whose speech is es, not English"),
    ("dev.zh-CN-en.en", "ESPnet's en side of the language pair dev.zh-CN-en, whose speech is zh-CN, not English"),
    ("train_sp.en-de.en", None), ("train.en-en.en", None), ("train.clean-en.en", None), ("plain.es-en", None),
])
def test_espnets_data_of_non_english_speech_is_refused(run_sate, kaldi_corpus, tmp_path: Path, name: str,
                                                       refused: str | None) -> None:
    """ESPnet's X->en recipes (CoVoST 2's `train_sp.es-en.en`, `.es`) name a pair by its source first too: either
    side's `text` (English translations, Spanish transcripts) became the English transcripts of Spanish speech, exit
    0. sate's speech side is English, so both are refused; a name that only looks like one is read (twenty-seventh
    hostile pass, review)."""
    directory = tmp_path / name
    shutil.copytree(kaldi_corpus[0], directory)
    rc, _, err = run_sate("prep", "--kaldi-dir", directory, "--out", tmp_path / "data", "--splits", "extra")
    if refused is None:
        assert rc == 0, err
    else:
        assert rc == 2 and err.strip() == (
            f"sate prep: error: --kaldi-dir {directory}: {refused}; sate's speech side is English (--kaldi-dir gives "
            "English transcripts of English speech): give a directory of English speech and its transcripts")
        assert not (tmp_path / "data").exists()


def test_espnets_pair_directory_of_non_english_speech_is_refused(run_sate, kaldi_corpus, tmp_path: Path) -> None:
    """The pair's own directory (`train_sp.es-en`, with ESPnet's `text.tc.en`, `text.tc.es`) was named with "copy
    text.tc.en to DIR/text": the English translations of Spanish speech."""
    pair = tmp_path / "train_sp.es-en"
    shutil.copytree(kaldi_corpus[0], pair)
    pair.chmod(0o755)
    for language in ("en", "es"):
        shutil.copy(pair / "text", pair / f"text.tc.{language}")
    for _ in range(2):  # with `text`, and without it
        rc, _, err = run_sate("prep", "--kaldi-dir", pair, "--out", tmp_path / "data", "--splits", "extra")
        assert rc == 2 and "ESPnet's directory of the language pair train_sp.es-en, whose speech is es, " in err, err
        (pair / "text").unlink(missing_ok=True)


def test_espnets_pair_directory_names_its_true_case_english(run_sate, kaldi_corpus, tmp_path: Path) -> None:
    """ESPnet1's `data_prep.sh` writes `text.tc`, `text.lc` and `text.lc.rm` of each language into the pair's
    directory: the advice named the first by name, `text.lc.en` (lowercased), where docs/data.md says `text.tc.en`."""
    pair = tmp_path / "train.en-fr"
    shutil.copytree(kaldi_corpus[0], pair)
    pair.chmod(0o755)
    for case in ("tc", "lc", "lc.rm"):
        for language in ("en", "fr"):
            shutil.copy(pair / "text", pair / f"text.{case}.{language}")
    (pair / "text").unlink()
    rc, _, err = run_sate("prep", "--kaldi-dir", pair, "--out", tmp_path / "data", "--splits", "extra")
    assert rc == 2 and err.strip().endswith(f"copy text.tc.en to {pair / 'text'}"), err


def test_espnets_target_side_from_inside_it_names_the_english_side(run_sate, kaldi_corpus, tmp_path: Path,
                                                                   monkeypatch: pytest.MonkeyPatch) -> None:
    """`--kaldi-dir .` from inside `train.en-de.de` looked for the English side inside it."""
    german = tmp_path / "train.en-de.de"
    shutil.copytree(kaldi_corpus[0], german)
    (tmp_path / "train.en-de.en").mkdir()
    monkeypatch.chdir(german)
    rc, _, err = run_sate("prep", "--kaldi-dir", ".", "--out", tmp_path / "data", "--splits", "extra")
    assert rc == 2 and err.strip().endswith(f"give its English side, {tmp_path / 'train.en-de.en'}"), err


def test_a_command_that_only_cats_a_file_is_named_with_the_line_to_write(run_sate, kaldi_corpus,
                                                                          tmp_path: Path) -> None:
    """ESPnet's MuST-C recipes list each talk as `ted_1 cat /m/ted_1.wav |`: "convert the recordings to audio files"
    did not fit audio files already there (twenty-seventh hostile pass). The line to write is named; written, it
    reads; any other command keeps the advice to convert."""
    directory = tmp_path / "kaldi"
    shutil.copytree(kaldi_corpus[0], directory)
    directory.chmod(0o755)  # the fixture's is read-only
    scp = directory / "wav.scp"
    scp.chmod(0o644)
    lines = scp.read_text().splitlines()
    rec, audio = lines[0].split(maxsplit=1)
    scp.write_text("\n".join([f"{rec} cat {audio} |", *lines[1:]]) + "\n")
    rc, _, err = run_sate("prep", "--kaldi-dir", directory, "--out", tmp_path / "data", "--splits", "kaldi")
    # the command as messages show a value (cut to 80 characters: a long temporary path is cut in its middle)
    assert rc == 2 and err.strip().startswith(f"sate prep: error: {scp}:1: {rec} is a command "
                                              f"({shown(f'cat {audio} |')}) that reads the file {audio} as it is: list "
                                              f"the file itself ('{rec} {audio}'); every such line: sed -E -i "), err
    scp.write_text("\n".join([f"{rec} {audio}", *lines[1:]]) + "\n")
    assert run_sate("prep", "--kaldi-dir", directory, "--out", tmp_path / "data", "--splits", "kaldi")[0] == 0
    # quoted, as a shell reads it: the file is the path without the quotes, and the line to write holds none
    # (it was `('REC '/m/x.wav'')`, a file named with quote characters; twenty-seventh hostile pass, review)
    spaced = tmp_path / "talk 1.wav"
    shutil.copy(audio, spaced)
    for quoted in (f"'{spaced}'", f'"{spaced}"'):
        scp.write_text("\n".join([f"{rec} cat {quoted} |", *lines[1:]]) + "\n")
        rc, _, err = run_sate("prep", "--kaldi-dir", directory, "--out", tmp_path / "data", "--splits", "kaldi")
        assert rc == 2 and err.strip().endswith(f"reads the file {spaced} as it is: list the file itself "
                                                f"('{rec} {spaced}')"), err
    scp.write_text("\n".join([f"{rec} {spaced}", *lines[1:]]) + "\n")
    assert run_sate("prep", "--kaldi-dir", directory, "--out", tmp_path / "data", "--splits", "kaldi")[0] == 0
    scp.write_text("\n".join([f'{rec} cat "$HOME/x.wav" |', *lines[1:]]) + "\n")  # the shell's to expand
    rc, _, err = run_sate("prep", "--kaldi-dir", directory, "--out", tmp_path / "data", "--splits", "kaldi")
    assert rc == 2 and "convert the recordings to audio files" in err, err



@pytest.mark.slow
def test_a_command_that_decodes_a_flac_file_is_named_with_the_line_to_write(run_sate, kaldi_corpus,
                                                                             tmp_path: Path) -> None:
    """Kaldi's LibriSpeech recipe lists each utterance as `utt flac -c -d -s /m/utt.flac |`, a FLAC file sate reads
    itself: it was told to "convert the recordings to audio files" (33rd hostile pass). The line to write is named;
    written, it reads; flac without -d (which encodes) keeps the advice to convert."""
    directory = tmp_path / "kaldi"
    directory.mkdir()
    audio = kaldi_corpus[0].parent / "audio" / "recA.wav"
    flac = tmp_path / "recA.flac"
    data, rate = sf.read(audio, dtype="int16")
    sf.write(flac, data, rate, format="FLAC")
    (directory / "text").write_text("recA ONLY THIS ONE\n")
    scp = directory / "wav.scp"
    for command in ("flac -c -d -s", "flac -cds", "flac --decode --stdout --silent"):
        scp.write_text(f"recA {command} {flac} |\n")
        rc, _, err = run_sate("prep", "--kaldi-dir", directory, "--out", tmp_path / "data", "--splits", "extra")
        assert rc == 2 and f"that decodes the FLAC file {flac}, read as it is: list the file itself ('recA {flac}'); " \
            f"every such line: sed -E -i " in err, err
        if shutil.which("sed") is not None:  # the sed followed writes every such line so
            subprocess.run(err.strip().partition("every such line: ")[2], shell=True, check=True)
            assert scp.read_text() == f"recA {flac}\n"
    (directory / "wav.scp").write_text(f"recA flac -c -s {flac} |\n")
    rc, _, err = run_sate("prep", "--kaldi-dir", directory, "--out", tmp_path / "data", "--splits", "extra")
    assert rc == 2 and "convert the recordings to audio files" in err, err
    (directory / "wav.scp").write_text(f"recA {flac}\n")
    rc, _, err = run_sate("prep", "--kaldi-dir", directory, "--out", tmp_path / "data", "--splits", "extra")
    assert rc == 0, err
    assert read_manifest(tmp_path / "data" / "extra.jsonl")[0]["duration"] == len(data) / rate

def test_a_wav_scp_naming_a_url_is_told_to_download_it(tmp_path: Path) -> None:
    """`utt1 https://host/a.wav` in wav.scp was "https:/host/a.wav: audio file is missing" (the name as a Path
    collapses it), no word that sate reads local files (review31z): the line and the URL as written now."""
    (tmp_path / "wav.scp").write_text("utt1 https://host/a.wav\n")
    with pytest.raises(SateError) as refused:
        audio_paths(tmp_path / "wav.scp")
    assert str(refused.value) == (f"{tmp_path}/wav.scp:1: https://host/a.wav: a URL, not a file: sate reads local "
                                  "files; download it first (curl -o a.wav https://host/a.wav) and give the file")
