"""One exception type for every user-facing error, and how values are shown in its messages.

The CLI prints its message on one line and exits with status 2, so bad input never ends
in a traceback from deep inside torch. Messages name the file, line or key at fault, and show
a value at most `shown`'s few dozen characters long; `one_line` escapes what a file name could
bring into one (a newline, a terminal's escape sequence).
"""

import argparse
import ctypes
import multiprocessing
import os
import re
import reprlib
import resource
import shlex
import signal
import sys
import unicodedata
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from types import FrameType
from typing import Any

# What a command says when a signal ends it: the CLI's last line, and the line of a run stopped while it waited in
# C (sate.train.rendezvous), which must read the same.
SIGNAL_ENDINGS = {signal.SIGINT: "interrupted", signal.SIGTERM: "terminated",
                  signal.SIGHUP: "hung up (the terminal closed)",
                  signal.SIGXCPU: "stopped: its CPU time limit ran out (ulimit -t, or a batch scheduler's)"}


@contextmanager
def handlers_swapped(signums: Iterable[int], handler: Callable[[int, FrameType | None], object]) -> Iterator[None]:
    """For the block, ``handler`` for each of ``signums`` but those ignored (`nohup sate ...` asked to go on after a
    hang-up) or handled outside Python (which `signal.signal` could not put back); the handlers before are put back
    after. Outside the main thread, where no Python handler runs, nothing changes."""
    previous: dict[int, object] = {}
    try:
        for signum in signums:
            if signal.getsignal(signum) not in (signal.SIG_IGN, None):
                previous[signum] = signal.signal(signum, handler)
    except ValueError:  # not the main thread
        pass
    try:
        yield
    finally:
        for signum, before in previous.items():
            signal.signal(signum, before)  # type: ignore[arg-type]


@contextmanager
def handlers_kept(signums: Iterable[int]) -> Iterator[None]:
    """For the block, whatever a library does to ``signums`` is undone after: each handler is put back as it was.
    Lightning ignores Ctrl-C once an interrupt (a Ctrl-C, a `kill` as `Terminated`) reaches its fit, and puts it
    back only where the interrupt came after it set its own handlers: one while it set up (the data, a resume's
    checkpoint, the rendezvous) left SIGINT ignored for good, in a Python caller's process and in every process it
    started after, which exec passes it on to (twenty-ninth hostile pass). Outside the main thread, as in
    `handlers_swapped`, nothing changes; a handler set outside Python (None) is left to its owner."""
    before: dict[int, object] = {}
    for signum in signums:
        handler = signal.getsignal(signum)
        if handler is not None:
            before[signum] = handler
    try:
        yield
    finally:
        for signum, handler in before.items():
            if signal.getsignal(signum) != handler:
                with suppress(ValueError):  # not the main thread
                    signal.signal(signum, handler)  # type: ignore[arg-type]


def ignored_kept(register: Callable[[], object], signums: Iterable[int]) -> Callable[[], None]:
    """``register`` (a library's setting of its signal handlers), after which each of ``signums`` that was ignored
    before is ignored again. Lightning sets its own SIGTERM handler for a fit, calling the handler it found after
    its own: one it found ignored (`trap '' TERM` in a wrapper, which sate keeps ignored) it called as
    `signal.getsignal(SIG_IGN)`, i.e. SIGHUP's handler, so a `kill` during the fit ended `sate train` as
    "terminated" (thirty-first hostile pass); its teardown puts back what it found."""
    ignored = [s for s in signums if signal.getsignal(s) == signal.SIG_IGN]

    def registered() -> None:
        register()
        for signum in ignored:
            with suppress(ValueError):  # not the main thread, where the library set nothing either
                signal.signal(signum, signal.SIG_IGN)

    return registered


