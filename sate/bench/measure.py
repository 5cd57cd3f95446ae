"""How the benchmark measures: peak resident memory of one measurement, fastest-of-N timing, the machine.

**Peak memory** is the resident set size (RSS) of this process. Before a measurement the Python garbage
is collected and glibc gives its free heap back to the system (``malloc_trim``), so that memory freed by
an earlier measurement cannot hide what this one needs; then the kernel's high-water mark (``VmHWM``) is
reset to the current RSS through ``/proc/self/clear_refs``. After it, ``peak`` is the high-water mark
(the exact maximum, no sampling) and ``rise`` is how far it climbed above the RSS at the start: the
memory the measurement itself needed on top of what the process already held (Python, torch, ESPnet,
the models). Where the mark cannot be reset (kernels before 4.0, some sandboxes), RSS is sampled every
5 ms instead, which can miss short peaks; ``method`` says which was used.
"""

from __future__ import annotations

import contextlib
import ctypes
import ctypes.util
import gc
import os
import platform
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from pathlib import Path
from typing import TypedDict, TypeVar

MiB = 2**20
T = TypeVar("T")


def _libc() -> ctypes.CDLL | None:
    name = ctypes.util.find_library("c")
    with contextlib.suppress(OSError):
        return ctypes.CDLL(name) if name else None
    return None


_LIBC = _libc()


def _rss() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _high_water_mark() -> int:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) * 1024
    raise OSError("no VmHWM in /proc/self/status")


def high_water_mark_mib() -> float:
    """This process's peak RSS so far (``VmHWM``), in MiB: what the benchmark's child processes report."""
    return _high_water_mark() / MiB


def _reset_high_water_mark() -> bool:
    try:
        with open("/proc/self/clear_refs", "w") as f:
            f.write("5")
        return True
    except OSError:
        return False


def release_free_memory() -> None:
    """Collect garbage and return glibc's free heap to the system, so that RSS is what is in use."""
    gc.collect()
    if _LIBC is not None and hasattr(_LIBC, "malloc_trim"):
        _LIBC.malloc_trim(0)


@dataclass
class Peak:
    """Peak RSS (MiB) of one or more measurements, and its largest rise over the RSS at their start."""

    peak_mib: float = 0.0
    rise_mib: float = 0.0
    method: str = "high-water mark"

    def add(self, other: Peak) -> None:
        self.peak_mib, self.rise_mib = max(self.peak_mib, other.peak_mib), max(self.rise_mib, other.rise_mib)
        self.method = other.method


@contextlib.contextmanager
def peak_memory() -> Iterator[Peak]:
    """Measure the `with` block's peak RSS (module docstring); the yielded `Peak` is filled on exit."""
    release_free_memory()
    result = Peak()
    start = _rss()
    if _reset_high_water_mark():
        yield result
        peak = max(_high_water_mark(), _rss())
    else:
        result.method = "sampled every 5 ms"
        highest, stop = [start], threading.Event()

        def sample() -> None:
            while not stop.wait(0.005):
                highest[0] = max(highest[0], _rss())

        thread = threading.Thread(target=sample, daemon=True)
        thread.start()
        try:
            yield result
        finally:
            stop.set()
            thread.join()
        peak = max(highest[0], _rss())
    result.peak_mib, result.rise_mib = peak / MiB, (peak - start) / MiB


def fastest(run: Callable[[], T], repeat: int, seconds: Callable[[T], float]) -> tuple[T, Peak]:
    """The result of the fastest of `repeat` runs (by `seconds(result)`) and the peak memory over all runs."""
    best: T | None = None
    peak = Peak()
    for _ in range(repeat):
        with peak_memory() as p:
            out = run()
        peak.add(p)
        if best is None or seconds(out) < seconds(best):
            best = out
    assert best is not None
    return best, peak


def stopwatch() -> Callable[[], float]:
    """Seconds since the call, on a monotonic clock: ``lap = stopwatch(); ...; lap()``."""
    start = time.perf_counter()
    return lambda: time.perf_counter() - start


def cpu_name() -> str:
    with contextlib.suppress(OSError):
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return platform.processor() or platform.machine()


def memory_gib() -> float | None:
    with contextlib.suppress(OSError, ValueError, IndexError):
        for line in Path("/proc/meminfo").read_text().splitlines():
            if line.startswith("MemTotal:"):
                return round(int(line.split()[1]) / 2**20, 1)
    return None


class Machine(TypedDict):
    """What the figures were measured on and with."""

    date: str
    cpu: str
    cores: int | None
    memory_gib: float | None
    torch_threads: int
    python: str
    torch: str
    espnet: str
    sacrebleu: str


def machine() -> Machine:
    """What the figures were measured on and with (everything runs on the CPU)."""
    import espnet  # heavy: ESPnet
    import sacrebleu  # slow: sacrebleu (0.3 s)
    import torch  # heavy: torch

    return Machine(date=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"), cpu=cpu_name(), cores=os.cpu_count(),
                   memory_gib=memory_gib(), torch_threads=torch.get_num_threads(),
                   python=platform.python_version(), torch=torch.__version__, espnet=espnet.__version__,
                   sacrebleu=sacrebleu.__version__)
