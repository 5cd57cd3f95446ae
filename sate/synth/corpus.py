"""Voicing a demo corpus: sentence pairs planned into talks, voiced in parallel, written in MuST-C v1 layout.

`build_corpus` voices any sentence pairs (the Ding dictionary's), `build_phrasebook_corpus` the generated
phrasebook; `sate synth` (`sate.synth.cli`) is the command over them. The voices are `sate.synth.voices`, the
split rule `sate.synth.splits`, the Ding text `sate.synth.ding`.
"""

from __future__ import annotations

import hashlib
import io
import json
import os
import random
import shutil
import signal
import tempfile
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from multiprocessing import Pool, RawValue
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np
import soundfile as sf

from sate import layout
from sate.data.audio import wav_info
from sate.errors import SateError, asks_workers_to_end, one_line, pool_results, shell_word, shown, worker_signals
from sate.files import (
    append_only,
    atomic_open,
    atomic_write_text,
    file_sha256,
    fixed_in_place,
    given_path,
    make_parents,
    read_record,
    what_is_there,
)
from sate.numbers import check_jobs, is_int64, plain
from sate.synth.ding import (  # noqa: F401  (the module's public API)
    DING_PACKAGE,
    DING_PATH_IN_PACKAGE,
    default_cache_dir,
    fetch_ding,
    normalize_typography,
    parse_ding_line,
    read_ding_pairs,
)
from sate.synth.splits import SPLITS, split_of, split_pairs  # noqa: F401  (split_of: the public split rule)
from sate.synth.voices import (  # noqa: F401  (re-exported: the voices are part of the corpus API)
    HELDOUT_ESPEAK_ACCENTS,
    HELDOUT_FLITE,
    RESERVED_VOICES,
    SAMPLE_RATE,
    Voice,
    add_noise,
    check_engines,
    heldout_names,
    heldout_pool,
    is_heldout,
    missing_voices,
    speak,
    training_pool,
    voice_pool,
)
from sate.targets import check_output

TEXTS = ("phrasebook", "ding")
TGT_LANGS = ("de",)  # both texts are English-German
HELDOUT_SPLIT = "tst-heldout"
DEFAULT_TRAIN_SIZE = 3000
DING_RATE = (0.8, 1.25)  # speaking-rate range of the Ding corpus (unchanged since its first release)
PHRASEBOOK_RATE = (0.75, 1.35)  # wider for the phrasebook: more variety for the same sentences
TRAIN_NOISE_SNR_DB = (25.0, 45.0)  # light white noise on phrasebook train talks, one level per talk
_TALK_TMP: list[str] = []  # in a voicing process: the temporary folder of the talk it voices, while it has one


@dataclass(frozen=True)
class Style:
    """How one split is voiced: which voices, what speaking-rate range, and whether to add noise."""

    voices: tuple[Voice, ...]
    rate: tuple[float, float] = DING_RATE
    noise_snr_db: tuple[float, float] | None = None


def ding_styles() -> dict[str, Style]:
    pool = tuple(voice_pool())
    return {split: Style(pool) for split in SPLITS}


def phrasebook_styles() -> dict[str, Style]:
    """Training voices for train/dev/tst-COMMON (noise on train only); held-out voices for tst-heldout."""
    pool = tuple(training_pool())
    return {"train": Style(pool, PHRASEBOOK_RATE, TRAIN_NOISE_SNR_DB), "dev": Style(pool, PHRASEBOOK_RATE),
            "tst-COMMON": Style(pool, PHRASEBOOK_RATE), HELDOUT_SPLIT: Style(tuple(heldout_pool()), PHRASEBOOK_RATE)}


@dataclass
class Talk:
    """A group of consecutive sentences voiced by one voice into one wav."""

    split: str
    number: int
    voice: Voice
    seed: int
    pairs: list[tuple[str, str]]
    rate: tuple[float, float] = DING_RATE
    noise_snr_db: float | None = None

    @property
    def wav_name(self) -> str:
        return f"ted_{self.number}.wav"

    def fingerprint(self) -> str:
        """Changes whenever anything that shapes the audio changes, so stale talks are redone."""
        parts: list = [self.voice.key, self.seed, self.pairs, SAMPLE_RATE]
        if self.rate != DING_RATE or self.noise_snr_db is not None:  # Ding talks keep their old fingerprints
            parts.append([list(self.rate), self.noise_snr_db])
        return hashlib.sha1(json.dumps(parts, ensure_ascii=False).encode()).hexdigest()


