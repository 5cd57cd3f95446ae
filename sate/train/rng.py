"""Random number generator states as plain tensors, so a checkpoint holds them and loads with weights_only=True.

A resumed run restores every generator it draws from (torch, CUDA, numpy, Python), per rank, and so draws
the same dropout masks and SpecAugment masks as a run that was never interrupted.
"""

from __future__ import annotations

import random
from typing import NotRequired, TypedDict

import numpy as np
import torch


class NumpyState(TypedDict):
    """numpy's legacy global generator (`np.random.get_state`), its key array as a tensor."""

    name: str
    keys: torch.Tensor  # int64; numpy's uint32 words
    pos: int
    has_gauss: int
    gauss: float


class PythonState(TypedDict):
    """Python's `random` (`random.getstate`), its internal tuple as a tensor."""

    version: int
    internal: torch.Tensor  # int64
    gauss: float | None


class RngState(TypedDict):
    """One rank's generators, as a checkpoint stores them."""

    torch: torch.Tensor
    numpy: NumpyState
    python: PythonState
    cuda: NotRequired[list[torch.Tensor]]  # only where CUDA was initialised


def rng_state() -> RngState:
    name, keys, pos, has_gauss, gauss = np.random.get_state()
    version, internal, py_gauss = random.getstate()
    state = RngState(
        torch=torch.get_rng_state(),
        numpy=NumpyState(name=name, keys=torch.from_numpy(keys.astype(np.int64)), pos=int(pos),
                         has_gauss=int(has_gauss), gauss=float(gauss)),
        python=PythonState(version=version, internal=torch.tensor(internal, dtype=torch.int64), gauss=py_gauss),
    )
    if torch.cuda.is_available() and torch.cuda.is_initialized():
        state["cuda"] = torch.cuda.get_rng_state_all()
    return state


def set_rng_state(state: RngState) -> None:
    torch.set_rng_state(state["torch"])
    n = state["numpy"]
    np.random.set_state((n["name"], n["keys"].numpy().astype(np.uint32), n["pos"], n["has_gauss"], n["gauss"]))
    p = state["python"]
    random.setstate((p["version"], tuple(int(x) for x in p["internal"]), p["gauss"]))
    if "cuda" in state and torch.cuda.is_available() and len(state["cuda"]) == torch.cuda.device_count():
        torch.cuda.set_rng_state_all(state["cuda"])


def gather_rng_states() -> list[RngState]:
    """Every rank's states, in rank order (a collective under DDP: every rank must call it)."""
    state = rng_state()
    if not (torch.distributed.is_available() and torch.distributed.is_initialized()):
        return [state]
    states: list[RngState | None] = [None] * torch.distributed.get_world_size()
    torch.distributed.all_gather_object(states, state)
    return states
