"""Segmentation of real human speech under noise: silero-vad against the energy VAD.

The recording: ``utterances`` Asterisk prompts (`sate.bench.asterisk`; real speech, one US speaker,
8 kHz telephone audio resampled to 16 kHz), drawn with ``seed``, laid end to end with pauses of
0.2-2 s (`sate.bench.recordings`); prompts longer than ``MAX_PROMPT`` seconds are left out (the
segmenter would rightly cut them at the 20 s limit). It is scored clean, and with white noise,
babble (five talkers made of the prompts not in the recording) and music-like tones under all of it
at 20, 10 and 5 dB SNR. Each VAD segments each version with the default options of `sate segment`
(`sate.scoring.segments` for the figures; a boundary is correct within 0.3 s). Speed is audio seconds
per second of segmentation on one thread (x real time), reading and resampling not included. The network
alone is also timed both ways on the clean recording: ours (`sate.decode.silero.SileroNetwork`, every window
of a block at once) against silero-vad's TorchScript model called window by window, as its own code calls it.

The goal (issue 19): silero F1 >= 0.9 at 10 dB and at most 1% of the speech lost.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TypedDict

import numpy as np
import torch

from sate.bench import recordings
from sate.bench.asterisk import Prompt, fetch_asterisk, load_prompt, read_prompts
from sate.bench.measure import stopwatch
from sate.data.audio import SAMPLE_RATE
from sate.decode import silero
from sate.decode.vad import VadOptions, speech_segments
from sate.errors import SateError
from sate.scoring.segments import TOLERANCE, SegmentScores, score_segments

MAX_PROMPT = 15.0  # seconds of speech
SNRS = (20, 10, 5)
METHODS = ("silero", "energy")


class Goal(TypedDict):
    snr: int  # dB
    f1: float  # silero's F1 at least
    speech_lost: float  # silero's share of speech lost at most


class GoalMet(Goal):
    met: bool


class SegmentRow(SegmentScores):
    """One VAD on one condition: `score_segments`'s figures, rounded, and its speed."""

    noise: str
    snr_db: float | None  # None: clean
    vad: str
    x_real_time: float


class NetworkSpeed(TypedDict):
    """silero's network on the clean recording, one thread: x real time ours and silero-vad's, and the ratio."""

    ours_x_real_time: float
    silero_vad_x_real_time: float
    ratio: float
    max_abs_difference: float


class SegmentResult(TypedDict):
    """The segment part's figures."""

    utterances: int
    seed: int
    duration_s: float
    speech_s: float
    reference_segments: int
    tolerance_s: float
    prompts_available: int
    rows: list[SegmentRow]
    network: NetworkSpeed
    goal: GoalMet


GOAL = Goal(snr=10, f1=0.9, speech_lost=0.01)


def conditions() -> list[tuple[str, float | None]]:
    """(noise, SNR dB): clean first, then every noise at every SNR."""
    return [("clean", None)] + [(noise, snr) for noise in recordings.NOISES for snr in SNRS]


def load_prompt_pairs() -> list[tuple[Prompt, np.ndarray]]:
    """Every spoken Asterisk prompt with its audio at 16 kHz, those with at most ``MAX_PROMPT`` seconds of speech."""
    keep = []
    for prompt in read_prompts(fetch_asterisk()):
        wave = load_prompt(prompt)
        a, b = recordings.speech_extent(wave)
        if (b - a) / SAMPLE_RATE <= MAX_PROMPT:
            keep.append((prompt, wave))
    return keep


def load_prompts() -> list[np.ndarray]:
    """The audio of `load_prompt_pairs`."""
    return [wave for _, wave in load_prompt_pairs()]


@dataclass(frozen=True)
class Construction:
    """The recording drawn with a seed: which prompts are in it (in order), and the others, which make the babble."""

    chosen: list[int]
    others: list[np.ndarray]
    recording: recordings.Recording


def construct(prompts: list[np.ndarray], utterances: int, seed: int) -> Construction:
    """``utterances`` of ``prompts`` drawn with ``seed`` and laid end to end: the same recording in every part that
    reads one (segment, asr-long) for the same seed."""
    if utterances >= len(prompts):
        raise SateError(f"--segment-utterances must be below {len(prompts)} (the rest make the babble)")
    rng = np.random.default_rng(seed)
    order = rng.permutation(len(prompts))
    chosen = [int(i) for i in order[:utterances]]
    recording = recordings.build([prompts[i] for i in chosen], rng)
    return Construction(chosen, [prompts[i] for i in order[utterances:]], recording)


