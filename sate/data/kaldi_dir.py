"""Read Kaldi data directories: the Kaldi reader of `sate prep` (`sate.data.prep`), transcripts only.

A directory holds ``wav.scp`` (``<recording> <path>``: plain audio file paths, relative ones from the current
directory as Kaldi reads them; commands ending in ``|`` and ``file.ark:OFFSET`` are refused), optional
``segments`` (``<utterance> <recording> <start> <end>`` in seconds, end ``-1`` = the end of the file), ``text``
(``<utterance> <transcript>``) and optional ``utt2spk`` (``<utterance> <speaker>``; without it the speaker is the
recording). Without ``segments`` each recording is one utterance of the same id. Rows follow ``text``; recordings
or segments without a line in ``text`` are skipped and counted. Audio of any rate and channel count is read as
16 kHz mono (`sate.data.audio.read_segment`).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

from sate.data.audio import END_TOLERANCE_S, MAX_SECONDS, WavInfo, segment_samples
from sate.data.manifest import read_text_lines, refuse_line_break
from sate.data.rows import RowFilter, SplitResult, audio_info
from sate.errors import SateError, shell_word, shown
from sate.files import few_paths, held_inside
from sate.numbers import decimal
from sate.targets import url_refusal

Table = dict[str, tuple[int, str]]  # key -> (line number, the rest of the line)


def read_table(path: Path) -> Table:
    """A Kaldi table file: the first field of each line is its key; blank lines are skipped, a key twice is an
    error naming both lines."""
    entries: Table = {}
    for lineno, text in enumerate(read_text_lines(path, strip_bom=True), start=1):
        # a `text` whose lines end with one was one utterance holding the others, exit 0
        refuse_line_break(text, f"{path}:{lineno}", "a line of a Kaldi table")
        parts = text.split(maxsplit=1)
        if not parts:
            continue
        key = parts[0]
        if key in entries:
            raise SateError(f"{path}:{lineno}: {key} appears twice (first at line {entries[key][0]})")
        entries[key] = (lineno, parts[1].strip() if len(parts) > 1 else "")
    return entries


# A wav.scp command that only copies an audio file to the pipe (ESPnet's MuST-C recipes: `ted_1 cat /m/ted_1.wav |`),
# or decodes a FLAC file whole (Kaldi's LibriSpeech recipe: `utt flac -c -d -s /m/utt.flac |`, a file sate reads
# itself: it was told to "convert the recordings to audio files", 33rd hostile pass), its path bare or in quotes
# (`cat '/m/ted 1.wav' |`), where the shell reads it as written: the file is the path without the quotes; one with
# `$`, a backslash or a backtick is the shell's to expand, and no file named here
CAT = re.compile(r"""(cat|flac(?:\s+(?:-[cds]+|--decode|--stdout|--silent))+)\s+"""
                 r"""(?:'([^']+)'|"([^"$\\`]+)"|([^\s'"$\\`]+))\s*\|""")
DECODE = re.compile(r"\s(-[cs]*d[cds]*|--decode)(?=\s|$)")  # flac's decode option, alone or among -c and -s


def audio_paths(path: Path) -> dict[str, tuple[int, Path]]:
    """``wav.scp``: recording -> (line, audio file); pipes and ark offsets are refused."""
    paths = {}
    for rec, (lineno, value) in read_table(path).items():
        where = f"{path}:{lineno}"
        if not value:
            raise SateError(f"{where}: expected '<recording> <audio path>', got only {shown(rec)}")
        if value.endswith("|"):
            whole = CAT.fullmatch(value)
            if whole is not None and (whole[1] == "cat" or DECODE.search(whole[1]) is not None):
                # ESPnet's MuST-C recipes list each talk so, Kaldi's LibriSpeech each utterance: "convert the
                # recordings" did not fit audio files already there
                audio = next(group for group in whole.groups()[1:] if group is not None)
                how = "reads the file {} as it is" if whole[1] == "cat" else "decodes the FLAC file {}, read as it is"
                # a Kaldi LibriSpeech directory has 28,000 such lines: the sed that writes each so, where paths are
                # bare (33rd hostile pass)
                every = (f"; every such line: sed -E -i 's/^([^ ]+) (cat|flac( -[cds]+| --[a-z]+)*) "
                         f"([[:alnum:]_./:@+,=-]+) *\\|$/\\1 \\4/' {shell_word(str(path))}"
                         if whole[4] is not None else "")
                raise SateError(f"{where}: {rec} is a command ({shown(value)}) that {how.format(audio)}: list the "
                                f"file itself ('{rec} {audio}'){every}")
            raise SateError(f"{where}: {rec} is a command ({shown(value)}); convert the recordings to audio files "
                            "(wav, flac) and list their paths")
        if re.search(r"\.ark:\d+$", value):
            raise SateError(f"{where}: {rec} is an offset into an ark ({shown(value)}); convert the recordings to "
                            "audio files (wav, flac) and list their paths")
        url = url_refusal(value)  # said as written: a Path collapses its //
        if url is not None:
            raise SateError(f"{where}: {url}")
        paths[rec] = (lineno, Path(value))
    return paths


