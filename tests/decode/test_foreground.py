"""The foreground rule (`sate.decode.foreground`) on hand-made windows: pauses are cut only when silero
hears speech in the recording's background, and then exactly where the level falls to the background."""

from __future__ import annotations

import numpy as np

from sate.decode.foreground import KEEP_AFTER, KEEP_BEFORE, foreground_speech
from sate.decode.silero import LOW


def talk_over(background_prob: float) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Speech at -20 dB in windows 0-29 and 60-89, a background 10 dB lower in 30-59 and 90-119, which silero
    scores ``background_prob``; silero's hysteresis found one run of speech over all of it."""
    energy = np.full(120, -20.0)
    probs = np.full(120, 0.99)
    for start in (30, 90):
        energy[start:start + 30] = -30.0
        probs[start:start + 30] = background_prob
    return np.ones(120, dtype=bool), probs, energy


def test_pauses_full_of_other_voices_are_cut_where_the_talker_stops() -> None:
    speech, probs, energy = talk_over(0.9)
    out = foreground_speech(speech, probs, energy, LOW)
    # The pause 30-59 is cut, keeping KEEP_AFTER windows after the speech and KEEP_BEFORE before the next.
    assert out[:30 + KEEP_AFTER].all() and out[60 - KEEP_BEFORE:90 + KEEP_AFTER].all()
    assert not out[30 + KEEP_AFTER:60 - KEEP_BEFORE].any()
    assert not out[90 + KEEP_AFTER:120 - KEEP_BEFORE].any()
    assert (speech == talk_over(0.9)[0]).all()  # the input is not changed


def test_nothing_changes_when_the_background_is_not_speech_to_silero() -> None:
    speech, probs, energy = talk_over(LOW - 0.05)  # noise or music: silero does not call the background speech
    assert (foreground_speech(speech, probs, energy, LOW) == speech).all()
    # Clean audio: the floor is silence, far below the talker; nothing is quiet enough to be background speech.
    energy[30:60] = -100.0
    probs[30:60] = 0.01
    assert (foreground_speech(speech, probs, energy, LOW) == speech).all()
    empty = np.zeros(0, dtype=bool)
    assert foreground_speech(empty, np.zeros(0), np.zeros(0), LOW).shape == (0,)
