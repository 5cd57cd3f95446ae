"""The `sate` commands a bench part runs in its own process (prep, features, vocab), with an interrupt passed on.

`sate.cli.main` turns Ctrl-C or a `kill` into its exit status (130, 143, 129), as a shell wants; a part that read
that status as a failure ended the bench with "sate prep failed" and status 2. The bench stops as the command
stopped instead: its temporary folder is removed and it exits 130 or 143, as any sate command does.
"""

from __future__ import annotations

import signal

from sate.cli import ENDING_SIGNALS, Terminated
from sate.cli import main as sate_main
from sate.errors import one_line


def run_sate(argv: list[str]) -> int:
    """Run ``sate ARGV`` here and return its exit status; one it ended by a signal is raised again."""
    status = sate_main(argv)
    if status == 128 + signal.SIGINT:
        raise KeyboardInterrupt
    if status - 128 in ENDING_SIGNALS:
        raise Terminated(status - 128)
    return status


def last_line(stderr: str) -> str:
    """A child process's last line of error output, for a one-line message: it was shown as a Python list,
    "sate vocab failed: ['sate vocab: error: ...']", or as "[]" when the child said nothing."""
    lines = stderr.strip().splitlines()
    return one_line(lines[-1]) if lines else "(it said nothing)"