def end_with_parent(parent: int) -> None:
    """In a worker process: be sent SIGTERM when the process that started it ends (Linux's PR_SET_PDEATHSIG), and end
    now if it already has. A command killed with SIGKILL (or by the out-of-memory killer) left its workers running:
    each finished its task, then printed a BrokenPipeError traceback on the terminal, sending a result to no one.
    A SIGTERM ignored where the command was started (`trap '' TERM` in a wrapper) is inherited and would make the
    worker deaf to that signal: it is set back to its default here."""
    with suppress(ValueError):  # signal.signal outside the main thread: nothing inherited to undo there
        if signal.getsignal(signal.SIGTERM) == signal.SIG_IGN:
            signal.signal(signal.SIGTERM, signal.SIG_DFL)
    sent_at_parents_end(parent, signal.SIGTERM)


def sent_at_parents_end(parent: int, signum: int) -> None:
    """Be sent ``signum`` when the process ``parent``, which started this one, ends (Linux's PR_SET_PDEATHSIG); sent
    now if it has ended already (this process's parent is another then)."""
    if sys.platform.startswith("linux"):
        with suppress(OSError, AttributeError):
            ctypes.CDLL(None, use_errno=True).prctl(1, signum)  # 1: PR_SET_PDEATHSIG
    if os.getppid() != parent:
        os.kill(os.getpid(), signum)


def worker_signals(parent: int, ending: Any, end: Callable[[int, FrameType | None], Any] | None = None) -> None:
    """In a worker of a pool of the command: Ctrl-C left to the command (it reaches every process of the terminal),
    SIGTERM and SIGHUP end the worker by ``end`` (None: as their default does), and it ends with the command
    (`end_with_parent`). A signal ignored where the command was started (`nohup`, `trap '' HUP` or `TERM`) stays
    ignored, as in the command itself: a hangup to the process group under `nohup sate synth ... &` ended every voicing
    worker, and so the run (review31o). sate's own SIGTERMs still end a worker that ignores the user's: the pool's
    terminate() (``ending``, a shared byte that `asks_workers_to_end` sets first) and the kernel's where the command
    is gone (PR_SET_PDEATHSIG)."""
    end_by = end or _end_by_default
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for signum in (signal.SIGTERM, signal.SIGHUP):
        if signal.getsignal(signum) != signal.SIG_IGN:
            signal.signal(signum, end_by)
    if signal.getsignal(signal.SIGTERM) == signal.SIG_IGN:

        def asked(signum: int, frame: FrameType | None) -> None:
            if ending.value or os.getppid() != parent:
                end_by(signum, frame)

        signal.signal(signal.SIGTERM, asked)
        if ending.value:  # the pool's SIGTERM came while this worker was starting, still ignoring it
            end_by(signal.SIGTERM, None)
    end_with_parent(parent)


def _end_by_default(signum: int, frame: FrameType | None) -> None:
    signal.signal(signum, signal.SIG_DFL)
    os.kill(os.getpid(), signum)


def asks_workers_to_end(pool: Any, ending: Any) -> Any:
    """``pool`` whose terminate() (the ``with``'s end) sets ``ending`` before it sends its workers SIGTERM, so that a
    worker that keeps an ignored SIGTERM ignored (`worker_signals`) ends by it all the same."""
    terminate = pool.terminate

    def asked() -> None:
        ending.value = 1
        # a worker killed as it sent a result (SIGKILL, then Ctrl-C before `pool_results` saw it) holds the result
        # queue's lock, on which terminate() waited for ever: 1 in 3 under `trap '' TERM` (the engineer's check)
        _free_queue(pool, result_queue_only=True)
        terminate()

    pool.terminate = asked
    return pool


class _Repr(reprlib.Repr):
    """reprlib's short repr, with a whole number too long for Python to write in decimal (beyond 4,300 digits, a
    4,000-digit ``0x...`` in YAML) shown by its size: ``repr`` itself raises ValueError on it. A long one that it
    writes is cut after its first digits and its count of digits said: reprlib's cut, "100000000000000000...
    0000000000000000000", dropped digits from the middle and so hid its size: `max_segment=10**50` and 10**40 read
    alike (33rd hostile pass)."""

    def repr_int(self, x: int, level: int) -> str:
        try:
            text = repr(x)
        except ValueError:
            return f"<a whole number of {x.bit_length():,} bits>"
        digits = len(text) - (x < 0)
        return text if len(text) <= self.maxlong else f"{text[:self.maxlong // 2]}... ({digits:,} digits)"