def read_segments(path: Path, recordings: dict[str, tuple[int, Path]]) -> dict[str, tuple[int, str, float, float]]:
    """``segments``: utterance -> (line, recording, start, end); end -1 stands for the end of the file."""
    segments = {}
    for utt, (lineno, value) in read_table(path).items():
        where = f"{path}:{lineno}"
        fields = value.split()
        if len(fields) != 3:
            raise SateError(f"{where}: expected '<utterance> <recording> <start> <end>', got {shown(f'{utt} {value}')}")
        rec = fields[0]
        start, end = decimal(fields[1]), decimal(fields[2])
        if start is None or end is None:  # float() read '1_0' as 10 and '٣' as 3, without a word
            raise SateError(f"{where}: start and end must be numbers of seconds (digits 0-9, a point), got "
                            f"{shown(fields[1])} {shown(fields[2])}")
        if not (0 <= start <= MAX_SECONDS and (end == -1 or start < end <= MAX_SECONDS)):  # NaN fails too
            raise SateError(f"{where}: need 0 <= start < end <= {MAX_SECONDS:,.0f} s (or end -1: to the end of the "
                            f"file), got {start:g} {end:g}")
        if rec not in recordings:
            raise SateError(f"{where}: recording {rec} is not in wav.scp")
        segments[utt] = (lineno, rec, start, end)
    return segments


def _no_scp(directory: Path) -> str:
    """Why ``directory``, which holds no wav.scp, is no Kaldi data directory: the folder holding them (a recipe's
    data/), or a folder inside one. Each was "DIR/wav.scp: file is missing", a path nobody gave (twenty-first hostile
    pass)."""
    if os.path.isfile(directory.parent / "wav.scp"):
        return f"a folder inside the Kaldi data directory {directory.parent}, not one itself: give {directory.parent}"
    held = held_inside(directory, lambda child: os.path.isfile(child / "wav.scp"))
    if held:
        return (f"no Kaldi data directory itself; it holds {few_paths(held)}: give "
                f"{'it' if len(held) == 1 else 'one'} (--kaldi-dir once for each split)")
    return "no wav.scp in it (give a Kaldi data directory with wav.scp and text)"


def check_relative_found(path: Path, scp: Path, lineno: int) -> None:
    """A relative wav.scp path is read from the current directory, as Kaldi reads it (from the recipe's root, where
    `data/train/wav.scp` names `wav/x.wav`): run elsewhere it was "audio file is missing", saying neither from where
    it was looked for nor where it is (24th hostile pass). Where the path is there from the Kaldi directory or a
    folder holding it, that folder is named as the one to run `sate prep` from: a directory written by hand with its
    audio inside it (`audio/x.wav` beside `wav.scp`) was "audio file is missing" alone (32nd hostile pass)."""
    if path.is_absolute() or os.path.lexists(path):
        return
    directory = Path(os.path.abspath(scp)).parent
    for folder in (directory, *directory.parents):
        if os.path.isfile(folder / path):
            what = "the Kaldi directory itself" if folder == directory else "the Kaldi recipe's root"
            raise SateError(f"{scp}:{lineno}: {path}: no such audio file from the current directory ({os.getcwd()}),"
                            f" from which Kaldi reads a relative path; it is there from {folder}: run `sate prep` "
                            f"in that folder ({what}), giving --kaldi-dir and --out from there")


