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

from sate.data.audio import SAMPLE_RATE, DcFreeEnergy, true_runs
from sate.decode.foreground import foreground_speech
from sate.decode.frames import Frames
from sate.errors import SateError
from sate.files import require_file

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
    require_file(path, "silero-vad's model",
                 f"silero-vad is installed without its model ({path} is missing); reinstall it")
    return path


# silero's 16-kHz network, as its TorchScript code reads: each 512-sample window with the 64 samples before it is
# padded (reflect, 64) and put through a 256-point STFT of hop 128 (4 frames of 129 magnitudes), four 3-tap
# convolutions with ReLU (strides 1, 2, 2, 1: one frame of 128), an LSTM cell carried from window to window, and
# ReLU, a 1x1 convolution and a sigmoid.
CONTEXT = 64
PAD = 64
HOP = 128
STRIDES = (1, 2, 2, 1)
WEIGHTS = {"stft.forward_basis_buffer": (258, 1, 256), "decoder.rnn.weight_ih": (512, 128),
           "decoder.rnn.weight_hh": (512, 128), "decoder.decoder.2.weight": (1, 128, 1)}
MAX_WINDOWS = 4096  # windows through the convolutions at once (131 s of audio, about 17 MB)


@functools.lru_cache(maxsize=1)
def _weights() -> dict[str, Any]:
    """The 16-kHz network's tensors, read from the TorchScript file once per process."""
    import torch  # heavy: torch

    path = model_path()
    weights = dict(torch.jit.load(str(path), map_location="cpu")._model.state_dict())
    for name, shape in WEIGHTS.items():
        if name not in weights or tuple(weights[name].shape) != shape:
            raise SateError(f"{path}: not the silero-vad 6 network sate reads ({name} is missing or not {shape}); "
                            "install silero-vad>=6,<7")
    return weights


class SileroNetwork:
    """silero's network over many windows in one call, where silero-vad's own model takes one window per call.

    The windows of a block go through the STFT and the convolutions as one batch and the LSTM runs over them as a
    sequence, so a block costs a few tensor operations instead of a module call per 32 ms: 10 times faster on
    one thread (BENCHMARKS.md, "Segmentation on real speech"), with silero's probabilities to 1e-4
    (tests/decode/test_segment.py checks against the TorchScript model). The context samples and the LSTM state
    carry over between calls.
    """

    def __init__(self) -> None:
        import torch  # heavy: torch

        w = _weights()
        self.basis = w["stft.forward_basis_buffer"]
        self.convs = [(w[f"encoder.{i}.reparam_conv.weight"], w[f"encoder.{i}.reparam_conv.bias"], stride)
                      for i, stride in enumerate(STRIDES)]
        # float32 on the CPU, whatever torch's default dtype and device (`torch.set_default_device("cuda")`) are
        self.lstm = torch.nn.LSTM(128, 128, dtype=torch.float32, device="cpu")
        with torch.no_grad():
            for ours, theirs in (("weight_ih_l0", "weight_ih"), ("weight_hh_l0", "weight_hh"),
                                 ("bias_ih_l0", "bias_ih"), ("bias_hh_l0", "bias_hh")):
                getattr(self.lstm, ours).copy_(w[f"decoder.rnn.{theirs}"])
        self.out = (w["decoder.decoder.2.weight"], w["decoder.decoder.2.bias"])
        self.context = torch.zeros(CONTEXT, dtype=torch.float32, device="cpu")
        self.state: tuple[Any, Any] | None = None

    def __call__(self, windows: np.ndarray) -> np.ndarray:
        """The speech probability of each whole 512-sample window of `windows`, in order."""
        import torch  # heavy: torch
        import torch.nn.functional as F  # heavy: torch

        n_windows = len(windows) // WINDOW
        out = np.empty(n_windows, dtype=np.float32)
        # float32 under a caller's `torch.autocast("cpu")`: in bfloat16 the probabilities were "TypeError: Got
        # unsupported ScalarType BFloat16" of .numpy() (a notebook's `with torch.autocast("cpu"): st.translate(...)`,
        # 33rd hostile pass), in float16 other decisions than silero's
        with torch.inference_mode(), torch.autocast("cpu", enabled=False):
            for first in range(0, n_windows, MAX_WINDOWS):
                part = torch.from_numpy(windows[first * WINDOW:(first + MAX_WINDOWS) * WINDOW])
                signal = torch.cat([self.context, part])
                rows = signal.unfold(0, CONTEXT + WINDOW, WINDOW)  # each window with the samples before it
                frames = F.conv1d(F.pad(rows.unsqueeze(1), (0, PAD), mode="reflect"), self.basis, stride=HOP)
                real, imag = frames.chunk(2, dim=1)
                x = torch.sqrt(real * real + imag * imag)
                for weight, bias, stride in self.convs:
                    x = torch.relu(F.conv1d(x, weight, bias, stride=stride, padding=1))
                hidden, self.state = self.lstm(x.squeeze(-1), self.state)  # one sequence: (windows, 128)
                probs = torch.sigmoid(F.conv1d(torch.relu(hidden).unsqueeze(-1), *self.out))
                out[first:first + len(rows)] = probs.reshape(-1).numpy()
                self.context = signal[-CONTEXT:].clone()
        return out


class SileroStream:
    """silero's speech decisions on a recording fed block by block (blocks of any size): the network reads each
    512-sample window in order with its recurrent state, the last window zero-padded, so the decisions are those
    of the whole recording at once. Only the per-window probabilities and energies are kept (12 bytes a window,
    1.4 MB an hour). Each stream has its own network state, so streams may interleave.

    The network runs on one torch thread (the caller's thread count is restored): its tensors are small, and on
    a busy 2-core machine two threads made silero 10-25 times slower.
    """

    def __init__(self) -> None:
        self.network = SileroNetwork()
        self.held = np.empty(0, dtype=np.float32)  # samples of a window not yet complete
        self.probs: list[np.ndarray] = []
        self.energy = DcFreeEnergy(WINDOW, WINDOW)

    def add(self, block: np.ndarray) -> SileroStream:
        x = np.concatenate([self.held, block]) if len(self.held) else block
        whole = len(x) // WINDOW * WINDOW
        self._run(np.ascontiguousarray(x[:whole], dtype=np.float32))
        self.held = x[whole:]
        return self

    def _run(self, windows: np.ndarray) -> None:
        import torch  # heavy: torch

        if len(windows) < WINDOW:
            return
        threads = torch.get_num_threads()
        torch.set_num_threads(1)
        try:
            self.probs.append(self.network(windows))
        finally:
            torch.set_num_threads(threads)
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