def plan_talks(splits: Mapping[str, Sequence[tuple[str, str]]], train_size: int, seed: int,
               styles: Mapping[str, Style] | None = None, shuffle_train: bool = True) -> list[Talk]:
    """Group each split's voiced sentences into talks of 20-60 sentences, one voice each.

    `styles` says which splits to voice and how (default: the Ding corpus's). The train sentences to voice
    are the first `train_size` (of a seeded shuffle unless `shuffle_train` is false), and talks are cut from
    the front, so a larger `train_size` keeps every earlier talk (and its audio) as it was.
    """
    styles = ding_styles() if styles is None else styles
    talks: list[Talk] = []
    number = 1
    for split, style in styles.items():
        pairs = list(splits[split])
        rng = random.Random(f"{seed}:{split}")
        if split == "train":
            if shuffle_train:
                rng.shuffle(pairs)
            pairs = pairs[:train_size]
        start = 0
        while start < len(pairs):
            size = rng.randint(20, 60)
            voice = rng.choice(style.voices)
            talk_seed = rng.randrange(2**31)
            noise = rng.uniform(*style.noise_snr_db) if style.noise_snr_db else None
            talks.append(Talk(split, number, voice, talk_seed, pairs[start:start + size], style.rate, noise))
            number += 1
            start += size
    return talks


def _finished(sidecar: Path, fingerprint: str) -> list[dict] | None:
    """The segments a finished talk recorded beside its wav, or None (missing, of another plan, or damaged: a
    sidecar cut short was a JSONDecodeError traceback; the talk is voiced again)."""
    saved = read_record(sidecar, "`sate synth`")
    ok = isinstance(saved, dict) and saved.get("fingerprint") == fingerprint and isinstance(saved.get("segments"), list)
    return saved["segments"] if ok else None


def _whole(wav: Path, segments: list[dict]) -> bool:
    """Does a finished talk's wav still hold its segments (readable, not cut short)? A corpus copied with a wav cut
    short kept it: `sate synth` called the talk finished by its record, and `sate prep` then said to copy it again."""
    try:
        info = wav_info(wav)
    except SateError:
        return False
    ends = [seg.get("offset", 0) + seg.get("duration", 0) for seg in segments if isinstance(seg, dict)]
    return all(isinstance(end, int | float) for end in ends) and info.duration >= max(ends, default=0.0)


def _voiced(talk: Talk, split_dir: Path) -> list[dict] | None:
    """The segments of a talk voiced before as this plan voices it (its record's fingerprint, its wav whole), or None:
    `voice_talk` voices it (again), writing its wav and record."""
    wav_path = split_dir / "wav" / talk.wav_name
    if not wav_path.exists():
        return None
    saved = _finished(split_dir / ".synth" / f"{Path(talk.wav_name).stem}.json", talk.fingerprint())
    return saved if saved is not None and _whole(wav_path, saved) else None


def voice_talk(job: tuple[Talk, Path]) -> list[dict]:
    """Voice one talk into its wav (atomically) and return its segments; reuse finished talks."""
    talk, split_dir = job
    saved = _voiced(talk, split_dir)
    if saved is not None:
        return saved
    wav_path = split_dir / "wav" / talk.wav_name
    sidecar = split_dir / ".synth" / f"{Path(talk.wav_name).stem}.json"
    fingerprint = talk.fingerprint()
    rng = random.Random(talk.seed)
    pieces = [np.zeros(int(rng.uniform(0.2, 0.6) * SAMPLE_RATE), np.float32)]
    segments = []
    cursor = len(pieces[0])
    with tempfile.TemporaryDirectory() as tmp:
        _TALK_TMP[:] = [tmp]  # for a second stop to remove (`_exit_now`)
        for en, de in talk.pairs:
            audio = speak(en, talk.voice, rate=rng.uniform(*talk.rate), pitch=rng.random(), workdir=Path(tmp))
            gap = np.zeros(int(rng.uniform(0.2, 0.6) * SAMPLE_RATE), np.float32)
            segments.append({"offset": cursor / SAMPLE_RATE, "duration": len(audio) / SAMPLE_RATE,
                             "speaker_id": f"spk.{talk.number}", "wav": talk.wav_name, "en": en, "de": de})
            pieces += [audio, gap]
            cursor += len(audio) + len(gap)
    _TALK_TMP.clear()
    wav = np.concatenate(pieces)
    if talk.noise_snr_db is not None:
        wav = add_noise(wav, talk.noise_snr_db, talk.seed)
    peak = float(np.abs(wav).max()) or 1.0
    # encoded in memory (a talk's wav is megabytes), then written: libsndfile writing to a Python file calls back
    # into it, and a full disk printed an "Exception ignored from cffi callback" traceback per call before the line
    encoded = io.BytesIO()
    sf.write(encoded, wav * min(1.0, 0.95 / peak), SAMPLE_RATE, subtype="PCM_16", format="WAV")
    wav_path.parent.mkdir(parents=True, exist_ok=True)
    # a stop waits for the wav and its record (a finished talk, reused): a second stop landing in the first's
    # removal of a temporary file left that `.tmp` in the corpus (review31y)
    stops = {signal.SIGTERM, signal.SIGHUP}
    signal.pthread_sigmask(signal.SIG_BLOCK, stops)
    try:
        with atomic_open(wav_path, "wb") as f:
            f.write(encoded.getbuffer())
        sidecar.parent.mkdir(parents=True, exist_ok=True)
        # the wav's digest recorded: a talk a later plan drops is removed only while its wav is the one voiced here
        record = {"fingerprint": fingerprint, "segments": segments,
                  "sha256": hashlib.sha256(encoded.getbuffer()).hexdigest()}
        atomic_write_text(sidecar, json.dumps(record, ensure_ascii=False))
    finally:
        signal.pthread_sigmask(signal.SIG_UNBLOCK, stops)
    return segments


