"""Speech probabilities from silero-vad, a small trained voice activity detector (MIT, pip `silero-vad`).

Its wheel carries the TorchScript model (``silero_vad/data/silero_vad.jit``), so nothing is downloaded
at run time. The network reads 512-sample (32 ms) windows of 16 kHz audio with a recurrent state and
gives each a speech probability. A window is speech by hysteresis, as silero's own segmenter decides:
a run of windows above ``LOW`` that somewhere reaches ``HIGH``, so speech starts only when the network
is sure and ends only when it is sure the speech is over. `sate.decode.foreground` then checks these
decisions against the recording's level (word endings, and other voices under the talker).

The two thresholds were tuned on real speech under noise (`sate.bench.segment`) on construction seed 1,
not the benchmark's seed 0: silero's own 0.5 / 0.35 let music and babble start false segments in pauses;
0.8 / 0.35 raised the F1 at 10 dB (music 0.894 -> 0.940, babble 0.31 -> 0.42, white unchanged at 0.98)
with speech lost still below 1%, and seed 2 agreed (music 0.927 -> 0.939). BENCHMARKS.md has the
figures on the benchmark seed.
"""

from __future__ import annotations

import functools
import importlib.util
from pathlib import Path
from typing import Any

import numpy as np

from sate.data.audio import SAMPLE_RATE, FrameEnergy, true_runs
from sate.decode.foreground import foreground_speech
from sate.decode.frames import Frames
from sate.errors import SateError

WINDOW = 512  # samples per probability at 16 kHz (silero's fixed window)
HIGH = 0.8  # speech starts (silero's own default: 0.5; see the module docstring)
LOW = 0.35  # speech ends below this (silero's own default: 0.5 - 0.15)


def available() -> bool:
    """Is silero-vad installed?"""
    return importlib.util.find_spec("silero_vad") is not None


def model_path() -> Path:
    """The TorchScript model inside the installed wheel, found without importing the package (whose import
    sets torch's thread count to 1 for the whole process)."""
    spec = importlib.util.find_spec("silero_vad")
    if spec is None or not spec.submodule_search_locations:
        raise SateError("the silero-vad package is not installed (pip install silero-vad)")
    path = Path(list(spec.submodule_search_locations)[0]) / "data" / "silero_vad.jit"
    if not path.is_file():
        raise SateError(f"silero-vad is installed without its model ({path} is missing); reinstall it")
    return path


@functools.lru_cache(maxsize=1)
def _model() -> Any:
    """The model, loaded once per process, on the CPU."""
    import torch  # heavy: torch

    return torch.jit.load(str(model_path()), map_location="cpu").eval()


class SileroStream:
    """silero's speech decisions on a recording fed block by block (blocks of any size): the network reads each
    512-sample window in order with its recurrent state, the last window zero-padded, so the decisions are those
    of the whole recording at once. Only the per-window probabilities and energies are kept (12 bytes a window,
    1.4 MB an hour). The model is one per process: one stream at a time.

    The network runs on one torch thread (the caller's thread count is restored): a call per 32 ms window is
    far too small to share out, and on a busy 2-core machine two threads made it 10-25 times slower.
    """

    def __init__(self) -> None:
        self.model = _model()
        self.model.reset_states()
        self.held = np.empty(0, dtype=np.float32)  # samples of a window not yet complete
        self.probs: list[np.ndarray] = []
        self.energy = FrameEnergy(WINDOW, WINDOW)

    def add(self, block: np.ndarray) -> SileroStream:
        x = np.concatenate([self.held, block]) if len(self.held) else block
        whole = len(x) // WINDOW * WINDOW
        self._run(np.ascontiguousarray(x[:whole], dtype=np.float32))
        self.held = x[whole:]
        return self

    def _run(self, windows: np.ndarray) -> None:
        import torch  # heavy: torch

        n_windows = len(windows) // WINDOW
        if not n_windows:
            return
        x = torch.from_numpy(windows)
        out = np.empty(n_windows, dtype=np.float32)
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            with torch.inference_mode():
                for w in range(n_windows):
                    out[w] = float(self.model(x[w * WINDOW:(w + 1) * WINDOW], SAMPLE_RATE))
        finally:
            torch.set_num_threads(threads)
        self.probs.append(out)
        self.energy.add(windows)

    def probabilities(self) -> tuple[np.ndarray, np.ndarray]:
        """(probability, log energy in dB) of each window fed, after the last one is zero-padded."""
        if len(self.held):
            padded = np.zeros(WINDOW, dtype=np.float32)
            padded[:len(self.held)] = self.held
            self.held = self.held[:0]
            self._run(padded)
        probs = np.concatenate(self.probs) if self.probs else np.zeros(0, dtype=np.float32)
        return probs, self.energy.finish()[:len(probs)]

    def finish(self) -> Frames:
        """Frame decisions: hysteresis on the probability, then the foreground rules of `sate.decode.foreground`;
        the score (long speech is cut where it is lowest) is the probability."""
        probs, energy_db = self.probabilities()
        speech = foreground_speech(hysteresis(probs), probs, energy_db, LOW)
        return Frames(speech, probs, WINDOW / SAMPLE_RATE)


def speech_probabilities(wave: np.ndarray) -> np.ndarray:
    """(ceil(n / 512),) speech probability of each 32 ms window of 16 kHz mono samples; the last is zero-padded."""
    return SileroStream().add(wave).probabilities()[0]


def hysteresis(probs: np.ndarray, high: float = HIGH, low: float = LOW) -> np.ndarray:
    """Windows in a run at or above ``low`` that somewhere reaches ``high``."""
    speech = np.zeros(len(probs), dtype=bool)
    for start, stop in true_runs(probs >= low):
        if probs[start:stop].max() >= high:
            speech[start:stop] = True
    return speech
