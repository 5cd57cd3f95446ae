"""Waiting for the other processes of a run over several processes or machines: said, and stoppable.

Before its first step, every process of a DDP run waits in torch's rendezvous until all the others have joined
(`init_process_group`). That wait blocks in C++, where Python runs no signal handler: a run whose peers never come
(a machine not started, a wrong MASTER_ADDR, a launcher's environment left in the shell) sat there for the
rendezvous' 30 minutes, deaf to Ctrl-C, `kill` and a closed terminal, saying only Lightning's log line, and then
ended in a multi-line traceback. Now the process says what it waits for; a signal that sate ends on ends it at
once, with one line and the signal's exit status (the processes Lightning started beside it go too); and a
rendezvous that times out is one line.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import timedelta
from typing import Any

from lightning.fabric.plugins.environments import SLURMEnvironment
from lightning.pytorch.strategies import DDPStrategy
from lightning.pytorch.strategies.launchers.subprocess_script import _SubprocessScriptLauncher

from sate.errors import SIGNAL_ENDINGS, SateError


@contextmanager
def signals_end_the_wait(what: str, stop: Callable[[], None]) -> Iterator[None]:
    """For the block, a signal that has a Python handler (Ctrl-C, and SIGTERM and SIGHUP under the CLI) ends the
    process even while the main thread blocks in C: Python's own handler writes the signal's number to the wakeup
    descriptor at once, from whichever thread the kernel chose, and a thread reading it prints one line, calls
    ``stop`` and exits with 128 + the signal. Outside the main thread (no signals there) the block runs as it is."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    read_fd, write_fd = os.pipe()
    os.set_blocking(write_fd, False)
    previous = signal.set_wakeup_fd(write_fd, warn_on_full_buffer=False)
    done = threading.Event()

    def watch() -> None:
        while data := os.read(read_fd, 1):
            if done.is_set():
                return
            if data[0] in SIGNAL_ENDINGS:
                try:  # stderr a closed terminal (SIGHUP) or pipe: the line raised, and the watcher died with it
                    print(f"sate train: {SIGNAL_ENDINGS[data[0]]} while {what}", file=sys.stderr, flush=True)
                except (OSError, ValueError):  # ValueError: sys.stderr closed in Python
                    pass
                try:
                    stop()
                finally:
                    os._exit(128 + data[0])

    watcher = threading.Thread(target=watch, name="sate-rendezvous-signals", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        done.set()
        signal.set_wakeup_fd(previous)
        os.write(write_fd, b"\0")  # wakes the watcher, which sees it is done
        watcher.join()
        os.close(read_fd)
        os.close(write_fd)


def port_in_use(rank: int, address: str, port: int, given: bool, slurm: bool) -> str:
    """The line for a rendezvous port in use, with advice that works where the port came from: the user's
    MASTER_PORT, Lightning's port of a SLURM job (15000 + the job ID's last 4 digits, when MASTER_PORT is unset:
    unsetting it chose the same port again), or a free port Lightning chose and another program took first."""
    where = f"rank {rank}: port {port} of {address}"
    if given:
        return f"{where} (MASTER_PORT) is in use, by another run or program; " + (
            "export another MASTER_PORT before srun (every task reads it)" if slurm else
            "give another MASTER_PORT, the same on every machine of the run, or, when training on one machine, unset "
            "it (a free port is then chosen)")
    if slurm:
        return (f"{where}, which Lightning takes from the SLURM job's ID when MASTER_PORT is unset (15000 + its last "
                "4 digits), is in use, by another run or program (another job whose ID ends alike?); export "
                "MASTER_PORT=<a free port> before srun")
    return (f"{where}, which Lightning chose free, is in use: another program took it before the run did; start the "
            "run again, or give MASTER_PORT a free port")


class AnnouncedDDP(DDPStrategy):
    """Lightning's DDP, whose rendezvous is announced, stoppable by a signal and one line when it times out.
    ``on_stop`` runs when a signal ends the wait (the experiment's lock is released: the next run finds it free)."""

    def __init__(self, on_stop: Callable[[], None] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._on_stop = on_stop
        self._port_given = "MASTER_PORT" in os.environ  # before Lightning sets it to the port it chose

    def setup_distributed(self) -> None:
        self.set_world_ranks()
        assert self.cluster_environment is not None
        env = self.cluster_environment
        where = f"{env.main_address}:{env.main_port}"
        what = (f"waiting at {where} for the {self.world_size} processes of the run ({self.num_nodes} machine(s) x "
                f"{self.num_processes}) to join, as rank {self.global_rank}")
        seconds = self._timeout.total_seconds() if isinstance(self._timeout, timedelta) else 1800.0  # torch's default
        lasting = f"{seconds / 60:g} minutes" if seconds >= 60 else f"{seconds:g} seconds"
        print(f"{what} (for {lasting} at most; Ctrl-C or kill stops it)", flush=True)
        try:
            with signals_end_the_wait(what, self._stop):
                super().setup_distributed()
        except RuntimeError as err:  # torch.distributed's DistError (a timeout) is a RuntimeError
            text = str(err).lower()
            if "eaddrinuse" in text or "address already in use" in text:  # a MASTER_PORT left in the shell, or
                # another run's: torch's DistNetworkError traceback, the exp's snapshot left behind (26th pass)
                raise SateError(port_in_use(self.global_rank, env.main_address, env.main_port, self._port_given,
                                            isinstance(env, SLURMEnvironment))) from None
            if "timeout" not in text and "timed out" not in text:
                raise
            raise SateError(f"rank {self.global_rank}: the other processes of the run did not join at {where} within "
                            f"{lasting}; start it on every machine (with the same MASTER_ADDR, MASTER_PORT "
                            f"and --num-nodes), or leave the launcher's variables out on one machine") from None

    def _stop(self) -> None:
        """The processes Lightning started beside this one (`--devices` above 1 without a launcher) go with it."""
        if isinstance(self.launcher, _SubprocessScriptLauncher):
            self.launcher.kill(signal.SIGKILL)
        if self._on_stop is not None:
            self._on_stop()
