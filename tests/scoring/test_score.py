"""`sate score` prints exactly what the sacrebleu CLI prints; WER ignores case and punctuation."""

from __future__ import annotations

import contextlib
import gzip
import io
import json
import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from sate.cli import main
from sate.errors import SateError
from sate.scoring.score import read_lines, sacrebleu_scores, wer_line, word_error_rate
from sate.targets import NAMED_KINDS

HYPS = ["Das ist ein kleiner Test.", "Wie geht es dir?", "Er sagte: „Nein!“", "", "DAS HAUS IST GROß.",
        "Ich habe 3,5 Äpfel gekauft  ", "Sie kommt morgen nicht."]
REFS = ["Das ist ein kleiner Test.", "Wie geht's dir?", "Er sagte: „Nein, danke!“", "Applaus",
        "Das Haus ist groß.", "Ich habe 3,5 Äpfel gekauft.", "Morgen kommt sie nicht."]


@pytest.mark.slow
def test_score_prints_exactly_what_the_sacrebleu_cli_prints(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                            sacrebleu_cli: Callable[..., str]) -> None:
    hyp, ref = tmp_path / "hyp.txt", tmp_path / "ref.txt"
    hyp.write_text("\n".join(HYPS) + "\n", encoding="utf-8")
    ref.write_text("\r\n".join(REFS) + "\r\n", encoding="utf-8")  # CRLF: sacrebleu strips it, so do we
    assert main(["score", "--hyp", str(hyp), "--ref", str(ref), "--format", "json"]) == 0
    ours = capsys.readouterr().out
    assert ours == sacrebleu_cli(ref, hyp)
    assert main(["score", "--hyp", str(hyp), "--ref", str(ref)]) == 0
    assert capsys.readouterr().out == sacrebleu_cli(ref, hyp, "-f", "text")
    # with --wer: sacrebleu's objects as it lays them out, WER's last in the same layout (it was a level deeper)
    assert main(["score", "--hyp", str(hyp), "--ref", str(ref), "--format", "json", "--wer"]) == 0
    with_wer = capsys.readouterr().out
    assert with_wer.startswith(ours.removesuffix("\n]\n") + ",\n{\n \"name\": \"WER\",\n \"score\": "), with_wer[-200:]
    cli = {m["name"]: m for m in json.loads(ours)}
    assert cli["BLEU"]["signature"].startswith("nrefs:1|case:mixed|eff:no|tok:13a|")
    scores = sacrebleu_scores(read_lines(hyp), read_lines(ref))
    assert {name: round(s.score, 1) for name, s in scores.items()} == {
        "BLEU": cli["BLEU"]["score"], "chrF": cli["chrF2"]["score"], "TER": cli["TER"]["score"]}

    short = tmp_path / "short.txt"
    short.write_text("eins\n")
    assert main(["score", "--hyp", str(short), "--ref", str(ref)]) == 2
    assert f"{short} has 1 lines but {ref} has 7" in capsys.readouterr().err


def test_wer_ignores_case_and_punctuation() -> None:
    assert word_error_rate(["Hello, World!"], ["hello world"]).wer == 0.0
    wer = word_error_rate(["the cat sat", "on mat"], ["the cat sat down", "on the mat"])
    assert (wer.errors, wer.words) == (2, 7) and wer.wer == pytest.approx(200 / 7)
    with pytest.raises(SateError, match="2 transcripts but 1 references"):
        word_error_rate(["a", "b"], ["a"])


def test_wer_against_blank_references_is_undefined_not_zero(tmp_path: Path, capsys: pytest.CaptureFixture[str]
                                                            ) -> None:
    wer = word_error_rate(["ja genau", "das auch"], ["", "(Applause)"])
    assert (wer.errors, wer.words, wer.wer) == (4, 0, None)
    assert wer_line(wer) == "WER (lowercase, no punctuation) undefined: the references hold no words (4 errors)"
    assert wer_line(word_error_rate(["a b"], ["a c"])) == "WER (lowercase, no punctuation) = 50.00 (1 errors / 2 words)"
    hyp, ref = tmp_path / "hyp.txt", tmp_path / "ref.txt"
    hyp.write_text("eins zwei\ndrei\nvier\n")
    ref.write_text("\n \n(Laughter)\n")
    for fmt in ("text", "json"):
        assert main(["score", "--hyp", str(hyp), "--ref", str(ref), "--wer", "--format", fmt]) == 2
        out, err = capsys.readouterr()
        assert out == "" and err.count("\n") == 1
        assert f"{ref}: the references hold no words after normalisation; WER is undefined" in err
    assert main(["score", "--hyp", str(hyp), "--ref", str(ref)]) == 0  # BLEU alone is what sacrebleu gives
    ref.write_text("\n\n\n")  # all blank: --wer says WER's words, not the translations' (review33r)
    assert main(["score", "--hyp", str(hyp), "--ref", str(ref), "--wer"]) == 2
    assert capsys.readouterr().err == (f"sate score: error: {ref}: the references hold no words after normalisation; "
                                       "WER is undefined (3 blank or sound-tag-only lines)\n")


def test_score_reads_a_fifo_as_a_stream_and_names_a_directory(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    import os
    import threading

    ref = tmp_path / "ref.txt"
    ref.write_text("Der Zug fährt ab.\nWo ist der Bahnhof?\n", encoding="utf-8")
    fifo = tmp_path / "hyp.fifo"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_text("Der Zug fährt ab.\nWo ist der Bahnhof?\n"))
    writer.start()
    assert main(["score", "--ref", str(ref), "--hyp", str(fifo)]) == 0  # the same text as the references
    writer.join()
    assert "BLEU" in capsys.readouterr().out and read_lines(ref) == ["Der Zug fährt ab.", "Wo ist der Bahnhof?"]
    assert main(["score", "--ref", str(ref), "--hyp", str(tmp_path)]) == 2
    assert f"{tmp_path}: is a directory, not a text file" in capsys.readouterr().err
    with pytest.raises(SateError, match="file is missing"):
        read_lines(tmp_path / "nope.txt")


