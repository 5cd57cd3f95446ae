"""A pre-forked `sate` for the recipe and docs tests: one process imports torch, Lightning and sate once, and forks
a child per command; a `sate` shim first on the PATH hands it the command.

Why: those tests run `sate` as a new process a few hundred times (a recipe's stages, a documented block), and each
start spent 2-3 s importing torch, 5-8 s where `sate train` imported Lightning: most of those tests' time
(BENCHMARKS.md, "Test suite time"). The child runs `sate.cli.main` as the installed `sate` script would, in the
shim's directory, environment and standard streams (passed as descriptors over a Unix socket); the shim forwards
the signals a shell or a test sends it and ends as the child ended (its status, or the same signal). Where it
cannot be the same process start (a closed standard stream, another interpreter or thread setting in the
environment, no server) the shim runs the real `sate` instead. The real entry point is tested by tests/test_cli.py.

    python tests/recipes/zygote.py DIR PID  # serve on DIR/socket once the imports are done, until PID ends
"""

from __future__ import annotations

import array
import atexit
import json
import os
import resource
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

# What a process reads from its environment at start (the interpreter, the OpenMP and BLAS libraries torch loads, the
# libraries imported here): a command whose environment differs in these is not the zygote's to run.
START_VARIABLES = ("PYTHON", "LANG", "LC_", "OMP_", "MKL_", "KMP_", "OPENBLAS_", "GOTO", "TORCH", "PYTORCH", "CUDA",
                   "HF_", "TRANSFORMERS", "TOKENIZERS", "LIGHTNING", "PL_", "NUMEXPR", "MPLBACKEND", "SATE_CACHE")
FORWARDED = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP, signal.SIGQUIT, signal.SIGUSR1, signal.SIGUSR2)
REAL_SATE = str(Path(sys.executable).parent / "sate")


def start_key(env: dict[str, str]) -> list[list[str]]:
    return sorted([k, v] for k, v in env.items() if k.startswith(START_VARIABLES))


# ------------------------------------------------------------------------------------------------ the shim

SHIM = '''#!{python} -I
# `sate` through the zygote of tests/recipes/zygote.py (its docstring says why).
import array, json, os, resource, signal, socket, sys
SOCKET, KEY, REAL, FORWARDED = {socket!r}, {key!r}, {real!r}, {forwarded!r}
START, UMASK, NAMES, LIMITS = {start!r}, {umask!r}, {names!r}, {limits!r}


def real():
    os.execv(REAL, [REAL, *sys.argv[1:]])


try:
    fds = [0, 1, 2]
    for fd in fds:
        os.fstat(fd)
    env = dict(os.environ)
    umask = os.umask(0)
    os.umask(umask)
    limits = [list(resource.getrlimit(getattr(resource, name))) for name in NAMES]
    if sorted([k, v] for k, v in env.items() if k.startswith(START)) != KEY or (umask, limits) != (UMASK, LIMITS):
        real()  # the zygote's children have the test session's umask and limits, an exec'd sate the shell's
    conn = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    conn.connect(SOCKET)
    ignored = [int(s) for s in signal.valid_signals() if signal.getsignal(s) == signal.SIG_IGN]  # as exec keeps them
    request = json.dumps({{"argv": sys.argv[1:], "cwd": os.getcwd(), "env": env, "ignored": ignored,
                          "blocked": [int(s) for s in signal.pthread_sigmask(signal.SIG_BLOCK, [])]}}).encode()
except OSError:
    real()
conn.sendmsg([len(request).to_bytes(8, "big"), request],
             [(socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", fds).tobytes())])
for signum in set(FORWARDED) - set(ignored):
    signal.signal(signum, lambda signum, frame: conn.sendall(b"S" + bytes([signum])))
answer = b""
while not answer.endswith(b"\\n"):
    part = conn.recv(64)
    if not part:
        sys.exit(f"sate (zygote shim): the zygote ended before the command {{sys.argv[1:]}}")
    answer += part
kind, value = answer[:1], int(answer[1:])
if kind == b"K":
    signal.signal(value, signal.SIG_DFL)
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [value])
    os.kill(os.getpid(), value)
os._exit(value)
'''


def write_shim(bin_dir: Path, sock: Path, env: dict[str, str]) -> None:
    """`bin_dir/sate`: the shim, for commands run with `env`'s start variables."""
    bin_dir.mkdir(parents=True, exist_ok=True)
    shim = bin_dir / "sate"
    umask = os.umask(0)
    os.umask(umask)
    limits = {name: list(resource.getrlimit(getattr(resource, name))) for name in dir(resource)
              if name.startswith("RLIMIT_")}
    shim.write_text(SHIM.format(python=sys.executable, socket=str(sock), key=start_key(env), real=REAL_SATE,
                                forwarded=[int(s) for s in FORWARDED], start=START_VARIABLES, umask=umask,
                                names=sorted(limits), limits=[limits[name] for name in sorted(limits)]))
    shim.chmod(0o755)


# ------------------------------------------------------------------------------------------------ the server