def remove_dropped_talks(split_dir: Path, kept: set[str]) -> int:
    """Remove the talks `sate synth` voiced into ``split_dir`` that this plan no longer names (another seed, a smaller
    size), returning how many: they stayed beside the new talks, on disk and to any reader of the wav folder rather
    than the split's yaml (25th hostile pass). Only a talk whose record says it voiced that wav, byte for byte, goes:
    a wav without a record, or changed since (edited in place too), is not ours to remove, and what is not a
    regular record (a folder, a pipe, a link) is left unread."""
    removed = 0
    records = split_dir / ".synth"
    for sidecar in sorted(records.glob("*.json")) if records.is_dir() else []:
        if sidecar.stem in kept or not _removable(sidecar):
            continue
        (split_dir / "wav" / f"{sidecar.stem}.wav").unlink(missing_ok=True)
        sidecar.unlink()
        removed += 1
    return removed


def _removable(sidecar: Path) -> bool:
    """Is ``sidecar`` a record of `sate synth`'s whose wav (``../wav/STEM.wav``) is gone or still the one it voiced,
    byte for byte?"""
    if sidecar.is_symlink() or not sidecar.is_file():
        return False
    try:
        saved = read_record(sidecar, "`sate synth`")
    except SateError:
        return False  # unreadable: left as it is
    digest = saved.get("sha256") if isinstance(saved, dict) else None
    if not isinstance(digest, str):
        return False  # a record of an earlier sate (no digest) or damaged: its wav is left as it is
    wav = sidecar.parent.parent / "wav" / f"{sidecar.stem}.wav"
    try:
        return not os.path.lexists(wav) or (not wav.is_symlink() and wav.is_file() and file_sha256(wav) == digest)
    except OSError:
        return False


# ----------------------------------------------------------------------------- corpus

def yaml_line(seg: dict) -> str:
    """One segment exactly as MuST-C v1 writes it."""
    return (f"- {{duration: {seg['duration']:.6f}, offset: {seg['offset']:.6f}, "
            f"speaker_id: {seg['speaker_id']}, wav: {seg['wav']}}}")


def corpus_out(out: object, tgt_lang: object = "de", option: str = "out") -> Path:
    """The corpus root ``out`` (a str or a path) checked before any work as `sate synth --out` is, and where to write
    it (links resolved): never a folder of a corpus `sate synth` voiced (its en-de/ given for the root), a data
    directory, an experiment or a pack (`sate.targets.check_output`), nor a corpus of the user's (`check_corpus_root`).
    `build_corpus` and `build_phrasebook_corpus` checked none of it: a str was a TypeError, the en-de/ folder of a
    voiced corpus got a corpus nested in it, a data directory an en-de/ of wavs, and tgt_lang "fr" an en-fr/ of
    German text, each exit 0 (twenty-seventh hostile pass). ``option`` names ``out`` in a refusal: the API's argument,
    or the CLI's --out."""
    if tgt_lang not in TGT_LANGS:
        raise SateError(f"tgt_lang {shown(tgt_lang)}: both texts are English-German, so only "
                        f"{', '.join(TGT_LANGS)}")
    if out == "":  # Path("") is ".": `build_corpus(os.environ.get("OUT", ""), ...)` voiced into the current folder
        raise SateError("out: an empty name (an unset variable?); give a directory ('.' for the current one)")
    out = given_path(out, "out")
    typed = Path(os.path.abspath(out))
    voiced = next((folder for folder in (typed, *typed.parents) if (folder / layout.SYNTH_MARK).is_file()), None)
    if voiced is not None:  # the en-de folder given for the root (or a folder in it) was told that only `sate synth`
        # writes there, to a user running `sate synth` (twenty-first hostile pass)
        raise SateError(f"{option} {out}: {'it' if voiced == typed else voiced} is the {voiced.name}/ folder of "
                        f"a corpus `sate synth` voiced; {option} takes the corpus's root, which holds {voiced.name}/: "
                        f"{voiced.parent}")
    out = check_output(out, "corpus", option)
    check_corpus_root(out / f"en-{tgt_lang}", option)  # before any work: never over a corpus of the user's
    return out


