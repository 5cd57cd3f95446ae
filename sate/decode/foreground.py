"""The foreground talker: silero's speech decisions checked against the recording's own level.

silero-vad answers "is there speech here?", not "is the talker we segment speaking?". Other voices
under the talker (a cafe, a conference hall, five talkers of babble) are speech too: silero hears
speech in every pause, the pauses vanish and segments run to the length limit. The recording says
when this happens. Its floor is its quietest 160 ms (the 5th percentile of the windows' energy averaged
over ``SMOOTH`` windows: the pauses, where there are any); its background is the windows within
``BACKGROUND_BAND_DB`` of the floor. When silero calls the background speech (median probability at
least its end threshold, so hysteresis could never end a segment in a pause), speech must also be
foreground: at least ``FOREGROUND_DB`` above the floor (the talker is louder than the crowd). A
stretch of windows below that level is a pause then, except ``KEEP_AFTER`` windows after speech
(word endings decay slowly) and ``KEEP_BEFORE`` before it (onsets are sharp).

Over silence, white noise or music the background is not speech to silero (median probability at
most 0.15 down to 0 dB SNR, against 0.6 and more for babble at 10 dB and below), so nothing changes
there. A single utterance without silence around it may trigger the rule, but its floor is then its
deepest dips, and stretches 7 dB above them lasting a pause are rare inside fluent speech.

Tuned on the constructions of seeds 1-3 (`sate.bench.segment`), never the benchmark's seed 0: babble
at 10 dB went from F1 0.36 to 0.95 (speech lost 0.13% -> 0.25%), at 5 dB from 0.09 to 0.92 (0.0% ->
1.9%); the other conditions, the demo's synthetic talks and single Asterisk prompts are unchanged.
Babble at 13-17 dB stays below the trigger (F1 0.79-0.93, as before). BENCHMARKS.md has the table.
"""

from __future__ import annotations

import numpy as np

from sate.data.audio import true_runs

SMOOTH = 5  # windows (160 ms) of energy averaged for the floor and the pauses: one loud window is no word
FLOOR_PERCENTILE = 5.0  # the recording's floor: its quietest 160 ms, pauses where there are any
BACKGROUND_BAND_DB = 3.0  # windows this close to the floor are the background that silero is asked about
FOREGROUND_DB = 7.0  # foreground speech is at least this far above the floor
KEEP_AFTER = 6  # windows of a quiet stretch kept after speech when pauses are cut (a word's decay)
KEEP_BEFORE = 2  # ... and before speech (onsets are sharp)


def smooth_db(energy_db: np.ndarray, width: int = SMOOTH) -> np.ndarray:
    """The mean power of ``width`` windows centred on each window, in dB (one value per window, also when there
    are fewer windows than ``width``: numpy's "same" mode would return ``width`` values then)."""
    power = 10.0 ** (energy_db / 10.0)
    start = (width - 1) // 2
    mean = np.convolve(power, np.ones(width) / width, mode="full")[start:start + len(power)]
    return 10.0 * np.log10(np.maximum(mean, 1e-12))


def background_is_speech(probs: np.ndarray, smoothed_db: np.ndarray, floor: float, low: float) -> bool:
    """Does silero hear speech in the recording's background (the windows near its floor)?"""
    background = probs[smoothed_db < floor + BACKGROUND_BAND_DB]
    return bool(len(background)) and float(np.median(background)) >= low


def foreground_speech(speech: np.ndarray, probs: np.ndarray, energy_db: np.ndarray, low: float) -> np.ndarray:
    """silero's per-window ``speech`` decisions corrected by level (see the module docstring).

    ``probs`` and ``energy_db`` (dB) are per window, as ``speech``; ``low`` is silero's end threshold.
    """
    if len(speech) == 0:
        return speech.copy()
    smoothed = smooth_db(energy_db)
    floor = float(np.percentile(smoothed, FLOOR_PERCENTILE))
    out = speech.copy()
    if background_is_speech(probs, smoothed, floor, low):
        for start, stop in true_runs(smoothed < floor + FOREGROUND_DB):
            out[start + KEEP_AFTER:max(start + KEEP_AFTER, stop - KEEP_BEFORE)] = False
    return out