_REPR = _Repr()
_REPR.maxlevel, _REPR.maxstring, _REPR.maxother = 2, 60, 60
_REPR.maxlist = _REPR.maxtuple = _REPR.maxdict = _REPR.maxset = 4


class SateError(Exception):
    """An error caused by the user's input (files, configs, checkpoints), not by a bug."""


def pool_results(pool: Any, func: Callable[[Any], Any], items: Iterable[Any], what: str, advice: str,
                 ordered: bool = False) -> Iterator[Any]:
    """``pool.imap_unordered(func, items)`` (``ordered``: ``imap``) of a `multiprocessing` pool, ended by a
    `SateError` naming ``what`` and saying ``advice`` where one of its workers ends in the middle of the work (the
    out-of-memory killer's SIGKILL, a `kill -9` of it). The pool started another worker and waited for ever for the
    lost task's result, or for the queue's lock the dead one held, deaf to Ctrl-C and `kill`: `sate features` hung so
    after every shard was done (thirty-first hostile pass). Where this Python's pool keeps its workers otherwise
    (private names), the results come as before."""
    results = (pool.imap if ordered else pool.imap_unordered)(func, items)
    seen: dict[int, Any] = {}
    while True:
        seen.update((p.pid, p) for p in getattr(pool, "_pool", []))  # the workers, those started again too
        try:
            result = results.next(timeout=0.5)
        except StopIteration:
            return
        except multiprocessing.TimeoutError:
            # a worker that ended with status 0 ended as asked (the pool's maxtasksperchild) and was replaced
            dead = next((p for p in seen.values() if p.exitcode not in (None, 0)), None)
            if dead is None:
                continue
            _free_queue(pool)
            how = _how_ended(dead.exitcode)
            oom = " (the out-of-memory killer sends it)" if dead.exitcode == -signal.SIGKILL else ""
            raise SateError(f"{what} (pid {dead.pid}) {how}{oom} in the middle of the work; {advice}") from None
        yield result


def _how_ended(status: int) -> str:
    """How a worker with exit status ``status`` ended: killed by a signal (status -N), or ended by one it handled
    as SystemExit(128 + N), as a voicing worker does; it said "ended with status 129" of a hangup (review31o)."""
    for signum in (-status, status - 128):
        with suppress(ValueError):  # no signal of that number (a real-time one has no name either)
            return f"was {'killed' if status < 0 else 'ended'} by {signal.Signals(signum).name}"
    return f"ended with status {status}"


# torch's words for a data-loading worker that ended in the middle of an epoch (its C++ SIGCHLD check, and the
# loader's own wait for a batch)
_LOADER_WORKER_LOST = re.compile(r"DataLoader worker \(pid(?:\(s\))? ([0-9][0-9, ]*)\) (?:is killed by signal: "
                                 r"([^.]*)\.|exited unexpectedly(?: with exit code (-?[0-9]+))?)")
_KILLED_WHY = {"Killed": " (the out-of-memory killer sends it)"}
SHARED_MEMORY = "/dev/shm"  # where torch's data-loading workers hand their batches over


def _shared_memory_advice() -> str:
    """What to do when a data-loading worker died of a bus error: the shared memory its batches go through ran out.
    "Run the command again" failed the same way each time (a container's /dev/shm is 64 MB by default, below a
    few batches of the MuST-C configs' four workers); its size here is named, where it can be read."""
    try:
        vfs = os.statvfs(SHARED_MEMORY)
        size = vfs.f_blocks * vfs.f_frsize
    except OSError:  # no /dev/shm (macOS, some sandboxes): no size to name
        size = 0
    # its whole size, not what is free (the batches that filled it are gone by now); a tmpfs of size 0 has no limit
    room = "" if size <= 0 else (f" ({size / 2**20:,.0f} MiB in all)" if size >= 2**20
                                 else f" ({size / 2**10:,.0f} KiB in all)")
    return (f"the workers hand their batches over in shared memory, {SHARED_MEMORY}{room}, which ran out: train "
            f"with --set data.num_workers=0, which uses none, or give {SHARED_MEMORY} more room (a container's "
            "--shm-size)")