def check_counts(train_size: object, jobs: object) -> tuple[int, int | None]:
    """The Python API's counts, as `sate synth` checks its options: a negative train_size voiced all train sentences
    but the last ones (a slice from the end), and jobs 0 or less took every core or one, exit 0 (twenty-seventh
    hostile pass). A NumPy integer (a size from a grid or an array) is taken as the int it holds (`plain`), as
    before these checks."""
    train_size, jobs = plain(train_size), plain(jobs)
    if not is_int64(train_size) or train_size < 0:  # type: ignore[operator]
        raise SateError(f"train_size must be a whole number >= 0, got {shown(train_size)}")
    if jobs is not None:
        if not is_int64(jobs):
            raise SateError(f"jobs must be a whole number or None (one per core), got {shown(jobs)}")
        check_jobs(jobs, "jobs")  # type: ignore[arg-type]
    return train_size, jobs  # type: ignore[return-value]


def check_phrasebook_sizes(text_size: object, train_size: object, dev_size: object, test_size: object,
                           options: bool = False) -> tuple[int, int, int, int]:
    """The phrasebook's sizes, named as the Python API's arguments or (``options``) as `sate synth`'s options: the API
    took dev_size 0 (an empty dev split, exit 0) and any text_size, which drew sentences until memory ran out (the
    CLI's bounds; twenty-seventh hostile pass). Returned as ints: a NumPy integer is taken as the int it holds."""
    from sate.synth.phrasebook import MAX_SIZES  # slow: it builds its template tables on import

    text_size, train_size, dev_size, test_size = (plain(v) for v in (text_size, train_size, dev_size, test_size))

    def named(name: str) -> str:
        return f"--{name.replace('_', '-')}" if options else name

    for name, split, value in (("text_size", "train", text_size), ("dev_size", "dev", dev_size),
                               ("test_size", "tst-COMMON", test_size)):
        if not isinstance(value, int) or isinstance(value, bool) or value < 1:  # 10**20: "at most", below
            raise SateError(f"{named(name)} must be >= 1, got {shown(value)}")
        if value > MAX_SIZES[split]:  # type: ignore[operator]
            raise SateError(f"{named(name)} {value:,}: at most {MAX_SIZES[split]:,} (every sentence drawn is held in "
                            "memory until the splits are full)")
    if train_size > text_size:  # type: ignore[operator]
        raise SateError(f"{named('train_size')} {train_size} is more than {named('text_size')} {text_size}: only "
                        "train text can be voiced")
    return text_size, train_size, dev_size, test_size  # type: ignore[return-value]


def check_heldout_voices() -> None:
    """Refuse to voice tst-heldout where the installed engines lack a held-out accent or flite voice: each voices a
    voice it lacks in its default voice, which train hears, without a word. `sate synth` refused it, the Python API
    (`build_phrasebook_corpus`) voiced it (the last note of the twenty-sixth hostile pass; mended in the
    twenty-seventh)."""
    held = [Voice("espeak", accent) for accent in HELDOUT_ESPEAK_ACCENTS] + [Voice("flite", n) for n in HELDOUT_FLITE]
    heldout = missing_voices(held)
    if heldout:
        raise SateError(f"the installed engines lack {', '.join(heldout)}, held out of train for {HELDOUT_SPLIT} "
                        f"(its voices: {', '.join(heldout_names())}): an engine voices a voice it lacks in its "
                        "default voice, which train hears, without a word; install espeak-ng 1.49 or later and "
                        "flite 2, which has kal16 (sudo apt-get install espeak-ng flite), or use --text ding, which "
                        "holds no voice out")


def check_pairs(pairs: object) -> list[tuple[str, str]]:
    """The sentence pairs a Python caller gave `build_corpus`, as a list: each an (English, German) pair of str, each
    side one line of text. A German side holding a line break was written as two lines of the split's text, the
    corpus voiced and then refused by `sate prep` ("line counts differ"), and an empty English side was voiced as a
    segment of silence with a German translation, exit 0 (twenty-seventh hostile pass)."""
    if isinstance(pairs, str | bytes | Mapping) or not isinstance(pairs, Iterable):
        raise SateError(f"pairs: expected a list of (English, German) pairs, got {type(pairs).__name__}")
    checked = []
    for n, pair in enumerate(pairs):
        if not (isinstance(pair, tuple | list) and len(pair) == 2 and all(isinstance(side, str) for side in pair)):
            raise SateError(f"pairs[{n}]: expected an (English, German) pair of str, got {shown(pair)}")
        for side, text in zip(("English", "German"), pair, strict=True):
            try:  # a lone surrogate (bytes read with errors="surrogateescape") was a UnicodeEncodeError traceback
                text.encode("utf-8")
            except UnicodeEncodeError:
                raise SateError(f"pairs[{n}]: the {side} side {shown(text)} holds a lone surrogate, which is no "
                                "character and cannot be written as UTF-8 (bytes decoded with "
                                "errors='surrogateescape'?): give text decoded from its real encoding") from None
            if "\0" in text:  # the engines read it as the text's end: the words after it went unvoiced, exit 0, and
                # `sate prep` refused the split's text once the corpus was voiced (31st hostile pass)
                raise SateError(f"pairs[{n}]: the {side} side {shown(text)} holds a NUL character, where an engine "
                                "stops reading (the words after it are not voiced) and `sate prep` refuses a text "
                                "file: remove it")
            if not text.strip() or text.splitlines() != [text]:
                why = "is empty" if not text.strip() else "holds a line break"
                raise SateError(f"pairs[{n}]: the {side} side {shown(text)} {why}: each side is one line of the "
                                "corpus's text files")
        checked.append((pair[0], pair[1]))
    return checked


