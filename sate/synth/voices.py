"""The text-to-speech voices of the offline corpora and how one sentence is voiced.

Two engines, espeak-ng (accents x voice variants) and flite (its built-in voices). flite's `rms` and any
neural voice (e.g. Piper) are reserved for evaluating robustness to unseen voices and are never used.

The Ding corpus voices every split from `voice_pool()`, as it always has. The phrasebook corpus holds out
`HELDOUT_FLITE` and the espeak-ng accents `HELDOUT_ESPEAK_ACCENTS` from train, dev and tst-COMMON and
voices its extra split tst-heldout with them only, so a model can be scored on voices it never heard;
its training voices add more espeak-ng variants and accents (`training_pool`).
"""

from __future__ import annotations

import os
import re
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from math import gcd
from pathlib import Path

import numpy as np
import soundfile as sf

from sate.errors import SateError, one_line, shown

SAMPLE_RATE = 16000
# An engine voices a sentence in well under a second (flite 2,000 words in 8 s of CPU): after this long it is stuck
ENGINE_TIMEOUT_S, ENGINE_TIMEOUT_PER_CHAR_S = 300.0, 0.1
ENGINE_POLL_S = 1.0  # how often a running engine's time is counted (a pause counts as one such wait at most)
SILENCE = 0.01  # a sample this loud or quieter is silence (the engine's leading and trailing pause)
# Less free space than this where an engine wrote, its own wav counted as free: the disk is full, and its wav may be
# cut short (a second of audio is 32 KiB at 16 kHz, 44 KiB at flite's and espeak-ng's 22,050 Hz)
MIN_FREE_BYTES = 64 * 1024
FILLED_BYTES = 4096  # less than a block left once an engine ends: it filled the disk, and its wav may be cut short
ESPEAK_ACCENTS = ("en-us", "en-gb", "en-gb-scotland", "en-gb-x-rp", "en-029", "en-us-nyc")
ESPEAK_VARIANTS = tuple(f"m{i}" for i in range(1, 8)) + tuple(f"f{i}" for i in range(1, 5))
FLITE_VOICES = ("awb", "slt", "kal16")
RESERVED_VOICES = frozenset({"flite:rms", "piper"})

# Held out of the phrasebook's train/dev/tst-COMMON; tst-heldout uses only these.
HELDOUT_FLITE = ("kal16",)
HELDOUT_ESPEAK_ACCENTS = ("en-gb-scotland",)
# More variety for phrasebook training: two more British accents and more espeak-ng voice variants.
EXTRA_ESPEAK_ACCENTS = ("en-gb-x-gbclan", "en-gb-x-gbcwmd")
EXTRA_ESPEAK_VARIANTS = ("f5", "m8", "adam", "Alex", "Alicia", "Andrea", "Annie", "belinda", "benjamin", "david",
                         "edward", "linda", "max", "Michael", "paul", "quincy", "robert", "steph", "travis",
                         "victor", "klatt", "klatt3", "norbert", "shelby")
FLITE_SHARE = 0.2  # phrasebook pools repeat flite voices so that about this share of talks use flite


@dataclass(frozen=True)
class Voice:
    engine: str  # "espeak" or "flite"
    name: str  # espeak "en-us+m3", flite "slt"

    @property
    def key(self) -> str:
        return f"{self.engine}:{self.name}"

    @property
    def accent(self) -> str:
        """The espeak-ng accent ("en-gb-scotland" of "en-gb-scotland+m3"); flite voices are their own."""
        return self.name.split("+")[0]


def is_heldout(voice: Voice) -> bool:
    if voice.engine == "flite":
        return voice.name in HELDOUT_FLITE
    return voice.accent in HELDOUT_ESPEAK_ACCENTS


def heldout_names() -> list[str]:
    """The held-out voices as a reader names them: "flite kal16", "espeak-ng en-gb-scotland (every variant)"."""
    return ([f"flite {name}" for name in HELDOUT_FLITE] +
            [f"espeak-ng {accent} (every variant)" for accent in HELDOUT_ESPEAK_ACCENTS])


def is_reserved(voice: Voice) -> bool:
    """A voice kept for evaluation, however it is spelt: flite selects `rms` as `cmu_us_rms` too (and loads
    `cmu_us_rms.flitevox` from a path), which `speak` voiced; any engine but espeak-ng and flite (Piper) is."""
    if voice.engine == "flite":
        name = Path(voice.name).name.removesuffix(".flitevox").removeprefix("cmu_us_")
        return f"flite:{name}" in RESERVED_VOICES
    return voice.engine != "espeak" or voice.key in RESERVED_VOICES