def _chain(err: BaseException, limit: int = 8) -> Iterator[BaseException]:
    """``err`` and the errors it was raised from or while handling, nearest first."""
    seen: BaseException | None = err
    for _ in range(limit):
        if seen is None:
            return
        yield seen
        seen = seen.__cause__ or seen.__context__


def loader_worker_lost(err: BaseException, advice: str) -> str | None:
    """The one line for torch's RuntimeError of a data-loading worker that was killed (the out-of-memory killer's
    SIGKILL, a `kill -9`, a bus error when shared memory runs out) or ended, saying ``advice``: it was a traceback of
    some 60 lines from wherever the training process was, through Lightning (thirty-first hostile pass); None for any
    other error. torch's "exited unexpectedly" is raised from its own "is killed by signal", which says what ended
    the worker: read from there, a worker killed by a bus error (/dev/shm full) was said to have "ended", and the
    advice to run the command again failed the same way (thirty-third hostile pass)."""
    if not isinstance(err, RuntimeError) or _LOADER_WORKER_LOST.search(str(err)) is None:
        return None
    found = [m for e in _chain(err) if isinstance(e, RuntimeError) and (m := _LOADER_WORKER_LOST.search(str(e)))]
    pids, killed, status = next((m for m in found if m.group(2) or m.group(3)), found[0]).groups()
    how = (f"was killed by signal: {killed}{_KILLED_WHY.get(killed, '')}" if killed is not None
           else "ended" + (f" with status {status}" if status is not None else ""))
    return (f"a data-loading worker (pid {pids}) {how} in the middle of an epoch; "
            f"{_shared_memory_advice() if killed == 'Bus error' else advice}")


def _free_queue(pool: Any, result_queue_only: bool = False) -> None:
    """The locks of ``pool``'s queues released where a dead worker holds them, which the pool's terminate() takes and
    waited on for ever: the task queue's read lock (an idle worker holds it while it waits for its next task: only
    where a worker is known dead) and the result queue's write lock (a worker killed as it sent a result; a live one
    holds it for a moment alone)."""
    locks = (("_inqueue", "_rlock", 0.0), ("_outqueue", "_wlock", 1.0))
    for queue, name, wait in locks[1:] if result_queue_only else locks:
        lock = getattr(getattr(pool, queue, None), name, None)
        if lock is None:
            continue
        if lock.acquire(timeout=wait) if wait else lock.acquire(False):
            lock.release()
            continue
        with suppress(ValueError):
            lock.release()


def out_of_memory(err: BaseException) -> bool:
    """Did an allocation fail: Python's MemoryError, torch's OutOfMemoryError (a GPU) or the CPU allocator's
    RuntimeError ("can't allocate memory")? Told by name and message, so that asking never imports torch."""
    return isinstance(err, MemoryError) or type(err).__name__ == "OutOfMemoryError" or \
        (isinstance(err, RuntimeError) and "can't allocate memory" in str(err)) or libraries_unmapped(err)


def libraries_unmapped(err: BaseException) -> bool:
    """Did a library fail to load for want of address space (``ulimit -v`` below what torch's shared libraries map:
    "libcublasLt.so.12: failed to map segment from shared object")?"""
    return isinstance(err, ImportError) and "failed to map segment" in str(err)


def address_space_limit() -> int | None:
    """The process's address space limit (``ulimit -v``) in bytes, or None where there is none. `resource` is
    imported with this module: imported once memory had run out, its own library could not be mapped."""
    soft = resource.getrlimit(resource.RLIMIT_AS)[0]
    return None if soft == resource.RLIM_INFINITY else soft


def shown(value: object, limit: int = 80) -> str:
    """``repr(value)`` cut to ``limit`` characters, without ever building the whole repr: a value from a YAML alias
    bomb or a megabyte line stays a short part of a one-line message."""
    text = _REPR.repr(value)
    return text if len(text) <= limit else text[:limit - 3] + "..."