def unfilled(splits: Mapping[str, Sequence[tuple[str, str]]]) -> list[str]:
    """The splits that the hash rule left without a sentence: too few pairs to fill dev and tst-COMMON."""
    return [name for name, some in splits.items() if not some]


def check_corpus_root(root: Path, option: str = "--out") -> None:
    """Refuse to voice into ``root`` (OUT/en-de) when it holds a corpus `sate synth` did not write: a real MuST-C
    download names its files as ours do (``data/train/txt/train.yaml``, ``wav/ted_1.wav``), and every one of them
    would be replaced by a synthetic one. What is no folder there (a file, a pipe, a link to a file) is named: it was
    "OUT/en-de: File exists" once the text was drawn (29th hostile pass)."""
    what = what_is_there(root) if os.path.lexists(root) and not root.is_dir() else None
    if os.path.lexists(root) and not root.is_dir() and not (what or "").startswith("a broken symlink"):  # made
        what = what or ("a symlink to a file" if root.is_symlink() else "a file")  # where it leads, as --out is
        raise SateError(f"{option} {root.parent}: {root} is {what}, where `sate synth` makes its corpus folder "
                        f"{root.name}/: remove it, or give another {option}")
    if root.is_dir() and any(root.iterdir()) and not any((root / name).is_file()
                                                         for name in (layout.SYNTH_MARK, layout.SYNTH_SUMMARY)):
        raise SateError(f"{option} {root.parent}: {root} holds files that `sate synth` did not write (no "
                        f"{layout.SYNTH_MARK}): a corpus of yours, whose yaml, text and wav files it would replace; "
                        f"give another {option}")


def corpus_files(splits: Sequence[str], talks: list[Talk], tgt_lang: str) -> list[str]:
    """The files `sate synth` writes in its corpus root (OUT/en-de), relative to it."""
    names = [layout.SYNTH_MARK, layout.SYNTH_SUMMARY, "mt/train.en", f"mt/train.{tgt_lang}"]
    names += [f"data/{split}/txt/{split}.{ext}" for split in splits for ext in ("yaml", "en", tgt_lang)]
    names += [f"data/{talk.split}/{folder}/{name}" for talk in talks
              for folder, name in (("wav", talk.wav_name), (".synth", f"{Path(talk.wav_name).stem}.json"))]
    return names


def check_corpus_files(root: Path, names: Sequence[str], option: str = "--out") -> None:
    """Refuse, before any voicing, what stands at one of the files `sate synth` writes in a corpus it wrote before and
    is no file of it: a symlink (or a link on the way) or what is not a regular file. Written through, a run again
    replaced the user's file a link led to (their recording with a voiced talk, their notes with a split's text),
    exit 0 (fifteenth hostile pass); a synthetic corpus holds no file of anyone else's."""
    if not root.is_dir():
        return
    home = os.path.realpath(root)
    for name in names:
        path = root / name
        link = _linked_folder(root, path)
        if link is not None:  # named once, before any write: the files below it were refused one by one after a run
            raise SateError(  # had written through it, each "remove it" a file of the link's target (review)
                f"{option} {one_line(str(root.parent))}: {one_line(str(link))} is a symlink to "
                f"{one_line(os.path.realpath(link))}, where `sate synth` makes its folder {link.relative_to(root)}/: "
                f"written through, the corpus goes outside {option} and a run again replaces what is there; remove the "
                f"link itself (rm {shell_word(str(link))}: its target is left as it is), or give another {option}")
        if not os.path.lexists(path):
            # a file where a folder of it goes (a split's): "SPLIT/wav: Not a directory" once the other splits were
            # voiced, naming the folder below the file (26th hostile pass)
            folder = path.parent
            while folder != root and not os.path.lexists(folder):
                folder = folder.parent
            if folder != root and not folder.is_dir():
                raise SateError(f"{option} {one_line(str(root.parent))}: {one_line(str(folder))} is "
                                f"{one_line(what_is_there(folder) or 'a file')}, where `sate synth` makes its folder "
                                f"{folder.relative_to(root)}/: remove it")
            continue
        real = os.path.realpath(path)
        how = "is a symlink to" if os.path.islink(path) else "leads through a symlink to"
        what = what_is_there(path) or (f"{how} {real}" if real != os.path.join(home, name) else None)
        if what is not None:
            what = what if what.startswith(how) else f"is {what}"
            raise SateError(f"{option} {one_line(str(root.parent))}: {one_line(str(path))} {one_line(what)}, where "
                            f"`sate synth` writes its file {name}: remove it")
    # append-only or immutable (chattr +a, +i), a file of it or a folder it renames its files into: the rename failed
    # after the voicing, said as "a special or protected file system", and an append-only folder kept the temporary
    # file for good (twentieth hostile pass)
    for path in [root / name for name in names] + sorted({(root / name).parent for name in names}):
        how = fixed_in_place(path) if path.is_file() else "append-only (chattr +a)" if append_only(path) else None
        if how is not None:
            raise SateError(f"{option} {one_line(str(root.parent))}: {one_line(str(path))} is {how}, where `sate "
                            f"synth` writes its files; lift that, or give another {option}")


