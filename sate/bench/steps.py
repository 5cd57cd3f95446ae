"""The `sate` commands a bench part runs in its own process (prep, features, vocab), with an interrupt passed on.

`sate.cli.main` turns Ctrl-C or a `kill` into its exit status (130, 143, 129), as a shell wants; a part that read
that status as a failure ended the bench with "sate prep failed" and status 2. The bench stops as the command
stopped instead: its temporary folder is removed and it exits 130 or 143, as any sate command does.
"""

from __future__ import annotations

import signal

from sate.cli import ENDING_SIGNALS, Terminated
from sate.cli import main as sate_main


def run_sate(argv: list[str]) -> int:
    """Run ``sate ARGV`` here and return its exit status; one it ended by a signal is raised again."""
    status = sate_main(argv)
    if status == 128 + signal.SIGINT:
        raise KeyboardInterrupt
    if status - 128 in ENDING_SIGNALS:
        raise Terminated(status - 128)
    return status
