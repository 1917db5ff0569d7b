"""The driver interface (see app/client/drivers/__init__.py) and the generic driver."""
import signal
import threading

# What `send` returns for an input it holds back, to be written later.
QUEUED = "queued"


class NotSupported(Exception):
    """The driver offers no such control."""


class DriveFailed(Exception):
    """The agent could not take what the runner was asked to do (the reason says why)."""


class Driver:
    """A driver that offers `stop` only; subclasses add what their agent can do."""

    name = "none"
    controls = ("stop",)

    def __init__(self):
        self.agent_session_id = None
        self.stdin = None
        self.emit = None
        # A driver that holds an input back (the agent takes one prompt at a time) says
        # when it wrote it, `on_sent(uuid)`, or dropped it unsent, `on_dropped(uuid,
        # reason)`: the runner acknowledges such an input then, not when it was queued.
        self.on_sent = None
        self.on_dropped = None
        self._write_lock = threading.Lock()

    def command(self, argv, resume_id=None):
        """(the argv to run, the flags added to it)."""
        return list(argv), []

    def bind(self, stdin, emit=None):
        """The agent's stdin, and `emit(text)`, which posts a stdout line of the driver's own."""
        self.stdin = stdin
        self.emit = emit

    def send(self, uuid, content):
        """Write the input to the agent; QUEUED when it is held back (see on_sent)."""
        raise NotSupported("send")

    def answer(self, request_id, behavior, message=None):
        raise NotSupported("permissions")

    def interrupt(self, child):
        raise NotSupported("interrupt")

    def on_line(self, text):
        return [text]

    def write(self, data):
        """Write `data` (bytes, one line) to the agent's stdin at once."""
        with self._write_lock:
            if self.stdin is None or self.stdin.closed:
                raise DriveFailed("the agent's stdin is closed (it is stopping or has exited)")
            try:
                self.stdin.write(data)
                self.stdin.flush()
            except (BrokenPipeError, OSError, ValueError) as err:
                raise DriveFailed(f"the agent's stdin is closed: {err}") from None

    def close_stdin(self):
        """End the agent's input (EOF); safe to call twice."""
        with self._write_lock:
            if self.stdin is not None and not self.stdin.closed:
                try:
                    self.stdin.close()
                except OSError:
                    pass


class GenericDriver(Driver):
    """Any command: interrupt is SIGINT to the child; stop; nothing else."""

    name = "generic"
    controls = ("interrupt", "stop")

    def interrupt(self, child):
        if not child.running():
            raise DriveFailed("the agent has exited")
        child.signal(signal.SIGINT)