@pytest.mark.slow
def test_dash_is_standard_input_for_one_of_hyp_and_ref(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`--hyp /dev/stdin --ref /dev/stdin` read the stream for --hyp and then called --ref empty ("has 2 lines
    but /dev/stdin has 0"); `-` was "file is missing". Now `-` is standard input, and one stream for both is
    refused before it is read; with standard input closed, `-` is named as such ("/dev/stdin: file is missing")."""
    import os
    import subprocess
    import sys

    ref, hyp = tmp_path / "ref.txt", tmp_path / "hyp.txt"
    ref.write_text("Der Zug fährt ab.\nWo ist der Bahnhof?\n", encoding="utf-8")
    hyp.write_bytes(ref.read_bytes())
    assert main(["score", "--hyp", str(ref), "--ref", str(ref)]) == 0
    by_file = capsys.readouterr().out
    score = [sys.executable, "-m", "sate.cli", "score"]
    piped = subprocess.run([*score, "--hyp", "-", "--ref", str(ref)], input=ref.read_text(), capture_output=True,
                           text=True, timeout=120)
    assert (piped.returncode, piped.stdout, piped.stderr) == (0, by_file, "")
    both = subprocess.run([*score, "--hyp", "-", "--ref", "/dev/stdin"], input=ref.read_text(), capture_output=True,
                          text=True, timeout=120)
    assert (both.returncode, both.stderr) == (2, "sate score: error: --hyp and --ref are one stream (/dev/stdin), "
                                                 "which can be read once: give one of them as a file\n")
    ref.write_text("\ufeffDer Zug fährt ab.\nWo ist der Bahnhof?\n\n", encoding="utf-8")  # a mark, a blank end
    for given in (["--hyp", str(hyp), "--ref", "-"], ["--hyp", "-", "--ref", str(hyp)]):
        with ref.open() as stream:  # `< ref.txt`: /dev/stdin leads to a regular file, but sed -i cannot edit it
            told = subprocess.run([*score, *given], stdin=stream, capture_output=True, text=True, timeout=120)
        assert told.returncode == 2 and told.stderr.endswith(": /dev/stdin ends with a blank line, read as a "
                                                             "sentence; remove it if no sentence is there\n")
    ref.write_text("\ufeffDer Zug fährt ab.\nWo ist der Bahnhof?\n", encoding="utf-8")
    with ref.open() as stream:
        told = subprocess.run([*score, "--hyp", str(hyp), "--ref", "-"], stdin=stream, capture_output=True, text=True,
                              timeout=120)
    assert told.returncode == 0 and told.stderr.endswith("remove it to score the text alone\n"), told.stderr
    closed = subprocess.run([*score, "--hyp", str(ref), "--ref", "-"], stdin=subprocess.DEVNULL, capture_output=True,
                            text=True, timeout=120, preexec_fn=lambda: os.close(0))  # the shell's <&-
    assert (closed.returncode, closed.stderr) == (2, "sate score: error: --ref -: standard input is closed\n")
    fifo = tmp_path / "text.fifo"
    os.mkfifo(fifo)
    assert main(["score", "--hyp", str(fifo), "--ref", str(fifo)]) == 2  # refused before it is opened: no hang
    assert f"--hyp and --ref are one stream ({fifo})" in capsys.readouterr().err
    # seventeenth hostile pass: /dev/null, which reads empty every time, was called a stream read once
    assert main(["score", "--hyp", os.devnull, "--ref", os.devnull]) == 2
    assert capsys.readouterr().err == "sate score: error: /dev/null: no lines to score\n"
    # eighteenth: a socket, which no file read opens, was "cannot read (No such device or address)"
    import socket

    with socket.socket(socket.AF_UNIX) as sock:
        sock.bind(str(tmp_path / "text.sock"))
        assert main(["score", "--hyp", str(tmp_path / "text.sock"), "--ref", str(ref)]) == 2
    assert capsys.readouterr().err == f"sate score: error: {tmp_path}/text.sock: is a socket, not a text file\n"


def test_binary_data_is_refused_at_its_first_nul_byte(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    """`sate score --hyp /dev/zero` read for ever (the whole file was read before any check); text never holds a
    NUL byte, so the first one stops the read, naming its line, in whichever block it comes."""
    import sate.data.manifest as manifest

    ref = tmp_path / "ref.txt"
    ref.write_text("Der Zug fährt ab.\nWo ist der Bahnhof?\n", encoding="utf-8")
    assert main(["score", "--ref", str(ref), "--hyp", "/dev/zero"]) == 2
    assert capsys.readouterr().err.strip() == ("sate score: error: /dev/zero:1: a NUL byte (at byte 0): binary "
                                               "data, not text")
    monkeypatch.setattr(manifest, "TEXT_BLOCK", 7)  # the NUL in the fourth block, after two newlines
    hyp = tmp_path / "hyp.txt"
    hyp.write_bytes(b"Der Zug.\nWo ist\ner?\x00\n")
    with pytest.raises(SateError, match=r"hyp.txt:3: a NUL byte \(at byte 19\)"):
        read_lines(hyp)
    hyp.write_bytes("Der Zug fährt ab.\nWo ist der Bahnhof?".encode())  # no NUL: read whole across the blocks
    assert read_lines(hyp) == read_lines(ref)


def test_a_gz_file_is_read_decompressed_as_sacrebleu_reads_it(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """Twentieth hostile pass: sacrebleu reads a `*.gz` reference decompressed; `sate score --ref refs.de.gz` said
    "a NUL byte (at byte 8): binary data, not text". A gzip file that is cut, or no gzip file, is one line."""
    import gzip

    hyp, ref = tmp_path / "hyp.txt", tmp_path / "ref.txt"
    hyp.write_text("\n".join(HYPS) + "\n", encoding="utf-8")
    ref.write_text("\n".join(REFS) + "\n", encoding="utf-8")
    assert main(["score", "--hyp", str(hyp), "--ref", str(ref)]) == 0
    plain = capsys.readouterr().out
    for path in (hyp, ref):
        Path(f"{path}.gz").write_bytes(gzip.compress(path.read_bytes()))
    assert main(["score", "--hyp", f"{hyp}.gz", "--ref", f"{ref}.gz"]) == 0
    assert capsys.readouterr().out == plain
    cut, not_gz = tmp_path / "cut.gz", tmp_path / "plain.gz"
    cut.write_bytes(Path(f"{ref}.gz").read_bytes()[:30])
    not_gz.write_bytes(ref.read_bytes())
    for bad, why in ((cut, "damaged gzip data: Compressed file ended before the end-of-stream marker was reached"),
                     (not_gz, "Not a gzipped file (b'Da')")):
        assert main(["score", "--hyp", str(hyp), "--ref", str(bad)]) == 2
        assert capsys.readouterr().err == f"sate score: error: {bad}: cannot read ({why})\n"


def test_a_mustc_segment_list_is_not_scored_as_text(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`sate score --ref txt/tst-COMMON.yaml` (the segment list beside the texts) printed BLEU 0.0, exit 0: its lines
    are as many as the hypotheses (twenty-first hostile pass). Refused, naming the texts beside it."""
    hyp, segments = tmp_path / "hyp.txt", tmp_path / "tst-COMMON.yaml"
    hyp.write_text("\n".join(HYPS) + "\n", encoding="utf-8")
    segments.write_text("".join(f"- {{duration: 1.5, offset: {i}.0, rW: 0, uW: 0, speaker_id: spk.1, wav: ted_1.wav}}\n"
                                for i in range(len(HYPS))), encoding="utf-8")
    for args in (["--hyp", hyp, "--ref", segments], ["--hyp", segments, "--ref", hyp]):
        assert main(["score", *map(str, args)]) == 2
        assert capsys.readouterr().err == (f"sate score: error: {segments}: a MuST-C segment list (lines of duration, "
                                           "offset and wav), not text to score: the segments' texts are the "
                                           "tst-COMMON.LANG files beside it (e.g. tst-COMMON.de)\n")
    # a text that speaks of one is text
    hyp.write_text("- {duration: 1.5, offset: 0.0}\n" + "\n".join(HYPS[1:]) + "\n", encoding="utf-8")
    assert main(["score", "--hyp", str(hyp), "--ref", str(hyp)]) == 0


def test_subword_pieces_are_scored_as_given_with_a_note(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Hypotheses of SentencePiece or BPE pieces (spm_encode's, fairseq-generate's) were scored without a word: a BLEU
    comparable with no detokenized one (twenty-first hostile pass). The scores stay sacrebleu's; a note says why
    they mean little. Words alone, or a piece mark on a few lines, get none."""
    ref = tmp_path / "ref.txt"
    ref.write_text("\n".join(REFS) + "\n", encoding="utf-8")
    pieces = {"sp.txt": ["▁" + " ▁".join(line.split()) for line in REFS],
              "bpe.txt": [line.replace("a", "a@@ ", 1) for line in REFS],
              "few.txt": ["▁" + REFS[0], *REFS[1:]]}
    for name, lines in pieces.items():
        (tmp_path / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    assert main(["score", "--hyp", str(ref), "--ref", str(ref)]) == 0
    plain = capsys.readouterr()
    assert plain.err == ""
    for name, what, undo in (("sp.txt", "SentencePiece pieces (▁)", "spm_decode"),
                             ("bpe.txt", "BPE pieces (@@)", "sed 's/@@ //g'")):
        assert main(["score", "--hyp", str(tmp_path / name), "--ref", str(ref)]) == 0
        out, err = capsys.readouterr()
        marked = sum(("▁" if name == "sp.txt" else "@@") in line for line in pieces[name] if line.strip())
        assert err == (f"sate score: note: {tmp_path / name}: {marked} of {len(REFS)} lines hold {what}: a BLEU of "
                       f"pieces is not comparable with detokenized BLEU; join them first ({undo})\n")
        assert out != plain.out and "BLEU|nrefs:1" in out  # scored all the same, as sacrebleu scores them
    assert main(["score", "--hyp", str(tmp_path / "few.txt"), "--ref", str(ref)]) == 0
    assert capsys.readouterr().err == ""


def test_a_file_compressed_otherwise_is_named_so(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Twenty-first hostile pass: a reference compressed with bzip2 or xz, or gzipped under a name that does not end
    in .gz, was "a NUL byte (at byte 14): binary data, not text"; it is named as what it is."""
    import bz2
    import gzip
    import lzma

    hyp = tmp_path / "hyp.txt"
    hyp.write_text("\n".join(HYPS) + "\n", encoding="utf-8")
    text = ("\n".join(REFS) + "\n").encode()
    for name, data, what in (("ref.txt.bz2", bz2.compress(text), "bzip2-compressed data"),
                             ("ref.txt.xz", lzma.compress(text), "xz-compressed data"),
                             ("REF.TXT.GZ", gzip.compress(text), "gzip-compressed data")):
        (tmp_path / name).write_bytes(data)
        assert main(["score", "--hyp", str(hyp), "--ref", str(tmp_path / name)]) == 2
        assert capsys.readouterr().err == (f"sate score: error: {tmp_path / name}: {what}, not text (decompress it "
                                           "first)\n")


def test_text_past_the_size_cap_is_refused_as_it_is_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A pipe fed endless text without a NUL (`sate score --hyp <(yes)`) was read until memory ran out; reading
    stops at the cap (here made 20 bytes, read 7 at a time), whatever the source."""
    import os
    import threading

    import sate.data.manifest as manifest

    monkeypatch.setattr(manifest, "TEXT_BLOCK", 7)
    monkeypatch.setattr(manifest, "MAX_TEXT_BYTES", 20)
    hyp = tmp_path / "hyp.txt"
    hyp.write_text("y\n" * 10)  # 20 bytes: at the cap, read
    assert read_lines(hyp) == ["y"] * 10
    fifo = tmp_path / "yes.fifo"
    os.mkfifo(fifo)

    def endless() -> None:
        with contextlib.suppress(BrokenPipeError), open(fifo, "w") as f:
            while True:
                f.write("y\n" * 100)

    writer = threading.Thread(target=endless, daemon=True)
    writer.start()
    with pytest.raises(SateError, match=r"yes.fifo: more than 20 bytes of text"):
        read_lines(fifo)
    writer.join(timeout=10)
    assert not writer.is_alive()


@pytest.mark.parametrize("option", ["--hyp", "--ref"])
def test_a_manifest_given_as_hypotheses_or_references_is_refused(tmp_path: Path, option: str,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """Twenty-first hostile pass: `sate score --ref DATA/dev.jsonl` (where the references are) scored the manifest's
    rows of JSON as sentences, and a split of as many rows as the hypotheses' lines got a BLEU, exit 0."""
    from sate.cli import main

    manifest, text = tmp_path / "dev.jsonl", tmp_path / "hyp.txt"
    manifest.write_text('{"id": "a", "audio": "a.wav", "src": "x", "tgt": "der Zug"}\n'
                        '{"id": "b", "audio": "a.wav", "src": "y", "tgt": "ein Tee"}\n')
    text.write_text("der Zug\nein Tee\n")
    given = {"--hyp": text, "--ref": text, option: manifest}
    assert main(["score", "--hyp", str(given["--hyp"]), "--ref", str(given["--ref"])]) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err.startswith(f"sate score: error: {option} {manifest}: a manifest (`sate prep`'s "
                                                "rows of JSON), not text of one sentence a line: give the ")


def test_a_byte_order_mark_is_scored_as_sacrebleu_scores_it_with_a_note(tmp_path: Path,
                                                                        capsys: pytest.CaptureFixture[str],
                                                                        sacrebleu_cli: Callable[..., str]) -> None:
    """References re-saved as "UTF-8 with BOM" (a Windows editor) scored 98.3 BLEU against the same text without
    a word: sacreBLEU glues the mark to the first word, and `sate score` agrees with it (twenty-second hostile pass).
    The scores stay sacrebleu's; a note names the mark and how to remove it, and the removal gives 100."""
    ref, bom = tmp_path / "ref.txt", tmp_path / "ref_bom.txt"
    ref.write_text("\n".join(REFS) + "\n", encoding="utf-8")
    bom.write_text("\n".join(REFS) + "\n", encoding="utf-8-sig")
    assert main(["score", "--hyp", str(ref), "--ref", str(bom), "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert out == sacrebleu_cli(bom, ref) and json.loads(out)[0]["score"] < 100
    assert err == (f"sate score: note: {bom} begins with a byte-order mark (U+FEFF), scored as part of its first word "
                   "as sacrebleu scores it; remove it to score the text alone "
                   f"(sed -i '1s/^\\xEF\\xBB\\xBF//' {bom})\n")
    subprocess.run(err.strip().rsplit("(", 1)[1].rstrip(")"), shell=True, check=True)  # the advice, as given
    assert main(["score", "--hyp", str(ref), "--ref", str(bom), "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert err == "" and json.loads(out)[0]["score"] == 100


def test_a_byte_order_mark_at_a_later_lines_start_gets_the_note(tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                               sacrebleu_cli: Callable[..., str]) -> None:
    """Reference files that each open with a mark, joined with `cat`, hold one at a later line's start: 91.1 BLEU of
    the text against itself, without a word, where the note looked at the first line only (31st hostile pass). The
    note names the line, and its `sed` gives 100."""
    first, second, ref = tmp_path / "a.de", tmp_path / "b.de", tmp_path / "ref.de"
    first.write_text("\n".join(REFS[:3]) + "\n", encoding="utf-8")
    second.write_text("\n".join(REFS[3:]) + "\n", encoding="utf-8-sig")
    ref.write_bytes(first.read_bytes() + second.read_bytes())
    hyp = tmp_path / "hyp.de"
    hyp.write_text("\n".join(REFS) + "\n", encoding="utf-8")
    assert main(["score", "--hyp", str(hyp), "--ref", str(ref), "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert out == sacrebleu_cli(ref, hyp) and json.loads(out)[1]["score"] < 100
    assert err == (f"sate score: note: line 4 of {ref} begins with a byte-order mark (U+FEFF: files saved with one, "
                   "joined with cat?), scored as part of its first word as sacrebleu scores it; remove it to score the "
                   f"text alone (sed -i 's/^\\xEF\\xBB\\xBF//' {ref})\n")
    ref.write_bytes(second.read_bytes() + second.read_bytes())  # two marks: both named
    hyp.write_text("\n".join(REFS[3:] * 2) + "\n", encoding="utf-8")
    assert main(["score", "--hyp", str(hyp), "--ref", str(ref)]) == 0
    lines = len(REFS) - 3
    err = capsys.readouterr().err
    assert f"sate score: note: 2 lines of {ref} begin with a byte-order mark (U+FEFF; lines 1, {lines + 1}: " in err
    subprocess.run(err.strip().rsplit("(", 1)[1].rstrip(")"), shell=True, check=True)  # the advice, as given
    assert main(["score", "--hyp", str(hyp), "--ref", str(ref), "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert err == "" and json.loads(out)[0]["score"] == 100


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be", "utf-32"])
def test_text_in_utf16_or_utf32_is_named_as_such(tmp_path: Path, encoding: str) -> None:
    """References saved by Windows Notepad as "Unicode" (UTF-16) or by PowerShell's `>` were "a NUL byte (at byte
    3): binary data, not text" (twenty-second hostile pass); they are named with the iconv command that converts
    them, which then reads."""
    wide = tmp_path / "ref.txt"
    wide.write_text("\n".join(REFS) + "\n", encoding=encoding)
    name = {"utf-16": "UTF-16", "utf-16-le": "UTF-16LE", "utf-16-be": "UTF-16BE", "utf-32": "UTF-32"}[encoding]
    with pytest.raises(SateError, match=rf"^{wide}: {name} text, not UTF-8: convert it first \(iconv -f {name} -t "
                                        r"UTF-8; a Windows editor saves UTF-8 when asked\)$"):
        read_lines(wide)
    converted = subprocess.run(["iconv", "-f", name, "-t", "UTF-8", str(wide)], check=True, capture_output=True).stdout
    (tmp_path / "utf8.txt").write_bytes(converted)
    assert read_lines(tmp_path / "utf8.txt") == [line.rstrip() for line in REFS]


SWAPPED = {  # files a researcher's folders hold, each given where hyp.txt or ref.txt is read (two lines each)
    "delays.jsonl": ('{"id": "a", "delays": [0.5, 1.0]}\n{"id": "b", "delays": [0.2]}\n', "rows of JSON"),
    "talk.srt": ("1\n00:00:00,000 --> 00:00:01,500\nder Zug\n", "SRT subtitles"),
    "metrics.csv": ("epoch,step,train/loss\n0,1,5.0\n", "a CSV table"),
    "dev.scp": ("a /d/fbank/dev/00000.ark:9\nb /d/fbank/dev/00000.ark:812\n", "a feature index"),
}


@pytest.mark.parametrize("option", ["--hyp", "--ref"])
@pytest.mark.parametrize("name", sorted(SWAPPED))
def test_another_kind_of_file_given_as_hypotheses_or_references_is_refused(
        tmp_path: Path, option: str, name: str, capsys: pytest.CaptureFixture[str]) -> None:
    """Twenty-second hostile pass: an evaluation's delays.jsonl, a translate --format srt output, metrics.csv or a
    feature index copied as hyp.txt (or ref.txt) was scored as sentences, exit 0."""
    from sate.cli import main

    text, what = SWAPPED[name]
    swapped, other = tmp_path / name, tmp_path / "hyp.txt"
    swapped.write_text(text)
    other.write_text("der Zug\n" * len(text.splitlines()))
    given = {"--hyp": other, "--ref": other, option: swapped}
    assert main(["score", "--hyp", str(given["--hyp"]), "--ref", str(given["--ref"])]) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err.startswith(f"sate score: error: {option} {swapped}: {what}")
    assert len(out.err.splitlines()) == 1


def _evaluation(folder: Path, split: str) -> Path:
    """A `sate evaluate` run's folder as it writes it: the four texts and a results.json naming the split."""
    folder.mkdir(parents=True)
    texts = {"hyp.txt": "der Zug kommt\nein Tee bitte\n", "ref.txt": "Der Zug kommt.\nEinen Tee, bitte.\n",
             "transcript.txt": "the train comes\na tea please\n",
             "transcript_ref.txt": "the train is coming\na tea please\n"}
    for name, text in texts.items():
        (folder / name).write_text(text)
    (folder / "results.json").write_text(json.dumps({"mode": "st", "split": split, "utterances": 2, "bleu": 10.0},
                                                    indent=1))
    return folder


@pytest.mark.parametrize(("hyp", "ref", "said"), [
    ("ref.txt", "hyp.txt", "the references of the translations and the translations of `sate evaluate` runs: --hyp "
                           "and --ref swapped?"),
    ("transcript_ref.txt", "transcript.txt", "the references of the transcripts and the transcripts of `sate "
                                             "evaluate` runs: --hyp and --ref swapped?"),
    ("hyp.txt", "transcript_ref.txt", "the translations and the references of the transcripts of `sate evaluate` "
                                      "runs, one in the target language and one in English: score "),
    ("transcript.txt", "ref.txt", "the transcripts and the references of the translations of `sate evaluate` runs, "
                                  "one in the target language and one in English: score "),
    ("hyp.txt", "transcript.txt", "the translations and the transcripts of `sate evaluate` runs, one in the target "
                                  "language and one in English: score "),
])
def test_an_evaluations_texts_given_in_the_wrong_roles_are_refused(tmp_path: Path, hyp: str, ref: str, said: str,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """Twenty-third hostile pass: an evaluation's ref.txt as --hyp and hyp.txt as --ref (swapped), its translations
    against its transcripts' references, and one file as both were scored, exit 0; `sate evaluate`'s folder (its
    results.json) says what each text is. The right pairs are scored, and so are texts of one side of two runs
    (the translations of a beam-1 run against the beam-5 run's: how much a change altered the outputs)."""
    evaluation = _evaluation(tmp_path / "decode_dev", "dev")
    assert main(["score", "--hyp", str(evaluation / hyp), "--ref", str(evaluation / ref)]) == 2
    out = capsys.readouterr()
    assert out.out == "" and out.err.startswith(f"sate score: error: --hyp {evaluation / hyp} and --ref "
                                                f"{evaluation / ref}: {said}"), out.err
    assert len(out.err.splitlines()) == 1
    assert main(["score", "--hyp", str(evaluation / hyp), "--ref", str(evaluation / hyp)]) == 2
    assert capsys.readouterr().err == (f"sate score: error: --hyp and --ref are one file of a `sate evaluate` run "
                                       f"({evaluation / hyp}): a text scored against itself\n")
    other = _evaluation(tmp_path / "beam1/decode_dev", "dev")
    for hyp, ref in (("hyp.txt", "ref.txt"), ("transcript.txt", "transcript_ref.txt")):
        assert main(["score", "--hyp", str(evaluation / hyp), "--ref", str(evaluation / ref), "--wer"]) == 0
        assert "BLEU|nrefs:1" in capsys.readouterr().out
    for name in ("hyp.txt", "ref.txt", "transcript.txt"):  # one side of two runs: compared
        assert main(["score", "--hyp", str(other / name), "--ref", str(evaluation / name)]) == 0
        assert "BLEU|nrefs:1" in capsys.readouterr().out
    plain = tmp_path / "mine.txt"  # a text of no run against a run's translations: scored as given
    plain.write_text((evaluation / "ref.txt").read_text())
    assert main(["score", "--hyp", str(plain), "--ref", str(evaluation / "hyp.txt")]) == 0
    (evaluation / "results.json").unlink()  # not an evaluation's folder: the names say nothing, scored as given
    assert main(["score", "--hyp", str(evaluation / "ref.txt"), "--ref", str(evaluation / "hyp.txt")]) == 0


def test_an_evaluation_scored_against_another_splits_references_is_refused(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Twenty-third hostile pass: the translations of tst-COMMON scored against dev's references of as many lines
    got a BLEU, exit 0. Another system's evaluation of the same split holds the same references: scored."""
    test, dev = _evaluation(tmp_path / "st/decode_tst-COMMON", "tst-COMMON"), _evaluation(tmp_path / "st/decode_dev",
                                                                                          "dev")
    assert main(["score", "--hyp", str(test / "hyp.txt"), "--ref", str(dev / "ref.txt")]) == 2
    assert capsys.readouterr().err == (f"sate score: error: --hyp {test}/hyp.txt and --ref {dev}/ref.txt: texts of "
                                       "`sate evaluate` runs of the splits 'tst-COMMON' and 'dev' (results.json beside "
                                       "each): score texts of one split\n")
    cascade = _evaluation(tmp_path / "cascade/decode_tst-COMMON", "tst-COMMON")
    assert main(["score", "--hyp", str(test / "hyp.txt"), "--ref", str(cascade / "ref.txt")]) == 0


def test_references_without_spaces_between_words_get_a_note(tmp_path: Path,
                                                            capsys: pytest.CaptureFixture[str]) -> None:
    """Chinese or Japanese references (MuST-C's en-zh, en-ja) were scored with BLEU's 13a tokenizer, a sentence a
    few long words, without a word (twenty-fourth hostile pass): a note says which BLEU it is not; the scores are
    sacreBLEU's as before. German, and Korean (spaced), get none."""
    hyp, ref = tmp_path / "hyp.txt", tmp_path / "ref.txt"
    cases = [("我们今天去公园。\n他喜欢读书。\n", "我们今天去公园。\n她喜欢读书。\n", "Chinese", "-l en-zh"),
             ("今日は公園に行きます。\n", "今日は公園へ行きました。\n", "Japanese", "-l en-ja"),
             ("Wir gehen heute.\n", "Wir gehen heute in den Park.\n", None, ""),
             ("오늘 공원에 갑니다.\n", "오늘 공원에 갔습니다.\n", None, "")]
    for hyps, refs, script, flag in cases:
        hyp.write_text(hyps, encoding="utf-8")
        ref.write_text(refs, encoding="utf-8")
        assert main(["score", "--hyp", str(hyp), "--ref", str(ref)]) == 0
        captured = capsys.readouterr()
        assert "BLEU|" in captured.out
        if script:
            assert f"note: the references are {script} text" in captured.err and flag in captured.err
        else:
            assert "note" not in captured.err


def test_the_note_on_unspaced_references_says_what_their_ter_counts(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """The note said BLEU was not the language's and chrF was, and nothing of TER, whose default tokenizer counts the
    same long words: a Japanese output one inflection off was TER 100, the sentence wrong whole, printed by sate score
    and sate evaluate and tabled by sate report (31st hostile pass). The note says so and names the sacrebleu options
    that count characters; followed, they give another TER. The scores are sacreBLEU's defaults as before."""
    hyp, ref = tmp_path / "hyp.txt", tmp_path / "ref.txt"
    hyp.write_text("今日は公園に行った。\nありがとう。\n", encoding="utf-8")
    ref.write_text("今日は公園に行きました。\nありがとうございます。\n", encoding="utf-8")
    assert main(["score", "--hyp", str(hyp), "--ref", str(ref), "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert json.loads(out)[2]["score"] == 100
    assert ("TER's default tokenizer counts the same long words (a sentence with one character wrong is wrong whole), "
            "where `sacrebleu -m ter --ter-normalized --ter-asian-support` counts characters") in err
    from sacrebleu.metrics import TER  # slow: sacrebleu (0.3 s)

    assert TER(normalized=True, asian_support=True).corpus_score(read_lines(hyp), [read_lines(ref)]).score < 50


def test_translate_output_of_several_files_is_not_scored_with_its_file_names(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """`sate translate a.wav b.wav --out hyp.txt` writes FILE<TAB>translation; scored as hypotheses, the file names
    were words of every sentence, exit 0 (twenty-fourth hostile pass). The advice's `cut` is the column of the
    translations; a tab inside a sentence is text as before."""
    ref = tmp_path / "ref.txt"
    ref.write_text("Das ist gut.\nEin Haus.\n", encoding="utf-8")
    hyp = tmp_path / "hyp.txt"
    for lines, cut in (("talks/a.wav\tDas ist gut.\ntalks/b.WAV\tEin Haus.\n", "cut -f2"),
                       ("a.flac\tthis is good\tDas ist gut.\nb.flac\ta house\tEin Haus.\n", "cut -f3")):
        hyp.write_text(lines, encoding="utf-8")
        assert main(["score", "--hyp", str(hyp), "--ref", str(ref)]) == 2
        assert "lines of `sate translate` for several files" in capsys.readouterr().err
        cut_lines = [line.split("\t")[int(cut[-1]) - 1] for line in lines.splitlines()]
        hyp.write_text("\n".join(cut_lines) + "\n", encoding="utf-8")
        assert main(["score", "--hyp", str(hyp), "--ref", str(ref)]) == 0
        assert " = 100.0 " in capsys.readouterr().out
    hyp.write_text("Das ist\tgut.\nEin Haus.\n", encoding="utf-8")
    assert main(["score", "--hyp", str(hyp), "--ref", str(ref)]) == 0


def test_sentences_that_end_in_an_audio_file_name_are_scored(tmp_path: Path,
                                                              capsys: pytest.CaptureFixture[str]) -> None:
    """A sentence that ends in a file's name (`Play sound.wav`), with no tab anywhere, was refused as `sate
    translate`'s FILE<TAB>translation lines, advising a `cut -f2` that would have emptied them (twenty-fourth hostile
    pass, review): a tab must follow the name. An audio name is one of the table `sate.targets` names outputs by."""
    ref = tmp_path / "ref.txt"
    ref.write_text("Play sound.wav\nIch höre Musik.\n", encoding="utf-8")
    hyp = tmp_path / "hyp.txt"
    hyp.write_text("Play sound.wav\nIch höre Musik.\n", encoding="utf-8")
    assert main(["score", "--hyp", str(hyp), "--ref", str(ref)]) == 0
    assert " = 100.0 " in capsys.readouterr().out
    assert {".caf", ".w64"} <= {suffix for suffix, kind in NAMED_KINDS.items() if kind == "audio"}


def test_fairseq_generate_lines_are_not_scored_with_their_ids_and_scores(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """fairseq-generate's output (`H-0<TAB>-0.31<TAB>Das ist gut.`: the SATE paper's toolkit) was scored with its ids
    and model scores as words, exit 0 (twenty-fourth hostile pass). The advice's pipeline gives the sentences."""
    ref = tmp_path / "ref.txt"
    ref.write_text("Das ist gut.\nEin Haus.\n", encoding="utf-8")
    hyp = tmp_path / "gen.out"
    hyp.write_text("H-0\t-0.31\tDas ist gut.\nH-1\t-0.2\tEin Haus.\n", encoding="utf-8")  # `grep ^H`: as many lines
    assert main(["score", "--hyp", str(hyp), "--ref", str(ref)]) == 2
    assert "lines of fairseq-generate" in capsys.readouterr().err
    hyp.write_text("S-1\tein haus\nH-1\t-0.2\tEin Haus.\nD-1\t-0.2\tEin Haus.\n"
                   "S-0\tdas\nH-0\t-0.31\tDas ist gut.\nD-0\t-0.31\tDas ist gut.\n", encoding="utf-8")
    assert main(["score", "--hyp", str(hyp), "--ref", str(ref)]) == 2
    err = capsys.readouterr().err
    assert "lines of fairseq-generate" in err and f"grep ^D- {hyp} | sort -V | cut -f3" in err
    detokenized = subprocess.run(f"grep ^D- {hyp} | sort -V | cut -f3", shell=True, capture_output=True, text=True,
                                 check=True).stdout
    hyp.write_text(detokenized, encoding="utf-8")
    assert main(["score", "--hyp", str(hyp), "--ref", str(ref)]) == 0
    assert " = 100.0 " in capsys.readouterr().out
    # the advice follows the lines there (24th hostile pass): `grep ^D-` of H lines alone gave an empty file, and a
    # whole output given as --ref was told to keep its hypotheses
    ids = tmp_path / "h.out"
    ids.write_text("H-1\t-0.2\tEin Haus.\nH-0\t-0.31\tDas ist gut.\n", encoding="utf-8")
    refs = tmp_path / "gen-ref.out"
    refs.write_text("S-1\tein haus\nT-1\tEin Haus.\nD-1\t-0.2\tEin Haus!\n"
                    "S-0\tdas\nT-0\tDas ist gut.\nD-0\t-0.31\tDas ist gut!\n", encoding="utf-8")
    for option, given, pipeline in (("--hyp", ids, f"grep ^H- {ids} | sort -V | cut -f3"),
                                    ("--ref", refs, f"grep ^T- {refs} | sort -V | cut -f2")):
        other = {"--hyp": ["--ref", str(ref)], "--ref": ["--hyp", str(detokenized_file(tmp_path, detokenized))]}
        assert main(["score", option, str(given), *other[option]]) == 2
        assert pipeline in capsys.readouterr().err
        kept = subprocess.run(pipeline, shell=True, capture_output=True, text=True, check=True).stdout
        assert kept == "Das ist gut.\nEin Haus.\n"
    refs.write_text("S-0\tdas\nD-0\t-0.31\tDas ist gut!\n", encoding="utf-8")
    assert main(["score", "--ref", str(refs), "--hyp", str(hyp)]) == 2
    assert "it holds no T lines (the references)" in capsys.readouterr().err


def detokenized_file(folder: Path, text: str) -> Path:
    path = folder / "detok.txt"
    path.write_text(text, encoding="utf-8")
    return path


def test_a_file_named_dash_given_as_dot_slash_dash_is_that_file(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """A file named `-`, given as `./-` (the shell's way to name it), was read as standard input by `sate score`
    (and `sate stream`): `Path("./-")` is `-` (24th hostile pass, review). It is the file."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "-").write_text("Der Zug fährt ab.\n", encoding="utf-8")
    (tmp_path / "ref.txt").write_text("Der Zug fährt ab.\n", encoding="utf-8")
    monkeypatch.setattr("sys.stdin", io.StringIO("ganz etwas anderes\n"))
    assert main(["score", "--hyp", "./-", "--ref", "ref.txt"]) == 0
    assert " = 100.0 " in capsys.readouterr().out


def test_read_lines_of_a_name_of_bytes_or_holding_nul_is_one_line(tmp_path: Path) -> None:
    """`read_lines` (docs/inference.md's scoring example) of a name as bytes was a TypeError of Path(), and of one
    holding NUL a ValueError of os.stat (25th hostile pass, review); a name of either kind that is right reads."""
    (tmp_path / "hyp.txt").write_text("a b\n")
    with pytest.raises(SateError, match=r"^read_lines: expected a path \(str or Path\), got bytes \(decode a name of "
                                        r"bytes with os.fsdecode\(name\)\)$"):
        read_lines(os.fsencode(tmp_path / "hyp.txt"))  # type: ignore[arg-type]
    with pytest.raises(SateError, match=r"^read_lines: '.*hyp\\x00.txt' holds a NUL character"):
        read_lines(f"{tmp_path}/hyp\0.txt")
    assert read_lines(os.fsdecode(os.fsencode(tmp_path / "hyp.txt"))) == read_lines(tmp_path / "hyp.txt") == ["a b"]


def test_espnet_outputs_are_not_scored_with_their_utterance_ids(tmp_path: Path,
                                                                 capsys: pytest.CaptureFixture[str]) -> None:
    """ESPnet's outputs as they came (sclite's trn `text (spk-utt)`, a Kaldi `utt text` table) were scored with their
    ids as words of every sentence, the same on both sides: BLEU 52.7 was 83.2, exit 0 (twenty-fifth hostile pass).
    The advice's `sed` gives the text; sentences that end in a sound tag or begin with a word of digits are text."""
    refs, hyps = ["Das ist gut.", "Ein Haus.", "Wir gehen."], ["Das ist gut.", "Ein Haus!", ""]
    ids = ["ted_1096_0", "ted_1096_1", "ted_1096_2"]
    forms = {"trn": (lambda text, utt: f"{text} (spk1-{utt})", "sclite trn lines", "sed -E 's/ ?\\([^()]*\\)$//'"),
             "kaldi": (lambda text, utt: f"{utt} {text}", "a Kaldi table", "sed -E 's/^\\S+\\s?//'")}
    plain_hyp, plain_ref = tmp_path / "hyp.txt", tmp_path / "ref.txt"
    plain_hyp.write_text("".join(f"{h}\n" for h in hyps), encoding="utf-8")
    plain_ref.write_text("".join(f"{r}\n" for r in refs), encoding="utf-8")
    assert main(["score", "--hyp", str(plain_hyp), "--ref", str(plain_ref)]) == 0
    expected = capsys.readouterr().out
    for kind, (line, what, sed) in forms.items():
        hyp, ref = tmp_path / f"hyp.{kind}", tmp_path / f"ref.{kind}"
        hyp.write_text("".join(line(h, u) + "\n" for h, u in zip(hyps, ids, strict=True)), encoding="utf-8")
        ref.write_text("".join(line(r, u) + "\n" for r, u in zip(refs, ids, strict=True)), encoding="utf-8")
        for option, path, other in (("--hyp", hyp, ["--ref", str(plain_ref)]),
                                    ("--ref", ref, ["--hyp", str(plain_hyp)])):
            assert main(["score", option, str(path), *other]) == 2
            err = capsys.readouterr().err
            assert f"{option} {path}: {what}" in err and f"({sed} {path})" in err, err
        for path in (hyp, ref):  # the advice followed
            kept = subprocess.run(f"{sed} {path}", shell=True, capture_output=True, text=True, check=True).stdout
            path.write_text(kept, encoding="utf-8")
        assert main(["score", "--hyp", str(hyp), "--ref", str(ref)]) == 0
        assert capsys.readouterr().out == expected
    text = tmp_path / "tags.txt"
    # text, not ids (review: refused when half the lines matched): a line or two, words of digits opening most
    # lines, dates, year ranges in parentheses
    for lines in (["Vielen Dank. (Applaus)", "(Gelächter)", "COVID-19 ist da."], ["COVID-19 ist da."],
                  ["COVID-19 ist da.", "Gut."], ["COVID-19 ist da.", "COVID-19 geht.", "COVID-19 bleibt."],
                  ["MP3-Player sind alt.", "3-D Filme auch.", "90er-Jahre Musik.", "Gut."],
                  ["2019-03-05 Markets fell.", "2019-03-06 Markets rose.", "2019-03-07 Calm."],
                  ["Einstein (1879-1955)", "Bohr (1885-1962)", "Curie (1867-1934)"], ["2019-2020 年", "好", "是"],
                  ["05-03-2019 Märkte fielen.", "06-03-2019 Märkte stiegen.", "07-03-2019 Ruhe."],
                  ["2019_03_05 a", "2019_03_06 b", "2019_03_07 c"], ["555-123-4567 Büro", "555-123-4568 Lager", "x"]):
        text.write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
        assert main(["score", "--hyp", str(text), "--ref", str(text)]) == 0, (lines, capsys.readouterr().err)
        assert " = 100.0 " in capsys.readouterr().out


def test_hypotheses_and_references_in_two_unicode_forms_get_a_note(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """German text in NFD (a letter, then a combining mark: as macOS and some corpora spell it) scored against the
    same text in NFC was 46.7 BLEU, not 100, without a word (twenty-fifth hostile pass): the scores stay sacreBLEU's,
    a note names the two forms, and its command, followed, gives the text's own score. One form on both sides, or a
    stray decomposed line in composed text, makes no note."""
    import unicodedata

    text = "Der Zug fährt ab.\nIch möchte einen Kaffee.\nGrüße aus Köln.\nEs regnet.\n"
    ref, hyp = tmp_path / "ref.txt", tmp_path / "hyp.txt"
    ref.write_text(text, encoding="utf-8")
    hyp.write_text(unicodedata.normalize("NFD", text), encoding="utf-8")
    assert main(["score", "--hyp", str(hyp), "--ref", str(ref)]) == 0
    captured = capsys.readouterr()
    assert " = 100.0 " not in captured.out
    assert (f"note: the accented letters of {hyp} are in Unicode NFD and those of {ref} in NFC" in captured.err)
    command = captured.err.split("first (")[1].rsplit(")", 1)[0].replace("FILE", str(hyp))
    subprocess.run(command.replace(f"> {hyp}.nfc", f"> {tmp_path / 'nfc.txt'}"), shell=True, check=True)
    assert main(["score", "--hyp", str(tmp_path / "nfc.txt"), "--ref", str(ref)]) == 0
    captured = capsys.readouterr()
    assert " = 100.0 " in captured.out and "note" not in captured.err
    for hyps, refs in ((unicodedata.normalize("NFD", text), unicodedata.normalize("NFD", text)),
                       (text, text.replace("Köln", unicodedata.normalize("NFD", "Köln")))):
        hyp.write_text(hyps, encoding="utf-8")
        ref.write_text(refs, encoding="utf-8")
        assert main(["score", "--hyp", str(hyp), "--ref", str(ref)]) == 0
        assert "note" not in capsys.readouterr().err
    assert sacrebleu_scores(["Köln"], [unicodedata.normalize("NFD", "Köln")], ("the translations", "the references"))
    assert "of the translations are in Unicode NFC and those of the references in NFD" in capsys.readouterr().err


def test_utterance_ids_of_digits_alone_are_ids_and_dates_are_not() -> None:
    """LibriSpeech's ids (1089-134686-0000) are ids; dates and phone numbers opening every line are text (review of the
    25th hostile pass)."""
    from sate.scoring.score import utterance_ids

    libri = [f"1089-134686-{k:04d} he hoped there would be stew" for k in range(3)]
    assert utterance_ids(Path("text"), libri) is not None
    for heads in (["05-03-2019", "06-03-2019", "07-03-2019"], ["555-123-4567", "555-123-4568", "555-123-4569"]):
        assert utterance_ids(Path("text"), [f"{h} words here" for h in heads]) is None


# Twelve Ding sentences, each with two German translations the dictionary gives (real second references, idioms
# rendered freely: chrF 36.2 of the second against the first, 10.5 of the English against the German).
DING_TWICE = [("It isn't my job.", "Das ist nicht meine Aufgabe.", "Es ist nicht meine Aufgabe."),
              ("It's not worth the effort.", "Es ist den Aufwand nicht wert.", "Das lohnt den Arbeitsaufwand nicht."),
              ("Are there any further questions?", "Gibt es noch weitere Fragen?", "Hat jemand noch eine Frage?"),
              ("My heart was in my mouth.", "Mir schlug das Herz bis zum Hals.", "Mir rutschte das Herz in die Hose."),
              ("That's going too far.", "Das geht auf keine Kuhhaut.", "Das geht zu weit."),
              ("He's a dead loss.", "Er ist ein hoffnungsloser Fall.", "Bei ihm ist Hopfen und Malz verloren."),
              ("Better come straight to the point.", "Komm besser gleich zur Sache.",
               "Fall lieber gleich mit der Tür ins Haus."),
              ("It's worth a try.", "Es ist einen Versuch wert.", "Ein Versuch lohnt sich."),
              ("That remains to be seen.", "Das muss sich erst noch zeigen.", "Das steht noch dahin."),
              ("Actions speak louder than words.", "Taten sagen mehr als Worte.",
               "Die Tat wirkt mächtiger als das Wort."),
              ("I intend to do just that.", "Genau das will ich machen.", "Das will ich auch tun."),
              ("It means a lot to me.", "Es bedeutet mir viel.", "Es liegt mir viel daran.")]


def _ding_evaluation(folder: Path, rows: list[tuple[str, str, str]] = DING_TWICE) -> Path:
    """A `sate evaluate` run's folder of ``rows``' sentences, its ref.txt their first German translation."""
    folder.mkdir(parents=True)
    texts = {"hyp.txt": [de.lower().rstrip(".") for _, de, _ in rows], "ref.txt": [de for _, de, _ in rows],
             "transcript.txt": [en.lower().rstrip(".?") for en, _, _ in rows],
             "transcript_ref.txt": [en.lower().rstrip(".?") for en, _, _ in rows]}
    for name, lines in texts.items():
        (folder / name).write_text("".join(f"{line}\n" for line in lines), encoding="utf-8")
    (folder / "results.json").write_text(json.dumps({"mode": "st", "split": "dev", "utterances": len(rows),
                                                     "bleu": 10.0}))
    return folder


def test_references_other_than_those_an_evaluation_was_made_for_are_said(tmp_path: Path,
                                                                          capsys: pytest.CaptureFixture[str]) -> None:
    """Twenty-ninth hostile pass: a run's translations scored against another language's references of as many lines
    (MuST-C's tst-COMMON.en for .de), another corpus's or the lines in another order got a BLEU near 0, exit 0,
    without a word, though the run's own ref.txt beside them said which references they were made for. Said, not
    refused: another reference translation is a legitimate --ref. A corrected line, the corpus's own text file
    (spaced or composed otherwise) and two runs' outputs compared say nothing."""
    run = _ding_evaluation(tmp_path / "st/decode_dev")
    english = tmp_path / "dev.en"
    english.write_text("".join(f"{en}\n" for en, _, _ in DING_TWICE))
    (tmp_path / "ref.de").write_text((run / "ref.txt").read_text())
    for hyp, ref in (("hyp.txt", english), ("transcript.txt", tmp_path / "ref.de")):
        assert main(["score", "--hyp", str(run / hyp), "--ref", str(ref)]) == 0
        err = capsys.readouterr().err
        own = "ref.txt" if hyp == "hyp.txt" else "transcript_ref.txt"
        assert f"sate score: note: --ref {ref} is not the references the " in err
        assert f" of {run / hyp} were made for ({run / own}): 12 of its 12 lines differ and its chrF against " in err
        assert "(another language, corpus or split?); scored as given" in err
    (tmp_path / "order.de").write_text("".join(reversed((run / "ref.txt").read_text().splitlines(True))))
    assert main(["score", "--hyp", str(run / "hyp.txt"), "--ref", str(tmp_path / "order.de")]) == 0
    assert f"({run / 'ref.txt'}): its lines are theirs in another order (12 of 12 moved)" in capsys.readouterr().err
    ref_lines = (run / "ref.txt").read_text().splitlines(True)
    quiet = {"same.de": "".join(line.replace(" ", "  ", 1) for line in ref_lines),
             "fixed.de": "".join(ref_lines[:5]) + "Das geht zu weit.\n" + "".join(ref_lines[6:])}
    for name, text in quiet.items():
        (tmp_path / name).write_text(text)
        assert main(["score", "--hyp", str(run / "hyp.txt"), "--ref", str(tmp_path / name)]) == 0
        assert "note" not in capsys.readouterr().err
    english.write_text("".join(f"{en.replace('It', 'it')}\n" for en, _, _ in DING_TWICE))  # the corpus's cased
    assert main(["score", "--hyp", str(run / "transcript.txt"), "--ref", str(english), "--wer"]) == 0  # WER agrees
    assert "note" not in capsys.readouterr().err
    other = _ding_evaluation(tmp_path / "beam1/decode_dev")
    assert main(["score", "--hyp", str(other / "hyp.txt"), "--ref", str(run / "hyp.txt")]) == 0
    assert "note" not in capsys.readouterr().err


def test_a_second_reference_translation_or_a_corrected_sentence_is_no_other_references(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Review of the twenty-ninth pass: the note that --ref is not the references a run was made for fired on a
    second translation of the same sentences (Libri-Trans ships test_gtranslate.fr beside test.fr), whose lines all
    differ, and on a split of one sentence whose reference was corrected (1 of 1 lines). Another order of the same
    lines is still said, in a split of any size."""
    run = _ding_evaluation(tmp_path / "st/decode_test")
    second = tmp_path / "test_gtranslate.de"
    second.write_text("".join(f"{again}\n" for _, _, again in DING_TWICE), encoding="utf-8")
    assert main(["score", "--hyp", str(run / "hyp.txt"), "--ref", str(second)]) == 0
    assert "note" not in capsys.readouterr().err
    one = _ding_evaluation(tmp_path / "smoke/decode_test", DING_TWICE[:1])
    (tmp_path / "fixed.de").write_text("Das ist nicht meine Aufgabe!\n")
    assert main(["score", "--hyp", str(one / "hyp.txt"), "--ref", str(tmp_path / "fixed.de")]) == 0
    assert "note" not in capsys.readouterr().err
    three = _ding_evaluation(tmp_path / "three/decode_test", DING_TWICE[:3])
    (tmp_path / "order.de").write_text("".join(f"{de}\n" for _, de, _ in [DING_TWICE[1], DING_TWICE[0],
                                                                         DING_TWICE[2]]))
    assert main(["score", "--hyp", str(three / "hyp.txt"), "--ref", str(tmp_path / "order.de")]) == 0
    assert "its lines are theirs in another order (2 of 3 moved)" in capsys.readouterr().err


def test_a_run_whose_own_references_cannot_be_read_is_scored_without_the_note(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Review of the twenty-ninth pass: the note on --ref read the run's own ref.txt, a file the user did not name,
    and one re-saved in Latin-1 stopped `sate score` (rc 2, "not valid UTF-8") where main scored the two files
    given. The note is advice: no note then, and the scores as main gave them."""
    run = _ding_evaluation(tmp_path / "st/decode_test")
    good = tmp_path / "test.de"
    text = "".join(f"{again}\n" for _, _, again in DING_TWICE)  # "Tür", "mächtiger"
    good.write_text(text, encoding="utf-8")
    (run / "ref.txt").write_bytes(text.encode("latin-1"))
    assert main(["score", "--hyp", str(run / "hyp.txt"), "--ref", str(good), "--format", "json"]) == 0
    out, err = capsys.readouterr()
    assert "note" not in err and json.loads(out)[0]["name"] == "BLEU"


def test_line_count_mismatch_names_carriage_return_line_ends(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """A hypothesis file saved with classic Mac OS line ends is one line: the count message says why and how to
    mend it, and the advice works."""
    ref = tmp_path / "ref.txt"
    ref.write_text("eins\nzwei\ndrei\n")
    mac = tmp_path / "hyp.txt"
    mac.write_bytes(b"eins\rzwei\rdrei\r")
    assert main(["score", "--hyp", str(mac), "--ref", str(ref)]) == 2
    err = capsys.readouterr().err
    assert f"{mac} has 1 lines but {ref} has 3: {mac} holds a carriage return (\\r) inside its lines" in err
    advice = re.search(r"\((sed .*)\)$", err.strip()).group(1)
    assert subprocess.run(["bash", "-c", advice], cwd=tmp_path).returncode == 0  # the advice, followed
    assert main(["score", "--hyp", str(mac), "--ref", str(ref)]) == 0
    capsys.readouterr()
    # a CRLF file with one bare \r (its \n lost): `tr '\r' '\n'` alone doubled every line (fix32d's neighbour)
    mac.write_bytes(b"eins\r\nzwei\rdrei\r\n")
    assert main(["score", "--hyp", str(mac), "--ref", str(ref)]) == 2
    advice = re.search(r"\((sed .*)\)$", capsys.readouterr().err.strip()).group(1)
    assert subprocess.run(["bash", "-c", advice], cwd=tmp_path).returncode == 0
    assert mac.read_bytes() == b"eins\nzwei\ndrei\n"
    assert main(["score", "--hyp", str(mac), "--ref", str(ref)]) == 0


def test_a_line_separator_of_its_own_is_not_blamed_for_counts(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """A reference holding a transcript's own U+2028, beside a count that differs for another reason, was told to
    split its lines there, which made the gap wider (review30z): no hint where the split brings no agreement."""
    hyp, ref = tmp_path / "hyp.txt", tmp_path / "ref.txt"
    hyp.write_text("a b c\nd e\n")
    ref.write_text("a b c\nd e\u2028f\ng h\n")
    assert main(["score", "--hyp", str(hyp), "--ref", str(ref)]) == 2
    assert capsys.readouterr().err.strip().endswith(f"{hyp} has 2 lines but {ref} has 3")


def test_line_count_mismatch_names_blank_lines_at_the_end(tmp_path: Path, capsys: pytest.CaptureFixture) -> None:
    """References with a blank line at their end (`echo >> ref.txt`, an editor's newline) were "has 3 lines but ... has
    4" alone (31st hostile pass): the message names the blank lines of whichever side, and its `sed`, run on a name
    with a space, gives the count back. Blank lines inside, or a count off for another reason, get no such hint."""
    hyp, ref = tmp_path / "hyp.txt", tmp_path / "my ref.txt"
    hyp.write_text("eins\nzwei\ndrei\n")
    ref.write_text("eins\nzwei\ndrei\n\n \r\n")
    for given in ((hyp, ref), (ref, hyp)):
        assert main(["score", "--hyp", str(given[0]), "--ref", str(given[1])]) == 2
        err = capsys.readouterr().err
        assert err.strip().endswith(f": {ref} ends with 2 blank lines, each read as a sentence; remove them if no "
                                    "sentence is there (sed -i -e :a -e '/^[[:space:]]*$/{$d;N;ba' -e '}' "
                                    f"'{ref}')")
    subprocess.run(err.strip().rsplit("(", 1)[1].rstrip(")"), shell=True, check=True)  # the advice, followed
    assert main(["score", "--hyp", str(hyp), "--ref", str(ref)]) == 0
    capsys.readouterr()
    gz = tmp_path / "ref.txt.gz"  # no sed -i for a compressed file (nor a stream)
    gz.write_bytes(gzip.compress(b"eins\nzwei\ndrei\n\n"))
    assert main(["score", "--hyp", str(hyp), "--ref", str(gz)]) == 2
    assert capsys.readouterr().err.strip().endswith(f": {gz} ends with a blank line, read as a sentence; remove it "
                                                   "if no sentence is there")
    ref.write_text("eins\n\nzwei\ndrei\n")  # a blank line inside: an empty sentence, maybe
    assert main(["score", "--hyp", str(hyp), "--ref", str(ref)]) == 2
    assert capsys.readouterr().err.strip().endswith(f"{hyp} has 3 lines but {ref} has 4")
    ref.write_text("eins\nzwei\ndrei\nvier\n\n")  # four sentences and a blank line: not the blank line's fault alone
    assert main(["score", "--hyp", str(hyp), "--ref", str(ref)]) == 2
    assert capsys.readouterr().err.strip().endswith(f"{hyp} has 3 lines but {ref} has 5")


def test_sed_is_advised_for_a_file_it_can_edit_alone(tmp_path: Path, capsys: pytest.CaptureFixture,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    """The sed of the blank-line hint and the byte-order-mark note was given for `--ref - < ref.txt` (`sed -i ...
    /dev/stdin`: nothing edited, and as root the system's /dev/stdin link replaced by a file), the mark's for a *.gz
    (it did nothing) and with no file named; a last line of U+00A0 alone, blank to Python, was counted where the
    sed's [[:space:]] left it, and the advice followed gave the same error (review31r). Now no sed for a stream or a
    compressed file, the file named, and a line of other spaces named, with no sed."""
    import sate.scoring.score as score_module

    hyp, ref = tmp_path / "hyp.txt", tmp_path / "ref.txt"
    hyp.write_text("eins\nzwei\ndrei\n")
    ref.write_text("\ufeffeins\nzwei\ndrei\n\n")
    with ref.open() as stream:  # what `- < ref.txt` gives: /dev/fd/0 (/dev/stdin) leads to ref.txt
        monkeypatch.setattr("sys.stdin", stream)
        monkeypatch.setattr(score_module, "STDIN", Path(f"/dev/fd/{stream.fileno()}"))
        assert main(["score", "--hyp", str(hyp), "--ref", "-"]) == 2
        assert capsys.readouterr().err.endswith(f"/dev/fd/{stream.fileno()} ends with a blank line, read as a "
                                                "sentence; remove it if no sentence is there\n")
        link = tmp_path / "my_stdin"  # a link of one's own to such a stream
        link.symlink_to(f"/proc/self/fd/{stream.fileno()}")
        assert main(["score", "--hyp", str(hyp), "--ref", str(link)]) == 2
        assert capsys.readouterr().err.endswith("remove it if no sentence is there\n")
    assert link.is_symlink()
    ref.write_text("\ufeffeins\nzwei\ndrei\n")
    gz = tmp_path / "ref.txt.gz"
    gz.write_bytes(gzip.compress(ref.read_bytes()))
    assert main(["score", "--hyp", str(hyp), "--ref", str(gz)]) == 0
    assert capsys.readouterr().err.endswith("begins with a byte-order mark (U+FEFF), scored as part of its first word "
                                            "as sacrebleu scores it; remove it to score the text alone\n")
    ref.write_text("eins\nzwei\ndrei\n\u00a0\n")
    assert main(["score", "--hyp", str(hyp), "--ref", str(ref)]) == 2
    assert capsys.readouterr().err.endswith(f"{ref} ends with a line of spaces alone (U+00A0), read as a sentence; "
                                            "remove it if no sentence is there\n")
    ref.write_text("eins\nzwei\ndrei\n\x1c\n \u00a0\n")
    assert main(["score", "--hyp", str(hyp), "--ref", str(ref)]) == 2
    assert capsys.readouterr().err.endswith(f"{ref} ends with 2 lines of spaces alone (U+001C, U+00A0), each read as "
                                            "a sentence; remove them if no sentence is there\n")


def test_references_that_are_all_blank_are_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """33rd hostile pass: a --ref of blank lines alone (`cut -f3` of a file of two columns) scored any hypotheses BLEU
    0, chrF 0 and TER 100, exit 0, without a word; one blank reference among others is a sentence, scored."""
    hyp, ref = tmp_path / "hyp.txt", tmp_path / "ref.txt"
    hyp.write_text("Das ist ein Test.\nWie geht es dir?\n", encoding="utf-8")
    ref.write_text("\n \t\n", encoding="utf-8")
    assert main(["score", "--hyp", str(hyp), "--ref", str(ref)]) == 2
    assert capsys.readouterr().err == (f"sate score: error: --ref {ref}: every one of its 2 lines is blank: there is "
                                       "no text to score against (BLEU and chrF 0, TER 100 of any hypotheses); give "
                                       "the reference translations\n")
    with pytest.raises(SateError, match="the references: all 2 are blank: there is no text"):
        sacrebleu_scores(["a", "b"], ["", " "])
    ref.write_text("\nWie geht's dir?\n", encoding="utf-8")
    assert main(["score", "--hyp", str(hyp), "--ref", str(ref)]) == 0


def test_files_whose_lines_end_with_a_carriage_return_alone_are_said(tmp_path: Path,
                                                                    capsys: pytest.CaptureFixture[str]) -> None:
    """33rd hostile pass: a hypothesis file and a reference file both saved with \\r line ends are one line each, as
    many as each other: scored as one sentence each (BLEU 50.0 of a pair whose lines score 55.8), exit 0, without a
    word. The note's advice, followed, gives the lines' scores; CRLF line ends and a stray \\r say nothing."""
    hyp, ref = tmp_path / "hyp.txt", tmp_path / "ref.txt"
    hyp.write_bytes(b"the cat sat on a mat\rhello world\r")
    ref.write_bytes(b"the cat sat on the mat\rhello world\r")
    assert main(["score", "--hyp", str(hyp), "--ref", str(ref)]) == 0
    out, err = capsys.readouterr()
    assert " = 50.0 " in out
    for path in (hyp, ref):
        assert (f"sate score: note: {path} holds carriage returns (\\r) inside 1 of its 1 lines (lines that end "
                "with \\r alone?): sacreBLEU splits lines on \\n only, so each such line, with the sentences in it, is "
                f"scored as one; save it with \\n line ends (sed 's/\\r$//' {path} | tr '\\r' '\\n' > {path}.lf && mv "
                f"{path}.lf {path})\n") in err
        subprocess.run(f"sed 's/\\r$//' {path} | tr '\\r' '\\n' > {path}.lf && mv {path}.lf {path}", shell=True,
                       check=True)
    assert main(["score", "--hyp", str(hyp), "--ref", str(ref)]) == 0
    out, err = capsys.readouterr()
    assert " = 55.8 " in out and err == ""
    ref.write_bytes(b"the cat sat on the mat\r\nhello world\r\n")
    assert main(["score", "--hyp", str(hyp), "--ref", str(ref)]) == 0
    assert capsys.readouterr().err == ""
    ref.write_bytes(b"the cat sat\ron the mat\nhello world\nthe end\n")  # a stray one, a line of the text
    hyp.write_bytes(b"the cat sat on a mat\nhello world\nthe end\n")
    assert main(["score", "--hyp", str(hyp), "--ref", str(ref)]) == 0
    assert capsys.readouterr().err == ""


@pytest.mark.parametrize("lines", [2, 1])
def test_a_stray_carriage_return_in_a_short_reference_gets_no_advice(tmp_path: Path, lines: int,
                                                                      capsys: pytest.CaptureFixture[str]) -> None:
    """Review of the 33rd hostile pass: a stray \\r in one of the 1 or 2 lines of a reference (a manifest's tgt,
    a split of one or two sentences) was "half the lines" and got the advice to split it, which, followed, made the
    next run "h.txt has 2 lines but r.txt has 3". The note needs the other file's same lines to hold one too; two
    files saved with \\r line ends are still said, whatever their sentence counts."""
    hyp, ref = tmp_path / "h.txt", tmp_path / "r.txt"
    ref.write_text("".join(["Der Zug\rfährt ab.\n", "Hallo Welt\n"][:lines]), encoding="utf-8")
    hyp.write_text("".join(["Der Zug fährt ab.\n", "Hallo Welt\n"][:lines]), encoding="utf-8")
    assert main(["score", "--hyp", str(hyp), "--ref", str(ref)]) == 0
    out, err = capsys.readouterr()
    assert " = 100.0 " in out and err == ""
    hyp.write_bytes(b"the cat sat on a mat\rhello world\rthe end\r")  # a sentence more than the reference
    ref.write_bytes(b"the cat sat on the mat\rhello world\r")
    assert main(["score", "--hyp", str(hyp), "--ref", str(ref)]) == 0
    err = capsys.readouterr().err
    assert f"note: {hyp} holds carriage returns" in err and f"note: {ref} holds carriage returns" in err