# ESPnet's speech-translation recipes (egs/must_c/st1's local/divide_lang.sh) split a pair's data directory
# `train.en-de` into one Kaldi directory a language, `train.en-de.en` and `train.en-de.de`, whose `text` is that
# language's: the target side's holds the translations. Its X->en recipes (CoVoST 2's `train_sp.es-en.en`) name the
# pair by its source first too, so there both sides are of non-English speech.
LANGUAGE = r"[A-Za-z]{2,3}(?:[-_][A-Za-z0-9]{2,4})?"  # `de`, `zh-CN`, `pt_br`: not `clean` nor `100`
ESPNET_PAIR = re.compile(rf"(?P<source>{LANGUAGE})-(?P<target>{LANGUAGE})")
# ... and keep each language's text beside `text` (or, in the pair's directory, instead of it) as `text.tc.LANG`
# (true case), `text.lc.LANG` and `text.lc.rm.LANG` (lowercase, without punctuation)
ESPNET_TEXT = re.compile(r"text\.(?:tc|lc|lc\.rm)\.[A-Za-z_-]+")


def _espnet_side(name: str) -> tuple[str, str, str] | None:
    """``(pair, source, side)`` of ESPnet's directory of one side of a pair (`train.en-de.de`: `train.en-de`, `en`,
    `de`); ``None`` for any other name. A code with a hyphen (`en-zh-CN.zh-CN`) is told by the side it ends with."""
    parts = name.rsplit(".", 2)
    if len(parts) != 3 or not re.fullmatch(LANGUAGE, parts[2]):
        return None
    side, pair = parts[2], f"{parts[0]}.{parts[1]}"
    if parts[1].startswith(f"{side}-") and re.fullmatch(LANGUAGE, parts[1][len(side) + 1:]):
        return pair, side, side
    if parts[1].endswith(f"-{side}") and re.fullmatch(LANGUAGE, parts[1][:-len(side) - 1]):
        return pair, parts[1][:-len(side) - 1], side
    return None


def _not_english(directory: Path, what: str, source: str) -> SateError:
    """The refusal of ESPnet's data of a pair whose speech is not English (`train_sp.es-en.en`): sate's speech side
    is English, so its transcripts (or, on the English side, the translations) trained an English ASR model."""
    return SateError(f"--kaldi-dir {directory}: {what}, whose speech is {source}, not English; sate's speech side is "
                     "English (--kaldi-dir gives English transcripts of English speech): give a directory of English "
                     "speech and its transcripts")


def check_not_translations(directory: Path) -> None:
    """Refuse ESPnet's target-language directory of a pair (`train.en-de.de`): its `text` holds the translations,
    which became the English transcripts an ASR model trains on, exit 0 (twenty-seventh hostile pass); and either
    side of a pair whose speech is not English (`train_sp.es-en.en`, `.es`)."""
    absolute = Path(os.path.abspath(directory))
    found = _espnet_side(absolute.name)
    if found is None:
        pair = ESPNET_PAIR.fullmatch(absolute.name.rpartition(".")[2]) if "." in absolute.name else None
        if pair is not None and pair["source"].lower() != "en" and _espnet_texts(absolute):
            raise _not_english(directory, f"ESPnet's directory of the language pair {absolute.name}", pair["source"])
        return
    pair, source, side = found
    if source.lower() != "en":
        raise _not_english(directory, f"ESPnet's {side} side of the language pair {pair}", source)
    if side.lower() == "en":
        return
    english = (directory.parent if directory.name == absolute.name else absolute.parent) / f"{pair}.en"
    advice = f"give its English side, {english}" if english.is_dir() else \
        f"give a directory whose text holds the English transcripts (ESPnet's English side is {english.name})"
    raise SateError(f"--kaldi-dir {directory}: ESPnet's {side} side of the language pair {pair}, "
                    f"whose text holds the translations, not English transcripts; {advice}")


def _espnet_texts(directory: Path) -> list[str]:
    """The names of ESPnet's per-language text files (`text.tc.en`, ...) in ``directory``, sorted."""
    try:
        return sorted(name for name in os.listdir(directory) if ESPNET_TEXT.fullmatch(name))
    except OSError:
        return []


