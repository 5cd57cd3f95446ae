"""One training run per experiment directory: `EXP/train.lock` names its holder (host, pid, start time).

Exclusion comes from an advisory `flock` on that file, which the kernel drops when the holding process ends
in any way, SIGKILL and a crashed node included (on NFS the server's lease runs out); so a lock left by a
dead run never blocks, and the next run takes it over with a message naming the run that left it. A live
holder refuses a second run with a message naming it. Where the file system has no locks, the holder is
judged alive by its pid on the same host, or by a heartbeat (the file's mtime, touched every 30 s) from
another host.
"""

from __future__ import annotations

import contextlib
import json
import os
import socket
import threading
import time
from datetime import datetime
from pathlib import Path
from typing import IO, TypedDict

from sate import layout
from sate.errors import SateError
from sate.files import open_lock, still_named, try_flock

LOCK_NAME = layout.TRAIN_LOCK
HEARTBEAT_S = 30.0
STALE_AFTER_S = 300.0  # without flock: a holder on another host whose heartbeat is older than this is gone


def pid_alive(pid: int) -> bool:
    """Is process `pid` running? A zombie (ended, not yet reaped) is not: where init does not reap the orphans it
    inherits, a crashed run's pid would otherwise answer `kill(pid, 0)` for ever and block its experiment."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        pass
    with contextlib.suppress(OSError, IndexError):  # Linux names the state after the command's closing ')'
        return Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] not in ("Z", "X")
    return True


def _started_after(pid: int, started: object) -> bool:
    """Did the process ``pid`` start after the time a lock records (ISO) its holder started, so that it is another
    process given the same pid (after a reboot, or pids wrapped)? False where either time cannot be read."""
    try:
        recorded = datetime.fromisoformat(str(started)).timestamp()
        ticks = int(Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[19])  # starttime, field 22
        boot = next(float(line.split()[1]) for line in Path("/proc/stat").read_text().splitlines()
                    if line.startswith("btime "))
    except (OSError, ValueError, IndexError, StopIteration):
        return False
    return boot + ticks / os.sysconf("SC_CLK_TCK") > recorded + 5.0  # seconds of slack: clock and record rounding


class LockHolder(TypedDict, total=False):
    """What EXP/train.lock says (JSON): the run holding it. One read back may lack any key (a foreign or cut file)."""

    host: str
    pid: int
    started: str  # ISO time with its zone
    run_id: str  # once the run has one (`ExperimentLock.set_run_id`)


def describe(holder: LockHolder) -> str:
    return (f"pid {holder.get('pid', '?')} on {holder.get('host', '?')}, started {holder.get('started', '?')}"
            + (f", run {holder['run_id']}" if holder.get("run_id") else ""))


class ExperimentLock:
    """`with ExperimentLock(exp) as lock:` holds EXP/train.lock for the duration of a run.

    `takeover` is the holder a stale lock named, when there was one (for the caller's message).
    """

    def __init__(self, exp: Path) -> None:
        self.path = Path(exp) / LOCK_NAME
        self.takeover: LockHolder | None = None
        self._file: IO[str] | None = None
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.holder = LockHolder(host=socket.gethostname(), pid=os.getpid(),
                                 started=datetime.now().astimezone().isoformat(timespec="seconds"))

    def __enter__(self) -> ExperimentLock:
        self.acquire()
        return self

    def __exit__(self, *exc: object) -> None:
        self.release()

    def takeover_note(self) -> str:
        """The line that says a stale lock was taken over. Its holder alive on this host holds the lock of another
        folder: this one came with a copy of its experiment (`cp -r` of a running run), and "is gone" was untrue
        of a run still training (25th hostile pass)."""
        holder = self.takeover or LockHolder()
        pid = holder.get("pid")
        elsewhere = (holder.get("host") == self.holder["host"] and isinstance(pid, int) and pid != os.getpid()
                     and pid_alive(pid) and not _started_after(pid, holder.get("started")))
        why = f"holds it no more (pid {pid} runs still: was this a copy made while the run trained?)" if elsewhere \
            else "is gone"
        return f"taking over {self.path}: the run that held it ({describe(holder)}) {why}"

    def _read(self) -> LockHolder:
        with contextlib.suppress(OSError, ValueError, RecursionError):  # a damaged lock names no holder
            data = json.loads(self.path.read_text(encoding="utf-8") or "{}")
            if isinstance(data, dict):
                return data
        return {}

    def _alive_without_flock(self, holder: LockHolder) -> bool:
        """A holder's liveness where the file system has no locks: pid on this host, heartbeat elsewhere."""
        if not holder:
            return False
        if holder.get("host") == self.holder["host"]:
            return isinstance(holder.get("pid"), int) and holder["pid"] != os.getpid() and pid_alive(holder["pid"])
        with contextlib.suppress(OSError):
            return time.time() - self.path.stat().st_mtime < STALE_AFTER_S
        return False

    def acquire(self) -> None:
        """Take the lock or raise `SateError` naming the live holder."""
        self.path.parent.mkdir(parents=True, exist_ok=True)
        for _ in range(10):  # retried only when another run replaced the file under us
            f = open_lock(self.path)  # held open for the whole run
            taken = try_flock(f.fileno())
            if taken is False:
                f.close()
                raise SateError(f"{self.path.parent} is in use by another training run ({describe(self._read())}; "
                                f"lock {self.path}); wait for it to end or train into another --exp")
            flock = taken is True
            # The file we locked must still be the one at the path (a finishing run may have just removed it).
            if not still_named(self.path, f.fileno()):
                f.close()
                continue
            previous = self._read()
            if not flock and self._alive_without_flock(previous):
                f.close()
                raise SateError(f"{self.path.parent} is in use by another training run ({describe(previous)}; "
                                f"lock {self.path}); wait for it to end, or delete the lock if that run is gone")
            self.takeover = previous or None
            try:
                self._write(f)
            except BaseException:
                with contextlib.suppress(OSError):  # the close flushes again what the full disk refused
                    f.close()
                raise
            self._file = f
            self._thread = threading.Thread(target=self._heartbeat, name="sate-lock-heartbeat", daemon=True)
            self._thread.start()
            return
        raise SateError(f"{self.path}: could not take the lock (the file keeps being replaced)")

    def set_run_id(self, run_id: str) -> None:
        """Name the run in the lock, so that a refused second run can say which run holds the directory."""
        if self._file is not None:
            self.holder["run_id"] = run_id
            self._write(self._file)

    def _write(self, f: IO[str]) -> None:
        """The holder into the lock file, replacing what was there. A full disk names the lock: the write is the
        first of `sate train`, and its error said "No space left on device" naming no file."""
        try:
            f.seek(0)
            f.truncate()
            f.write(json.dumps(self.holder) + "\n")
            f.flush()
            os.fsync(f.fileno())
        except OSError as err:
            raise OSError(err.errno, err.strerror, str(self.path)) from None

    def _heartbeat(self) -> None:
        while not self._stop.wait(HEARTBEAT_S):
            with contextlib.suppress(OSError):
                os.utime(self.path)

    def release(self) -> None:
        """Remove the lock file, then let go of it (in this order, so nobody locks a file about to vanish)."""
        self._stop.set()
        if self._file is None:
            return
        with contextlib.suppress(OSError):
            if still_named(self.path, self._file.fileno()):
                self.path.unlink()
        lock_file, self._file = self._file, None
        with contextlib.suppress(OSError):  # a write a full disk refused is flushed again here: that error was said
            lock_file.close()