def _checked(pool: list[Voice]) -> list[Voice]:
    reserved = sorted({v.key for v in pool if is_reserved(v)})
    assert not reserved, f"reserved voices in the pool: {reserved}"
    return pool


def voice_pool() -> list[Voice]:
    """Every voice the Ding corpus may use; reserved evaluation voices are never in it."""
    pool = [Voice("espeak", f"{accent}+{variant}") for accent in ESPEAK_ACCENTS for variant in ESPEAK_VARIANTS]
    pool += [Voice("flite", name) for name in FLITE_VOICES]
    return _checked(pool)


def _weighted(espeak: list[Voice], flite: list[Voice]) -> list[Voice]:
    """espeak + flite voices, flite repeated so a uniform draw picks flite about FLITE_SHARE of the time."""
    copies = max(1, round(FLITE_SHARE * len(espeak) / ((1 - FLITE_SHARE) * len(flite))))
    return _checked(espeak + flite * copies)


def training_pool() -> list[Voice]:
    """Phrasebook train/dev/tst-COMMON voices: every accent and variant except the held-out ones."""
    accents = [a for a in ESPEAK_ACCENTS + EXTRA_ESPEAK_ACCENTS if a not in HELDOUT_ESPEAK_ACCENTS]
    variants = ESPEAK_VARIANTS + EXTRA_ESPEAK_VARIANTS
    espeak = [Voice("espeak", f"{accent}+{variant}") for accent in accents for variant in variants]
    flite = [Voice("flite", name) for name in FLITE_VOICES if name not in HELDOUT_FLITE]
    return _weighted(espeak, flite)


