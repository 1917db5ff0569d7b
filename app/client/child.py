"""The wrapped command: its stdout and stderr read line by line into one queue."""
import os
import queue
import signal
import subprocess
import threading


class Child:
    """A running command whose lines arrive on `lines` as `record(stream, text)` makes
    them, in the reader thread; None says one stream has ended.

    With `stdin_pipe` its stdin is a pipe held open (`self.process.stdin`, for an
    interactive run to write to); without, it inherits the runner's. `translate` turns
    each stdout line into the lines to record (a driver's `on_line`)."""

    def __init__(self, command, record, env=None, stdin_pipe=False, translate=None):
        # Its own process group: a Ctrl-C at the terminal reaches the runner alone,
        # which forwards it once, instead of the child getting it twice.
        # It inherits no descriptor but its three (close_fds), so none of the runner's.
        stdin = subprocess.PIPE if stdin_pipe else None
        self.process = subprocess.Popen(command, stdin=stdin, stdout=subprocess.PIPE,
                                        stderr=subprocess.PIPE, env=env, process_group=0,
                                        close_fds=True)
        self.record = record
        self.translate = translate
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
                    continue
                for each in self.translate(text):
                    self.lines.put(self.record(stream, each))
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