def _linked_folder(root: Path, path: Path) -> Path | None:
    """The first folder between ``root`` and ``path`` (root excluded) that is a symbolic link, or None."""
    folder = root
    for part in path.relative_to(root).parts[:-1]:
        folder = folder / part
        if folder.is_symlink():
            return folder
    return None


def check_folders_writable(root: Path, names: Sequence[str], option: str = "--out") -> None:
    """Refuse, before any voicing, a folder of the corpus that this user may not write in (mode 0500 or 0100) where
    this run writes one of ``names``: a run again over the corpus rewrote mt/train.* and the splits before that
    folder's, then failed there, status 1, the corpus a mix of two runs' texts where they differed (twenty-third
    hostile pass, the folders harness's wider run). The folders of talks voiced before are not written."""
    for folder in sorted({(root / name).parent for name in names}):
        if folder.is_dir() and not os.access(folder, os.W_OK | os.X_OK):
            raise SateError(f"{option} {one_line(str(root.parent))}: {one_line(str(folder))} is not writable (no "
                            "permission, or read-only), where `sate synth` writes its files; lift that, or give "
                            f"another {option}")


def _worker_signals(parent: int, ending: Any) -> None:
    """A voicing process ends without a word when the command is stopped. Forked, it inherited the CLI's handlers,
    and each worker printed a `Terminated` or `KeyboardInterrupt` traceback under the command's one line. Now the
    parent alone handles Ctrl-C (which reaches every process of the terminal) and terminates the pool, and a
    SIGTERM or SIGHUP exits a worker as SystemExit, which unwinds (its temporary directory is removed) and which
    multiprocessing ends quietly; the command killed (SIGKILL) ends them by a SIGTERM too. One ignored where the
    command was started (`nohup`) stays ignored (`worker_signals`)."""
    worker_signals(parent, ending, _exit_quietly)


def _voicing_pool(jobs: int) -> Any:
    """A pool of ``jobs`` voicing processes (`_worker_signals`), its terminate() asking them to end."""
    ending = RawValue("b", 0)
    return asks_workers_to_end(Pool(jobs, initializer=_worker_signals, initargs=(os.getpid(), ending)), ending)


def _exit_quietly(signum: int, frame: FrameType | None) -> None:
    """The first SIGTERM or SIGHUP ends the worker by unwinding; a later one ends it at once, removing the talk's
    temporary folder itself. A stop that reached the worker twice (a scheduler's SIGTERM to the whole job, then the
    pool's or `end_with_parent`'s) raised a second SystemExit inside the unwinding, often in the folder's removal,
    which was left in TMPDIR (31st hostile pass: about one `kill -TERM -- -PGID` in eight). Not ignored: a SystemExit
    raised inside libsndfile's callbacks is swallowed, and only a later signal ends that worker."""
    for other in (signal.SIGTERM, signal.SIGHUP):
        signal.signal(other, _exit_now)
    raise SystemExit(128 + signum)


def _exit_now(signum: int, frame: FrameType | None) -> None:
    """A later stop: inside a talk's voicing, remove its temporary folder and end at once; elsewhere (writing the
    talk's wav and record, whose temporary files the unwinding removes) unwind as the first stop does."""
    if not _TALK_TMP:
        raise SystemExit(128 + signum)
    for tmp in _TALK_TMP:
        shutil.rmtree(tmp, ignore_errors=True)
    os._exit(128 + signum)