def _command(conn: socket.socket) -> None:
    """In the forked manager: read the request, fork the command, forward signals, answer its ending."""
    signal.signal(signal.SIGCHLD, signal.SIG_DFL)  # the server's SIG_IGN would reap the command before its wait
    head, fds, _, _ = conn.recvmsg(8, socket.CMSG_SPACE(3 * array.array("i").itemsize))
    descriptors = array.array("i")
    for _, _, data in fds:
        descriptors.frombytes(data[: len(data) - len(data) % descriptors.itemsize])
    size, body = int.from_bytes(head, "big"), b""
    while len(body) < size:
        body += conn.recv(size - len(body))
    request = json.loads(body)
    pid = os.fork()
    if pid == 0:
        conn.close()
        _run(request, list(descriptors))
    for fd in descriptors:
        os.close(fd)
    watch = os.pidfd_open(pid)
    while True:
        ready, _, _ = select.select([conn, watch], [], [])
        if watch in ready:
            break
        message = conn.recv(2)
        if not message:  # the shim was killed: so is its command, as a process killed would be
            os.kill(pid, signal.SIGKILL)
            break
        os.kill(pid, message[1])
    _, status = os.waitpid(pid, 0)
    answer = f"K{os.WTERMSIG(status)}" if os.WIFSIGNALED(status) else f"E{os.waitstatus_to_exitcode(status)}"
    try:
        conn.sendall(answer.encode() + b"\n")
    except OSError:
        pass
    os._exit(0)


def _run(request: dict, descriptors: list[int]) -> None:
    """In the command's process: what the `sate` script does, in the shim's directory, environment and streams."""
    for target, fd in enumerate(descriptors):
        os.dup2(fd, target)
    for fd in descriptors:
        if fd > 2:
            os.close(fd)
    # The dispositions an exec'd `sate` starts with: the signals the shell ignored stay ignored (a background job's
    # SIGINT, nohup's SIGHUP), Python's own settings for the rest; and the shell's mask.
    for signum in signal.valid_signals() - {signal.SIGKILL, signal.SIGSTOP, signal.SIGPIPE, signal.SIGXFSZ}:
        signal.signal(signum, signal.SIG_IGN if signum in request["ignored"] else signal.SIG_DFL)
    if signal.SIGINT not in request["ignored"]:
        signal.signal(signal.SIGINT, signal.default_int_handler)
    signal.pthread_sigmask(signal.SIG_SETMASK, request["blocked"])
    os.environ.clear()
    os.environ.update(request["env"])
    import numpy  # imported already; a process of its own draws its own global seed

    numpy.random.seed()
    status = 1
    try:
        os.chdir(request["cwd"])
        sys.argv = [REAL_SATE, *request["argv"]]
        from sate.cli import main

        status = main()
    except SystemExit as stop:
        status = stop.code
    except KeyboardInterrupt:
        sys.excepthook(*sys.exc_info())
        _flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    except BaseException:  # noqa: BLE001 - as the interpreter ends on an uncaught exception
        sys.excepthook(*sys.exc_info())
        status = 1
    if status is None:
        status = 0
    elif not isinstance(status, int):
        print(status, file=sys.stderr)
        status = 1
    threading._shutdown()  # type: ignore[attr-defined]  # the interpreter's end: non-daemon threads, atexit
    atexit._run_exitfuncs()
    if not _flush():
        status = 120
    os._exit(status & 0xFF)


def _flush() -> bool:
    ok = True
    for stream in (sys.stdout, sys.stderr):
        try:
            if stream is not None:
                stream.flush()
        except Exception:  # noqa: BLE001 - the interpreter says so and ends 120
            ok = False
    return ok


def serve(directory: Path, parent: int) -> None:
    """Import what the commands import, then fork a manager per connection on directory/socket; end with `parent`
    (the test session), however it ends."""
    sys.path[0] = str(Path(sys.executable).parent)  # as the `sate` script's
    from sate.errors import end_with_parent

    end_with_parent(parent)
    import lightning  # noqa: F401
    import torch  # noqa: F401

    import sate.cli  # noqa: F401
    import sate.train.datamodule  # noqa: F401

    assert threading.active_count() == 1, threading.enumerate()  # a thread of Python's would not be forked
    sys.stdout.flush()  # nothing buffered here may reach a command's output
    sys.stderr.flush()
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the managers are reaped as they end
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(directory / "socket.new"))
    listener.listen(64)
    os.rename(directory / "socket.new", directory / "socket")
    while True:
        conn, _ = listener.accept()
        if os.fork() == 0:
            listener.close()
            try:
                _command(conn)
            finally:
                os._exit(1)
        conn.close()


class Zygote:
    """A running server for commands of `env`'s start variables, and the PATH that puts its shim first. Its folder
    is a short one of its own: a socket's path is limited to 107 bytes, which a deep --basetemp passes."""

    def __init__(self, env: dict[str, str]) -> None:
        self.directory = directory = Path(tempfile.mkdtemp(prefix="sate-zygote-"))
        with open(directory / "server.log", "wb") as log:
            self.process = subprocess.Popen([sys.executable, __file__, str(directory), str(os.getpid())],
                                            stdin=subprocess.DEVNULL, stdout=log, stderr=log, env=env,
                                            start_new_session=True)
        write_shim(directory / "bin", directory / "socket", env)
        while not (directory / "socket").exists():
            if self.process.poll() is not None:
                log = (directory / "server.log").read_text()
                shutil.rmtree(directory)
                raise RuntimeError(f"the sate zygote did not start:\n{log}")
            time.sleep(0.05)

    def path(self, path: str) -> str:
        return f"{self.directory / 'bin'}:{path}"

    def stop(self) -> None:
        os.killpg(self.process.pid, signal.SIGKILL)
        self.process.wait()
        shutil.rmtree(self.directory)


if __name__ == "__main__":
    serve(Path(sys.argv[1]), int(sys.argv[2]))
