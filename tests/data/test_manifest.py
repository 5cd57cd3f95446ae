"""Manifests: what `sate prep` writes and every command reads back."""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest

from sate.data.manifest import csv_records, csv_rows, manifest_bytes, missing_split, read_manifest, write_manifest
from sate.errors import SateError


def test_a_row_naming_audio_that_is_not_utf8_is_written_and_read_back(tmp_path: Path) -> None:
    """Nineteenth hostile pass: `sate prep` of a corpus under a folder named in bytes that are not UTF-8 (Latin-1
    "café") ended in a UnicodeEncodeError traceback as the manifest was written."""
    audio = os.fsdecode(b"/corpora/caf\xe9/ted_1.wav")
    row = {"id": "ted_1_0", "audio": audio, "offset": 0.0, "duration": 1.5, "n_frames": 148, "speaker": "spk.1",
           "src": "Hello.", "src_norm": "hello", "tgt": "Hallo."}
    write_manifest(tmp_path / "dev.jsonl", [row])
    assert read_manifest(tmp_path / "dev.jsonl") == [row]
    assert manifest_bytes([row]) == (tmp_path / "dev.jsonl").read_bytes()


def test_a_missing_split_is_named_with_the_splits_the_data_directory_holds(tmp_path: Path) -> None:
    """Twentieth hostile pass: `--split tst-common`, `data.valid: deev`, `--src-splits deev` were told to run
    `sate prep`, which had made the data directory's splits; the line now lists them (none: the line alone)."""
    with pytest.raises(SateError, match=r"x\.jsonl: manifest is missing \(run `sate prep` first\)$"):
        read_manifest(tmp_path / "x.jsonl")
    for split in ("tst-COMMON", "train", "dev", "zz"):
        (tmp_path / f"{split}.jsonl").write_text("")
    line = missing_split(tmp_path / "tst-common.jsonl", "tst-common is missing")
    assert line() == f"tst-common is missing; {tmp_path} holds the splits train, dev, tst-COMMON, zz"


def test_a_data_directorys_stored_folder_given_as_the_data_directory_names_it(tmp_path: Path) -> None:
    """Twenty-first hostile pass: `evaluate --data DATA/fbank` was told to run `sate prep`, and `pack --data
    DATA/fbank`, `analyze --data DATA/fbank` or `data.dir: DATA/fbank` to run `sate vocab`; each had run."""
    from sate.data.vocab import Vocabulary, vocabulary_kind

    data = tmp_path / "data"
    (data / "fbank").mkdir(parents=True)
    (data / "dev.jsonl").write_text("")
    said = f"{data / 'fbank'}: a folder inside the data directory {data}, not one itself: give {data}"
    assert missing_split(data / "fbank" / "dev.jsonl", "dev is missing")() == f"dev is missing; {said}"
    with pytest.raises(SateError, match=f"^{re.escape(said)}$"):
        vocabulary_kind(data / "fbank")
    with pytest.raises(SateError, match=f"^{re.escape(said)}$"):
        Vocabulary(data / "fbank" / "spm_src.model", data / "fbank" / "tokens_src.txt")
    other = tmp_path / "notes" / "drafts"  # a folder in no data directory: the line as it was
    other.mkdir(parents=True)
    assert missing_split(other / "dev.jsonl", "dev is missing")() == "dev is missing"


@pytest.mark.parametrize("brk", ["\x85", "\u2028", "\u2029"])
def test_a_csv_log_whose_lines_end_with_nel_or_a_separator_is_said_so(tmp_path: Path, brk: str) -> None:
    """The csv module splits on neither: the whole log was its header, and `sate report --curves` said the experiment
    "holds no training logs to draw" (twentieth hostile pass). Inside a later row such a character is text."""
    path = tmp_path / "metrics.csv"
    path.write_text(f"epoch,step,loss{brk}0,1,5.0{brk}", encoding="utf-8")
    for read in (csv_rows, csv_records):
        with pytest.raises(SateError, match=rf"^{path}:1: not a CSV log: .* inside its header line \(lines that end "
                                            r"with it\?\); save it with \\n or \\r\\n line ends$"):
            read(path)
    path.write_text(f"epoch,step,note\n0,1,a{brk}b\n", encoding="utf-8")
    assert csv_rows(path) == [(2, {"epoch": "0", "step": "1", "note": f"a{brk}b"})]



def test_a_byte_order_mark_and_blank_lines_hold_no_row(tmp_path: Path) -> None:
    """A manifest saved by a Windows editor ("UTF-8 with BOM"), or with an empty line at its end, was refused as
    "not a JSON object: Unexpected UTF-8 BOM (decode using utf-8-sig)" or "...: Expecting value", Python's words;
    a corpus's own text files drop both (twenty-seventh hostile pass). A line that is not JSON is still refused."""
    rows = [{"id": f"u{k}", "audio": str(tmp_path / "a.wav"), "offset": 0.0, "duration": 1.0, "n_frames": 98,
             "speaker": "s", "src": "hi", "src_norm": "hi", "tgt": None} for k in range(2)]
    path = tmp_path / "train.jsonl"
    write_manifest(path, rows)
    lines = path.read_text().splitlines()
    path.write_text("\ufeff" + lines[0] + "\r\n\r\n" + lines[1] + "\n\n \n")
    assert read_manifest(path) == rows
    path.write_text(lines[0] + "\n\nnot json\n")
    with pytest.raises(SateError, match=r"train.jsonl:3: not a JSON object"):
        read_manifest(path)