def _no_text(directory: Path) -> str:
    """Why ``directory`` holds no `text`, where it is ESPnet's pair directory (`train.en-de`), which keeps each
    language's text under another name: "DIR/text: file is missing" named nothing to do (twenty-seventh hostile
    pass)."""
    held = _espnet_texts(directory)
    # true case with punctuation first, the closest to a corpus's own transcripts (MuST-C's `.en`); not `text.lc.en`
    english = sorted((name for name in held if name.endswith(".en")), key=lambda name: (".tc." not in name, name))
    if not english:
        return f"{directory / 'text'}: file is missing (a Kaldi data directory holds wav.scp and text)"
    side = directory.parent / f"{directory.name}.en"
    other = f"give ESPnet's English data directory {side}, or " if side.is_dir() else ""
    return (f"{directory / 'text'}: file is missing; the directory holds ESPnet's {', '.join(held)}: {other}copy "
            f"{english[0]} to {directory / 'text'}")


def prepare_split(directory: Path, split: str, row_filter: RowFilter) -> SplitResult:
    """One data directory's rows in ``text`` order (nothing is written here)."""
    if not directory.is_dir():
        raise SateError(f"{directory}: not a directory (give a Kaldi data directory with wav.scp and text)")
    check_not_translations(directory)
    scp = directory / "wav.scp"
    if not os.path.lexists(scp):
        raise SateError(f"--kaldi-dir {directory}: {_no_scp(directory)}")
    if not os.path.lexists(directory / "text"):
        raise SateError(f"--kaldi-dir {directory}: {_no_text(directory)}")
    recordings = audio_paths(scp)
    # anything at an optional file's name is read as the file it stands for: a directory, a broken link or a loop
    # there is named as such (all three were taken for no file at all: a `segments` so made every recording an
    # utterance, and `utt2spk` gave each row its recording as speaker, exit 0); a named pipe is read as a stream
    segments = read_segments(directory / "segments", recordings) if os.path.lexists(directory / "segments") else None
    text_path = directory / "text"
    texts = read_table(text_path)
    if not texts:  # it was "no segments left after filtering", naming neither the file nor why
        raise SateError(f"{text_path}: holds no transcripts (no line '<utterance> <transcript>')")
    speakers = None
    if os.path.lexists(directory / "utt2spk"):
        speakers = {}
        for utt, (lineno, value) in read_table(directory / "utt2spk").items():
            if len(value.split()) != 1:
                raise SateError(f"{directory / 'utt2spk'}:{lineno}: expected '<utterance> <speaker>', got "
                                f"{shown(f'{utt} {value}')}")
            speakers[utt] = value

    result = SplitResult(split)
    infos: dict[str, WavInfo] = {}
    for utt, (lineno, transcript) in texts.items():
        where = f"{text_path}:{lineno}"
        if segments is not None:
            if utt not in segments:
                raise SateError(f"{where}: utterance {utt} has no line in {directory / 'segments'}")
            seg_line, rec, start, end = segments[utt]
            seg_where = f"{directory / 'segments'}:{seg_line}"
        elif utt in recordings:
            rec, start, end, seg_where = utt, 0.0, -1.0, where
        else:
            raise SateError(f"{where}: utterance {utt} has no recording in {scp}")
        if rec not in infos:
            check_relative_found(recordings[rec][1], scp, recordings[rec][0])
            infos[rec] = audio_info(recordings[rec][1], f"{scp}:{recordings[rec][0]}")
        info = infos[rec]
        end = info.duration if end == -1 else end
        if end > info.duration + END_TOLERANCE_S or start >= info.duration:
            raise SateError(f"{seg_where}: segment {utt} ({start:.3f}-{end:.3f} s) runs past the end of {info.path}"
                            f" ({info.duration:.3f} s)")
        if speakers is not None and utt not in speakers:
            raise SateError(f"{where}: utterance {utt} has no speaker in {directory / 'utt2spk'}")
        row_filter.add(result, utt, info.path, start, segment_samples(start, end - start, info),
                       speakers[utt] if speakers is not None else rec, transcript, None)
    untranscribed = len(set(segments if segments is not None else recordings) - set(texts))
    if untranscribed:
        result.dropped["no line in text (not transcribed)"] += untranscribed
    return result


def prepare(directories: list[Path], splits: list[str], row_filter: RowFilter) -> list[SplitResult]:
    """Each data directory into the split of the same position in ``splits``, checked before anything is
    written."""
    return [prepare_split(directory, split, row_filter) for directory, split in zip(directories, splits, strict=True)]