def first_few(items: Sequence[object], limit: int = 3) -> str:
    """The first ``limit`` of ``items``, each cut as `shown` cuts (text of up to 60 characters as it is), and how many
    more: a config's 3 MB key, or thousands of them, was a line of megabytes."""
    named = ", ".join(item if isinstance(item, str) and len(item) <= 60 else shown(item) for item in items[:limit])
    return named + (f" and {len(items) - limit:,} more" if len(items) > limit else "")


# Characters printed as Python escapes: control characters (a newline, a terminal's ESC), line and paragraph
# separators, and the lone surrogates that stand for the bytes of a file name that is not UTF-8.
_ESCAPED = frozenset(("Cc", "Cs", "Zl", "Zp"))
# And the bidirectional embeddings, overrides and isolates (U+202A-U+202E, U+2066-U+2069), which reorder the rest
# of a line as displayed ("Trojan Source"): a file named "x\u202egnp.wav" shows as "xvaw.png". Only these of their
# class (Cf): its other members carry text, such as the zero-width non-joiner Persian is written with.
BIDI_CONTROLS = frozenset(map(chr, [*range(0x202A, 0x202F), *range(0x2066, 0x206A)]))


def one_line(text: str) -> str:
    """``text`` with those characters escaped (``\\n``, ``\\x1b``, ``\\u2028``, ``\\udcff``, ``\\u202e``): a message
    or a field naming a hostile file stays one line, shows its characters in the order they are stored, leaves the
    terminal alone and can be encoded as UTF-8."""
    return "".join(_escaped(c) if c in BIDI_CONTROLS or unicodedata.category(c) in _ESCAPED else c for c in text)


def shell_word(text: str) -> str:
    """``text`` (a path) as one shell word in a command a message advises, copied and run as it stands: quoted where
    the shell would split or expand it (`--config my conf.yaml` named two files), and ``./`` before a relative name
    starting with ``-``, which the command would take for an option. Control characters are escaped by `one_line`
    (the line stays one line; such a name is not retyped)."""
    word = f"./{text}" if text.startswith("-") else text
    return one_line(shlex.quote(word))


def table_cell(text: str) -> str:
    """``text`` (a name) as one cell of a Markdown table: `one_line`, and each ``|`` escaped, which ends a cell."""
    return one_line(text).replace("|", "\\|")


PLOT_TEXT_LIMIT = 80  # characters of a figure's label; a longer one keeps its two ends


def plot_text(text: str) -> str:
    """``text`` (a name, a token) as a figure's title, legend or tick label: `one_line`, and each ``$`` escaped,
    which matplotlib reads as the bounds of a formula. A system folder named ``a$^$b`` was a ValueError from its
    formula parser, a name that is not UTF-8 a TypeError from its font code (nineteenth hostile pass). A label past
    `PLOT_TEXT_LIMIT` characters keeps its ends around "…": a results.json naming a model of 100,000 characters left
    `latency-plot`'s axes no room, and matplotlib warned that its layout collapsed (twenty-seventh pass, wide run)."""
    line = one_line(text)
    if len(line) > PLOT_TEXT_LIMIT:
        half = (PLOT_TEXT_LIMIT - 1) // 2
        line = f"{line[:half]}…{line[-half:]}"
    return line.replace("$", r"\$")


def _escaped(char: str) -> str:
    """``char`` as Python writes it in a string literal; ``repr`` leaves printable-class characters such as the
    bidirectional controls as they are."""
    text = repr(char)[1:-1]
    return text if text != char else f"\\u{ord(char):04x}"


class DefaultsShown(argparse.HelpFormatter):
    """An option's default where it has one, for every command (`sate analyze`'s subcommands too, whose descriptions
    are wrapped): argparse's ArgumentDefaultsHelpFormatter reads "(default: None)" where there is none."""

    def _get_help_string(self, action: argparse.Action) -> str:
        text = action.help or ""
        if action.default not in (None, False, [], argparse.SUPPRESS) and "%(default)" not in text:
            text += " (default: %(default)s)"
        return text