ROW = {"id": "ted_1_0", "audio": "wav/ted_1.wav", "offset": 0.0, "duration": 1.5, "n_frames": 148,
       "speaker": "spk.1", "src": "Hello.", "src_norm": "hello", "tgt": "Hallo."}


def _shared(tmp_path: Path) -> tuple[Path, Path]:
    """A (a data directory written by hand: relative audio, its talk in A/wav) and B, whose dev.jsonl links A's."""
    a, b = tmp_path / "A", tmp_path / "B"
    (a / "wav").mkdir(parents=True)
    b.mkdir()
    (a / "wav" / "ted_1.wav").write_bytes(b"A's talk")
    write_manifest(a / "dev.jsonl", [ROW])
    (b / "dev.jsonl").symlink_to(Path("..") / "A" / "dev.jsonl")
    return a, b


def test_a_symlinked_manifest_reads_relative_audio_from_the_folder_that_holds_it(tmp_path: Path) -> None:
    """Twenty-ninth hostile pass: `B/dev.jsonl` linked to `../A/dev.jsonl` (a split shared between two data
    directories) read a relative `wav/ted_1.wav` from the link's folder: B's own talk of that name (another corpus's)
    was read without a word, and where B held none, "audio missing". A's is read where only A holds the talk; B's,
    as before, where only B does."""
    a, b = _shared(tmp_path)
    assert read_manifest(b / "dev.jsonl")[0]["audio"] == str(a / "wav" / "ted_1.wav")
    assert read_manifest(a / "dev.jsonl")[0]["audio"] == str(a / "wav" / "ted_1.wav")
    (a / "wav" / "ted_1.wav").unlink()
    (b / "wav").mkdir()
    (b / "wav" / "ted_1.wav").write_bytes(b"B's talk")
    assert read_manifest(b / "dev.jsonl")[0]["audio"] == str(b / "wav" / "ted_1.wav")


def test_a_symlinked_manifest_whose_talk_both_folders_hold_is_refused(tmp_path: Path) -> None:
    """Twenty-ninth hostile pass: B's own talks (processed: denoised, re-encoded) beside A's linked segmentation
    were read; then, with the link's target's folder read, A's were, B's ignored without a word. Which is meant
    cannot be told: one line names both, and the one that remains, once the other is removed, is read."""
    a, b = _shared(tmp_path)
    (b / "wav").mkdir()
    (b / "wav" / "ted_1.wav").write_bytes(b"B's processed talk")
    write_manifest(a / "dev.jsonl", [{**ROW, "id": "ted_1_1"}, ROW])
    with pytest.raises(SateError, match=rf"^{b / 'dev.jsonl'}:1: audio 'wav/ted_1.wav' is both {b / 'wav'}/ted_1.wav "
                                        rf"\(beside the link\) and {a / 'wav'}/ted_1.wav \(beside {a / 'dev.jsonl'}, "
                                        r"which it links to\), two different files: replace the link by a copy whose "
                                        r"audio paths are absolute .*, or remove the copy not meant$"):
        read_manifest(b / "dev.jsonl")
    (a / "wav" / "ted_1.wav").unlink()
    assert {r["audio"] for r in read_manifest(b / "dev.jsonl")} == {str(b / "wav" / "ted_1.wav")}


def test_a_tree_of_links_reads_audio_as_its_path_spells_it(tmp_path: Path) -> None:
    """review29m: a `cp -rs` tree (each file a link, B/wav/ted_1.wav too) and a manifest linked within its own
    folder (`dev.jsonl` -> `dev.v1.jsonl`) in a data directory reached through a link read the same files as their
    targets: their audio paths are spelt from the link's folder as before the twenty-ninth pass, so the features'
    fingerprints, which hash the path, are those computed before, and nothing is called changed and recomputed."""
    a, _ = _shared(tmp_path)
    tree = tmp_path / "S"
    (tree / "wav").mkdir(parents=True)
    (tree / "dev.jsonl").symlink_to(a / "dev.jsonl")
    (tree / "wav" / "ted_1.wav").symlink_to(a / "wav" / "ted_1.wav")
    assert read_manifest(tree / "dev.jsonl")[0]["audio"] == str(tree / "wav" / "ted_1.wav")
    (a / "dev.jsonl").rename(a / "dev.v1.jsonl")
    (a / "dev.jsonl").symlink_to("dev.v1.jsonl")
    (tmp_path / "C").symlink_to("A")
    assert read_manifest(tmp_path / "C" / "dev.jsonl")[0]["audio"] == str(tmp_path / "C" / "wav" / "ted_1.wav")
