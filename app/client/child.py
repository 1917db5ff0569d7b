"""The wrapped command: found before anything starts, then its stdout and stderr read
line by line into one queue (and passed through to the terminal)."""
import os
import queue
import shutil
import signal
import subprocess
import threading

from app.client.errors import CANNOT_RUN
from app.client.errors import NOT_FOUND
from app.client.errors import RunnerFailed


def check_runnable(command, env):
    """RunnerFailed (exit 127, or 126) unless `command[0]` names a program that can be
    started: a path to an executable file, or a name on the PATH of `env` (the child's)."""
    program = command[0]
    if os.sep in program:
        if not os.path.exists(program):
            raise RunnerFailed(f"cannot start {program!r}: no such file", NOT_FOUND)
        if os.path.isdir(program) or not os.access(program, os.X_OK):
            raise RunnerFailed(f"cannot start {program!r}: not an executable file (chmod +x?)",
                               CANNOT_RUN)
        return
    if shutil.which(program, path=env.get("PATH", os.defpath)) is None:
        raise RunnerFailed(f"cannot start {program!r}: no such command on the PATH (is it"
                           " installed? give its full path)", NOT_FOUND)


def start_failure_code(err):
    """The exit code a command that could not be started gets, as shells give it."""
    return NOT_FOUND if isinstance(err, FileNotFoundError) else CANNOT_RUN


class Tee:
    """The agent's output passed through to the runner's terminal as `tee` does: its
    stdout bytes to `stdout`, its stderr bytes to `stderr`, as it printed them. A
    terminal that goes away (a closed pipe) stops that stream's echo, never the run."""

    def __init__(self, stdout, stderr):
        self.targets = {"stdout": stdout, "stderr": stderr}

    def write(self, stream, raw):
        target = self.targets.get(stream)
        if target is None:
            return
        try:
            target.write(raw)
            target.flush()
        except (OSError, ValueError):  # a closed pipe or file: keep running, unseen
            self.targets[stream] = None


class Child:
    """A running command whose lines arrive on `lines` as `record(stream, text)` makes
    them, in the reader thread; None says one stream has ended.

    With `stdin_pipe` its stdin is a pipe held open (`self.process.stdin`, for an
    interactive run to write to); without, it inherits the runner's. `translate` turns
    each stdout line into the lines to record (a driver's `on_line`). `echo` (a Tee)
    passes each line through to the runner's own terminal, once it is spooled."""

    def __init__(self, command, record, env=None, stdin_pipe=False, translate=None, echo=None):
        # Its own process group: a Ctrl-C at the terminal reaches the runner alone,
        # which forwards it once, instead of the child getting it twice.
        # It inherits no descriptor but its three (close_fds), so none of the runner's.
        stdin = subprocess.PIPE if stdin_pipe else None
        self.process = subprocess.Popen(command, stdin=stdin, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, env=env, process_group=0,
                                        close_fds=True)
        self.record = record
        self.translate = translate
        self.echo = echo
        self.lines = queue.Queue()
        self.open_streams = 2
        self.readers = []
        for stream, pipe in (("stdout", self.process.stdout), ("stderr", self.process.stderr)):
            reader = threading.Thread(target=self._read, args=(stream, pipe), daemon=True,
                                      name=f"turnlog-{stream}")
            reader.start()
            self.readers.append(reader)

    def _read(self, stream, pipe):
        with pipe:
            for raw in iter(pipe.readline, b""):
                line = raw[:-1] if raw.endswith(b"\n") else raw
                text = line.decode("utf-8", "replace")
                if self.translate is None or stream != "stdout":
                    self.lines.put(self.record(stream, text))
                else:
                    for each in self.translate(text):
                        self.lines.put(self.record(stream, each))
                if self.echo is not None:
                    self.echo.write(stream, raw)
        self.lines.put(None)

    def running(self):
        return self.process.poll() is None

    def signal(self, number):
        if self.process.poll() is None:
            try:
                os.kill(self.process.pid, number)
            except ProcessLookupError:
                pass

    def exit_code(self):
        """Wait for the child; its exit code, 128 + N when signal N ended it (as shells say)."""
        code = self.process.wait()
        return 128 - code if code < 0 else code

    def stop(self, grace_seconds=5):
        """End the child: SIGTERM, then SIGKILL after the grace period."""
        self.signal(signal.SIGTERM)
        try:
            self.process.wait(grace_seconds)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()
        for reader in self.readers:  # its last lines spooled (unless a grandchild holds a pipe)
            reader.join(1.0)