def _write_corpus(root: Path, text: Mapping[str, Sequence[tuple[str, str]]], talks: list[Talk], tgt_lang: str,
                  jobs: int | None, progress: bool, option: str = "--out", command: str = "") -> dict:
    """Write mt/train.* (all train text), voice the talks, write each voiced split; return a summary. ``option``
    names the corpus root in a refusal; ``command`` (the `sate synth` command line, none from the API) goes into the
    mark, for `sate prep` to name the run to finish."""
    from tqdm import tqdm  # slow: tqdm, only while progress shows

    check_corpus_root(root, option)
    check_corpus_files(root, corpus_files(list(text), talks, tgt_lang), option)
    check_folders_writable(root, corpus_files(list(text), [t for t in talks if root.is_dir() and
                                                           _voiced(t, root / "data" / t.split) is None], tgt_lang),
                           option)
    made = make_parents(root)  # through a symlink to a folder not made yet, as every output
    mt_dir = root / "mt"
    try:
        # the corpus is unfinished from here until its summary is written again: a run over a corpus of another seed
        # or size, stopped, left the old split texts naming wavs it had voiced anew, under the old summary, and
        # `sate prep` read them, exit 0 (29th hostile pass); it now refuses a corpus with the mark and no summary
        (root / layout.SYNTH_SUMMARY).unlink(missing_ok=True)
        # the command, so that `sate prep` of an unfinished corpus names it: "run that `sate synth --out ROOT` again"
        # built the default phrasebook over a Ding corpus, or another seed or size (review29y)
        atomic_write_text(root / layout.SYNTH_MARK, f"{command}\n" if command else "")
        mt_dir.mkdir(parents=True, exist_ok=True)
        atomic_write_text(mt_dir / "train.en", "".join(en + "\n" for en, _ in text["train"]))
        atomic_write_text(mt_dir / f"train.{tgt_lang}", "".join(de + "\n" for _, de in text["train"]))
    except BaseException:
        # nothing voiced yet: a folder this run made holds only what it just wrote (a full disk left OUT/en-de/
        # with its mark and an empty mt/); talks voiced later stay when a run stops, for the next to go on from
        if made:
            shutil.rmtree(made[0], ignore_errors=True)
        raise

    jobs = jobs or os.cpu_count() or 1
    segments: dict[int, list[dict]] = {}
    work = [(talk, root / "data" / talk.split) for talk in talks]
    bar = tqdm(total=sum(len(t.pairs) for t in talks), unit="utt", desc="voicing", disable=not progress)
    try:  # the bar closed before the CLI's line ("sate synth: terminated"), not redrawn after it
        with _voicing_pool(max(1, min(jobs, len(work)))) as workers:  # one per talk at most
            voiced = pool_results(workers, voice_talk, work, "a voicing worker", "run the command again, which goes "
                                  "on from the voiced talks (fewer --jobs use less memory)", ordered=True)
            for talk, segs in zip(talks, voiced, strict=True):
                segments[talk.number] = segs
                bar.update(len(segs))
            # ended by their queue, not by the with's terminate(): it SIGTERMs the workers while it holds their
            # queue's lock, and one started (or one between tasks) then waited on that lock for ever, the command
            # waiting on it, after every talk was voiced (fifteenth hostile pass; seen under load)
            workers.close()
            workers.join()
    finally:
        bar.close()

    summary: dict = {"root": str(root), "mt_train_pairs": len(text["train"]), "splits": {}}
    for split in text:
        segs = [s for t in talks if t.split == split for s in segments[t.number]]
        txt = root / "data" / split / "txt"
        txt.mkdir(parents=True, exist_ok=True)
        (root / "data" / split / "wav").mkdir(parents=True, exist_ok=True)
        atomic_write_text(txt / f"{split}.yaml", "".join(yaml_line(s) + "\n" for s in segs))
        atomic_write_text(txt / f"{split}.en", "".join(s["en"] + "\n" for s in segs))
        atomic_write_text(txt / f"{split}.{tgt_lang}", "".join(s["de"] + "\n" for s in segs))
        summary["splits"][split] = {"segments": len(segs), "talks": sum(t.split == split for t in talks),
                                    "hours": round(sum(s["duration"] for s in segs) / 3600, 3),
                                    "text_pairs": len(text[split])}
        # once the split's yaml names the new talks alone, the talks of an earlier plan go
        kept = {Path(t.wav_name).stem for t in talks if t.split == split}
        summary["splits"][split]["dropped_talks"] = remove_dropped_talks(root / "data" / split, kept)
    summary["dropped_splits"], summary["kept_splits"] = remove_dropped_splits(root, list(text), tgt_lang)
    return summary


def _not_ours(split_dir: Path, tgt_lang: str) -> Path | None:
    """The first file or folder in ``split_dir`` that `sate synth` did not write as it is now (a file of the user's
    anywhere in it, a wav changed since it was voiced, a link), or None where all of it is ours to remove."""
    records = split_dir / ".synth"
    ours = {f"{sidecar.stem}.wav" for sidecar in records.glob("*.json") if _removable(sidecar)}
    expected = {"wav": ours, ".synth": {f"{Path(w).stem}.json" for w in ours},
                "txt": {f"{split_dir.name}.{ext}" for ext in ("yaml", "en", tgt_lang)}}
    for entry in sorted(split_dir.iterdir()):
        if entry.name not in expected or entry.is_symlink() or not entry.is_dir():
            return entry
        for item in sorted(entry.iterdir()):
            if item.name not in expected[entry.name] or item.is_symlink() or not item.is_file():
                return item
    return None


