"""What a voice activity detector says about a recording, frame by frame (`sate.decode.vad`, `sate.decode.silero`)."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class Frames:
    """A detector's verdict on a recording: frame k covers ``offset + k * hop`` to ``offset + (k + 1) * hop``
    seconds; ``score`` is how speech-like each frame is (long speech is cut where it is lowest); a silent run
    of n frames is a pause of ``n * hop + overhang`` seconds (a window longer than the hop hides some silence)."""

    speech: np.ndarray  # bool (n_frames,)
    score: np.ndarray  # float (n_frames,)
    hop: float
    offset: float = 0.0
    overhang: float = 0.0