def version(built: Construction, k: int, noise: str, snr: float | None, seed: int) -> np.ndarray:
    """Condition k of `conditions` over the recording: clean, or ``noise`` mixed in at ``snr`` dB."""
    if snr is None:
        return built.recording.wave
    return recordings.mix(built.recording, noise, snr, built.others, np.random.default_rng([seed, k]))


def run(utterances: int, seed: int, prompts: list[np.ndarray] | None = None) -> SegmentResult:
    """Figures per condition and VAD on one constructed recording (see the module docstring)."""
    prompts = prompts if prompts is not None else load_prompts()
    built = construct(prompts, utterances, seed)
    recording = built.recording
    options = VadOptions()
    reference = recordings.reference_segments(recording.spans, options.min_pause)
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    rows = []
    try:
        for k, (noise, snr) in enumerate(conditions()):
            wave = version(built, k, noise, snr, seed)
            for method in METHODS:
                lap = stopwatch()
                hyp = speech_segments(wave, VadOptions(method=method))
                seconds = lap()
                figures = score_segments(hyp, reference, recording.spans)
                rows.append(SegmentRow(noise=noise, snr_db=snr, vad=method, **_rounded(figures),
                                       x_real_time=round(recording.duration / seconds, 1)))
        network = network_speed(recording.wave, recording.duration)
    finally:
        torch.set_num_threads(threads)
    at_goal = [r for r in rows if r["vad"] == "silero" and r["snr_db"] == GOAL["snr"]]
    met = all(r["f1"] >= GOAL["f1"] and r["speech_lost"] <= GOAL["speech_lost"] for r in at_goal)
    return SegmentResult(utterances=utterances, seed=seed, duration_s=round(recording.duration, 1),
                         speech_s=round(sum(b - a for a, b in recording.spans), 1), reference_segments=len(reference),
                         tolerance_s=TOLERANCE, prompts_available=len(prompts), rows=rows, network=network,
                         goal=GoalMet(**GOAL, met=met))


def network_speed(wave: np.ndarray, duration: float) -> NetworkSpeed:
    """silero's probabilities for `wave` by our batched network and by silero-vad's model window by window."""
    usable = wave[:len(wave) // silero.WINDOW * silero.WINDOW]
    lap = stopwatch()
    ours = silero.speech_probabilities(usable)
    ours_s = lap()
    model = torch.jit.load(str(silero.model_path()), map_location="cpu").eval()
    windows = torch.from_numpy(np.ascontiguousarray(usable, dtype=np.float32)).reshape(-1, silero.WINDOW)
    lap = stopwatch()
    with torch.inference_mode():
        theirs = np.array([float(model(w, SAMPLE_RATE)) for w in windows])
    theirs_s = lap()
    return NetworkSpeed(ours_x_real_time=round(duration / ours_s, 1),
                        silero_vad_x_real_time=round(duration / theirs_s, 1),
                        ratio=round(theirs_s / ours_s, 1), max_abs_difference=float(np.abs(ours - theirs).max()))


def _rounded(figures: SegmentScores) -> SegmentScores:
    return SegmentScores(**{k: round(v, 4) if isinstance(v, float) else v for k, v in figures.items()})


def table(result: SegmentResult) -> str:
    lines = [f"Segmentation of {result['utterances']} Asterisk prompts ({result['duration_s']} s, "
             f"{result['speech_s']} s of speech, {result['reference_segments']} reference segments, seed "
             f"{result['seed']}); boundary within {result['tolerance_s']} s",
             "noise     SNR  vad      segments  precision  recall     F1  speech lost  prompts cut  x real time"]
    for r in result["rows"]:
        snr = "-" if r["snr_db"] is None else f"{r['snr_db']:g}"
        lines.append(f"{r['noise']:8s} {snr:>4s}  {r['vad']:7s} {r['segments']:9d} {r['precision']:10.3f} "
                     f"{r['recall']:7.3f} {r['f1']:6.3f} {r['speech_lost']:11.2%} {r['utterances_cut']:12d} "
                     f"{r['x_real_time']:12.1f}")
    n = result["network"]
    lines.append(f"silero's network alone, clean: ours {n['ours_x_real_time']:.0f}x real time, silero-vad's model "
                 f"window by window {n['silero_vad_x_real_time']:.0f}x: {n['ratio']:.1f}x faster "
                 f"(probabilities within {n['max_abs_difference']:.1e})")
    g = result["goal"]
    lines.append(f"goal: silero F1 >= {g['f1']} and speech lost <= {g['speech_lost']:.0%} at {g['snr']} dB: "
                 f"{'met' if g['met'] else 'NOT met'}")
    return "\n".join(lines)