def remove_dropped_splits(root: Path, splits: Sequence[str], tgt_lang: str) -> tuple[list[str], list[str]]:
    """Remove the splits `sate synth` voiced into ``root`` that this run does not write, returning those removed and
    those left: `--text ding` over a phrasebook corpus left its tst-heldout (the phrasebook's sentences in held-out
    voices) in the Ding corpus, exit 0, and `sate prep --mustc-root` read it as one of its splits (26th hostile pass).
    Only a split with talk records (``.synth/``) is one of ours, and it goes only where all of it is ours (its talks
    as `remove_dropped_talks` says, yaml and texts): any other file in it (the user's notes, a wav changed since)
    keeps the split whole, untouched, decided before anything is removed; a split half removed around a file of the
    user's was read by no one and refused by `sate prep` (review of the 26th hostile pass)."""
    removed: list[str] = []
    left: list[str] = []
    data = root / "data"
    for split_dir in sorted(data.iterdir()) if data.is_dir() else []:
        records = split_dir / ".synth"
        if split_dir.name in splits or not (records.is_dir() or records.is_symlink()):
            continue
        if split_dir.is_symlink() or records.is_symlink():  # a split kept elsewhere: not removed, but said (it was
            left.append(split_dir.name)  # skipped without a word, and `sate prep` read it as a split of this corpus)
            continue
        try:
            stray = _not_ours(split_dir, tgt_lang)
        except OSError:  # a folder of it unreadable: not ours to judge
            stray = split_dir
        if stray is not None:
            left.append(split_dir.name)  # untouched: its yaml still names every talk
            continue
        txt = split_dir / "txt"
        try:  # a folder of it made read-only: said as left, not an error after the voicing
            remove_dropped_talks(split_dir, set())
            for ext in ("yaml", "en", tgt_lang):
                (txt / f"{split_dir.name}.{ext}").unlink(missing_ok=True)
            for folder in (split_dir / "wav", records, txt, split_dir):
                if folder.is_dir():
                    folder.rmdir()
        except OSError:
            left.append(split_dir.name)
            continue
        removed.append(split_dir.name)
    return removed, left


def build_corpus(out: Path, pairs: Sequence[tuple[str, str]], train_size: int, seed: int = 0,
                 tgt_lang: str = "de", jobs: int | None = None, progress: bool = True, *, option: str = "out",
                 command: str = "") -> dict:
    """The Ding-style corpus: split `pairs` by hash, voice it under `out/en-<tgt_lang>/`, return a summary.
    ``option``: how a refusal names ``out`` (`sate synth` gives "--out"); ``command``: the `sate synth` command line,
    kept in the mark until the run ends."""
    out = corpus_out(out, tgt_lang, option)
    train_size, jobs = check_counts(train_size, jobs)
    pairs = check_pairs(pairs)
    check_engines(voice_pool())
    root = out / f"en-{tgt_lang}"
    splits = split_pairs(pairs)
    empty = unfilled(splits)
    if empty:  # an empty list made a corpus of empty splits, exit 0, which `sate prep` refused split by split
        raise SateError(f"pairs: {len(pairs)} sentence pairs, too few to fill {' and '.join(empty)} (about 4% of the "
                        "sentences go to each of dev and tst-COMMON)")
    summary = _write_corpus(root, splits, plan_talks(splits, train_size, seed), tgt_lang, jobs, progress, option,
                            command)
    atomic_write_text(root / layout.SYNTH_SUMMARY, json.dumps(summary, indent=2))
    return summary


def build_phrasebook_corpus(out: Path, text_size: int, train_size: int, dev_size: int, test_size: int,
                            seed: int = 0, jobs: int | None = None, progress: bool = True, *,
                            option: str = "out", command: str = "") -> dict:
    """The phrasebook corpus under `out/en-de/`: `text_size` train text pairs (MT data), of which
    `train_size` are voiced; dev and tst-COMMON voiced whole; tst-heldout = tst-COMMON in held-out voices.
    ``option``: how a refusal names ``out`` (`sate synth` gives "--out"); ``command``: as `build_corpus`'s."""
    from sate.synth.phrasebook import english_word_types, phrasebook_splits  # slow: builds its templates on import

    out = corpus_out(out, option=option)
    train_size, jobs = check_counts(train_size, jobs)
    text_size, train_size, dev_size, test_size = check_phrasebook_sizes(text_size, train_size, dev_size, test_size)
    styles = phrasebook_styles()
    check_engines([v for style in styles.values() for v in style.voices])
    check_heldout_voices()
    root = out / "en-de"
    text = phrasebook_splits(text_size, dev_size, test_size, seed)
    text = {**text, HELDOUT_SPLIT: text["tst-COMMON"]}
    talks = plan_talks(text, train_size, seed, styles, shuffle_train=False)
    summary = _write_corpus(root, text, talks, "de", jobs, progress, option, command)
    summary.update({"text": "phrasebook", "seed": seed,
                    "english_word_types": len(english_word_types(p for s in SPLITS for p in text[s])),
                    "heldout_voices": heldout_names()})
    atomic_write_text(root / layout.SYNTH_SUMMARY, json.dumps(summary, indent=2))
    return summary