def heldout_pool() -> list[Voice]:
    """tst-heldout voices: the held-out accents (every variant) and flite voices, half of the talks each."""
    espeak = [Voice("espeak", f"{accent}+{variant}") for accent in HELDOUT_ESPEAK_ACCENTS
              for variant in ESPEAK_VARIANTS + EXTRA_ESPEAK_VARIANTS]
    flite = [Voice("flite", name) for name in HELDOUT_FLITE]
    return _checked(espeak + flite * max(1, len(espeak) // len(flite)))


def check_engines(pool: Sequence[Voice]) -> None:
    """Fail early, saying exactly what to install, when a TTS engine is missing."""
    needed = {"espeak": "espeak-ng", "flite": "flite"}
    missing = sorted({needed[v.engine] for v in pool if shutil.which(needed[v.engine]) is None})
    if missing:
        raise SateError(f"missing text-to-speech engine(s): {', '.join(missing)}. "
                        f"Install them with: sudo apt-get install {' '.join(missing)}")


def _listed(cmd: list[str]) -> str | None:
    """What an engine prints when asked for its voices, or None where it cannot say."""
    try:
        done = subprocess.run(cmd, capture_output=True, text=True, timeout=60)
    except (OSError, subprocess.SubprocessError):
        return None
    return done.stdout if done.returncode == 0 else None


def missing_voices(pool: Sequence[Voice]) -> list[str]:
    """The voices of ``pool`` the installed engines lack, as a reader names them ("espeak-ng accent en-us-nyc").
    Both engines voice a name they do not have without a word and with status 0 (espeak-ng in its default voice for
    the language, or without the variant; flite in kal), so a corpus recorded voices it never used, and tst-heldout
    could be voiced by a training voice (26th hostile pass). An engine whose listing cannot be read is not judged."""
    missing: list[str] = []
    espeak = sorted({v.name for v in pool if v.engine == "espeak"})
    if espeak:
        languages = _listed(["espeak-ng", "--voices"])
        variants = _listed(["espeak-ng", "--voices=variant"])
        accents = {line.split()[1] for line in (languages or "").splitlines()[1:] if len(line.split()) > 4}
        kinds = set(re.findall(r"!v/(\S+)", variants or ""))  # the variant's file: a VoiceName may hold a space
        wanted = sorted({name.partition("+")[0] for name in espeak})
        missing += [f"espeak-ng accent {a}" for a in wanted if accents and a not in accents]
        wanted = sorted({name.partition("+")[2] for name in espeak} - {""})
        missing += [f"espeak-ng variant {v}" for v in wanted if kinds and v not in kinds]
    flite = sorted({v.name for v in pool if v.engine == "flite"})
    if flite:
        listed = _listed(["flite", "-lv"]) or ""
        names = set(listed.partition(":")[2].split()) if listed.startswith("Voices available:") else set()
        missing += [f"flite voice {name}" for name in flite if names and name not in names]
    return missing


def _resample(audio: np.ndarray, rate: int) -> np.ndarray:
    if rate == SAMPLE_RATE:
        return audio
    from scipy.signal import resample_poly  # heavy: scipy (seconds), only to resample a voice

    g = gcd(rate, SAMPLE_RATE)
    return resample_poly(audio, SAMPLE_RATE // g, rate // g).astype(np.float32)


def _trim(audio: np.ndarray, margin: int = 800) -> np.ndarray:
    """Cut the engine's leading and trailing silence, keeping a 50 ms margin."""
    loud = np.flatnonzero(np.abs(audio) > SILENCE)
    if loud.size == 0:
        return audio
    return audio[max(loud[0] - margin, 0): loud[-1] + margin]


def speak(text: str, voice: Voice, rate: float, pitch: float, workdir: Path) -> np.ndarray:
    """Voice one sentence: float32 mono audio at 16 kHz.

    `rate` scales the speaking speed (1.0 = engine default) and `pitch` lies in [0, 1].
    """
    if is_reserved(voice):
        raise ValueError(f"voice {voice.key} is reserved for evaluation")
    out = workdir / "utt.wav"
    if voice.engine == "espeak":
        cmd = ["espeak-ng", "-v", voice.name, "-s", str(round(165 * rate)), "-p", str(round(20 + 60 * pitch)),
               "-w", str(out), "--stdin"]
    else:
        cmd = ["flite", "-voice", voice.name, "--setf", f"duration_stretch={1 / rate:.3f}",
               "--setf", f"int_f0_target_mean={round(90 + 80 * pitch)}", "-f", "/dev/stdin", "-o", str(out)]
    # the sentence named: a user can only work around the one an engine cannot voice knowing which it is
    failed = f"{cmd[0]} failed on voice {voice.name} voicing {shown(text)}"
    limit = round(ENGINE_TIMEOUT_S + len(text) * ENGINE_TIMEOUT_PER_CHAR_S)
    done = _run_engine(cmd, text, limit)
    if done is None:  # an engine stuck on a sentence held the command for ever, without a word
        raise SateError(f"{failed}: it ran {limit} s without ending (time the run was paused not counted), and was "
                        "stopped: the engine is stuck on this sentence; update the engine, or leave the sentence out "
                        "of the text")
    if done.returncode != 0 or not out.exists():
        raise SateError(f"{failed}: {_why(done, out)}")
    try:
        audio, sr = sf.read(out, dtype="float32", always_2d=True)
    except (sf.LibsndfileError, RuntimeError) as err:
        # exit 0 with an empty or damaged file (flite on a full TMPDIR writes 0 bytes): a LibsndfileError traceback
        raise SateError(f"{failed}: it wrote no readable audio ({one_line(str(err))}) writing {out} (a full disk? "
                        "set TMPDIR to another one)") from None
    audio = _trim(_resample(audio.mean(axis=1), sr))
    if not np.any(np.abs(audio) > SILENCE):
        # a segment of silence with its translation went into the corpus, exit 0 (a sentence of punctuation alone,
        # "...", given to the Python API)
        voiced = f"{failed}: it voiced only silence ({len(audio) / SAMPLE_RATE:.2f} s)"
        if not any(c.isalnum() for c in text):
            raise SateError(f"{voiced}; give a sentence of words")
        # words voiced as silence: the file was cut short, as an engine writing to a full TMPDIR ends 0 with its
        # leading pause alone (or a header alone), and "give a sentence of words" blamed the sentence (review29y)
        raise SateError(f"{voiced} writing {out}: its file was cut short ({_free(workdir)}; a full disk? set TMPDIR "
                        "to another one)")
    free = _free_bytes(workdir)
    # the wav's own bytes were free before it: a whole 10 s sentence on 500 KiB free was refused (review31y)
    if free is not None and (free < FILLED_BYTES or free + out.stat().st_size < MIN_FREE_BYTES):
        # an engine writing to a full disk ends 0 with a valid wav cut short (espeak-ng and flite alike, 4.5 s of
        # speech as 1.1 s on a 48 KiB tmpfs): the segment said less than its transcript, exit 0 (hand29y's leftover)
        raise SateError(f"{cmd[0]} on voice {voice.name} voicing {shown(text)} ended with status 0, but the disk it "
                        f"wrote {out} on is full ({_free(workdir)}), so the wav may be cut short; free some space "
                        "there, or set TMPDIR to another disk")
    return audio


def _free_bytes(folder: Path) -> int | None:
    """The bytes this process may still write where the engine wrote (root's count the blocks reserved for root,
    which root writes into), None where the file system gives no figures (ramfs: all zeros, and no limit) or they
    cannot be read. Users' free space alone refused root's whole wavs, and ramfs's zeros every wav (review31y)."""
    try:
        stat = os.statvfs(folder)
    except OSError:
        return None
    if stat.f_blocks == 0:
        return None
    return (stat.f_bfree if os.geteuid() == 0 else stat.f_bavail) * stat.f_frsize


def _free(folder: Path) -> str:
    """How much space is left where the engine wrote, as a line says it."""
    free = _free_bytes(folder)
    if free is None:
        return "free space unknown"
    return f"{free // 1024:,} KiB free there" if free < 1 << 30 else f"{free / (1 << 30):.1f} GiB free there"


def _run_engine(cmd: list[str], text: str, limit: float) -> subprocess.CompletedProcess | None:
    """Run an engine on ``text``; None where it ran ``limit`` seconds without ending (it is killed then). Only time
    it could run counts: a `sate synth` paused (Ctrl-Z, SIGSTOP, a batch scheduler's suspend) stops this process and
    the engine alike, and a wall-clock limit called a working engine stuck once resumed and failed the run (review of
    the 29th hostile pass). So time is counted in waits of ENGINE_POLL_S: one that took longer (this process was
    stopped) counts as one wait, and one while the engine alone is stopped does not count."""
    ran, sent = 0.0, text
    with subprocess.Popen(cmd, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          text=True) as proc:
        try:
            while True:
                began = time.monotonic()
                try:
                    out, err = proc.communicate(sent, timeout=ENGINE_POLL_S)
                except subprocess.TimeoutExpired:
                    sent = None  # sent once: communicate() goes on where it was
                    if not _stopped(proc.pid):
                        ran += min(time.monotonic() - began, ENGINE_POLL_S)
                    if ran >= limit:
                        proc.kill()
                        proc.communicate()
                        return None
                    continue
                return subprocess.CompletedProcess(cmd, proc.returncode, out, err)
        except BaseException:  # as subprocess.run: the engine does not outlive an error or a signal here
            proc.kill()
            raise


def _stopped(pid: int) -> bool:
    """Whether process ``pid`` is stopped (state T in /proc; False where that cannot be read)."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            state = f.read().rpartition(b")")[2].split()[:1]
    except OSError:
        return False
    return state in ([b"T"], [b"t"])


def _why(done: subprocess.CompletedProcess, out: Path) -> str:
    """Why an engine wrote no sentence: its message, else how it ended. A file size limit (`ulimit -f`) kills it
    without a word, and the line ended on "failed on voice en-gb-scotland+m3: ", naming neither (26th hostile pass)."""
    said = done.stderr.strip()[-300:]
    if said:
        return said
    if done.returncode < 0:
        try:
            name = signal.Signals(-done.returncode).name
        except ValueError:
            name = f"signal {-done.returncode}"
        if name == "SIGXFSZ":
            return f"killed by {name} writing {out}: a file size limit is set (`ulimit -f`); lift it"
        return f"killed by {name} writing {out}"
    status = f"exit status {done.returncode}" if done.returncode else "no audio written"
    return f"{status}, no message, writing {out} (a full disk? set TMPDIR to another one)"


def add_noise(wav: np.ndarray, snr_db: float, seed: int) -> np.ndarray:
    """White noise at `snr_db` below the speech's RMS (computed over the loud samples only)."""
    loud = wav[np.abs(wav) > 0.01]
    level = float(np.sqrt(np.mean(loud**2))) if loud.size else 0.0
    noise = np.random.default_rng(seed).standard_normal(wav.shape).astype(np.float32)
    return wav + noise * (level / 10 ** (snr_db / 20))
