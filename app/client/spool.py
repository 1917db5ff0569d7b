"""The runner's durable record of one session: every line it read, and how far the server has it.

One file per session, `<dir>/<session_id>.spool`, of JSON records, one a line:

    {"session": "<id>", "server": "<url>"}         the header, written once
    {"seq": 7, "stream": "stdout", "data": "..."}  a line read from the child
    {"acked": 7}                                   the server has stored every seq up to 7

and, for an interactive run (`turnlog run --interactive`, docs/control.md):

    {"command": 12}                                the runner acted on command 12
    {"prompt": "<uuid>"}                           it wrote the --prompt under that uuid
    {"agent_session": "<id>"}                      the agent's own session id (to resume it)

Each line is written (to the OS) as soon as it is read, so a killed runner loses
none it has read, and fsync'ed before the batch that holds it is posted, so a line
the server has was on disk first, even after a power cut. Acks are flushed but not fsync'ed: a lost ack only
makes the next run post lines again, and the server drops those as duplicates
(same seq). A crash may tear the last record; loading drops it and truncates it
away. A bad record anywhere else is an error, not something to guess around: loading
names the file and the line.

Only one run writes a spool at a time: the file is locked (flock) while a run has it
open, so a second run continuing the same session refuses at start instead of
numbering its lines over the first one's. The lock goes with the process. The folder
is created 0700 and each file 0600: the lines are the agent's output.
"""
import fcntl
import json
import os
import threading
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path

from app.client.ids import is_session_id

STREAMS = ("stdout", "stderr")


class SpoolError(Exception):
    """The spool file cannot be read as a spool."""


class SpoolLocked(SpoolError):
    """Another run has this session's spool open."""


@dataclass
class SpoolState:
    """What a spool file holds: its lines, those not yet acknowledged, the next seq to give."""

    session_id: str
    server: str | None
    next_seq: int = 0
    acked: int = -1
    unacked: list = field(default_factory=list)
    lines: list = field(default_factory=list)
    commands_done: set = field(default_factory=set)
    prompt_sent: bool = False
    agent_session_id: str | None = None


def spool_path(directory, session_id):
    """The spool file of a session; a session id that is not a UUID names none."""
    if not is_session_id(session_id):
        raise SpoolError(f"{session_id!r} is not a session id (a UUID), so it names no spool file")
    return Path(directory) / f"{session_id}.spool"


class Spool:
    def __init__(self, path, handle):
        self.path = path
        self._handle = handle
        self._dirty = False
        self._lock = threading.Lock()  # the child's reader threads append, the pump syncs

    @classmethod
    def create(cls, directory, session_id, server):
        """A new spool for a session just opened."""
        directory = Path(directory)
        path = spool_path(directory, session_id)
        _make_private_directory(directory)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
        try:
            _lock(fd, path)
        except BaseException:
            os.close(fd)
            raise
        spool = cls(path, os.fdopen(fd, "a", encoding="utf-8"))
        spool._write({"session": session_id, "server": server})
        spool.sync()
        _sync_directory(directory)
        return spool

    @classmethod
    def resume(cls, directory, session_id):
        """(the spool of a session a crashed run left, its state), torn tail removed."""
        path = spool_path(directory, session_id)
        missing = SpoolError(f"no spool for session {session_id} in {directory}: a session is"
                             " continued from the spool (--spool) of the run that opened it")
        try:
            fd = os.open(path, os.O_RDWR | os.O_APPEND)
        except FileNotFoundError:
            raise missing from None
        except OSError as err:
            raise SpoolError(f"{path}: cannot open it: {err.strerror}") from None
        try:
            _lock(fd, path)
            if not _same_file(fd, path):  # the run that held it completed and removed it
                raise missing
            state, good_bytes = load(path)
            if state.session_id != session_id:
                raise SpoolError(f"{path}: line 1: the header names session {state.session_id},"
                                 f" not {session_id}")
            os.ftruncate(fd, good_bytes)
            os.fsync(fd)
        except BaseException:
            os.close(fd)
            raise
        return cls(path, os.fdopen(fd, "a", encoding="utf-8")), state

    def append(self, chunk):
        """Record a line read from the child (safe from a crash of the runner at once, from
        one of the machine at the next `sync`)."""
        with self._lock:
            if self._handle.closed:  # the run is ending; nothing will post this line
                return
            self._write({"seq": chunk["seq"], "stream": chunk["stream"], "data": chunk["data"]})
            self._handle.flush()

    def sync(self):
        """Make every record written so far durable."""
        with self._lock:
            if self._dirty and not self._handle.closed:
                self._handle.flush()
                os.fsync(self._handle.fileno())
                self._dirty = False

    def ack(self, seq):
        """The server holds every line up to `seq`."""
        with self._lock:
            self._write({"acked": seq})
            self._handle.flush()

    def record_command(self, command_id):
        """The runner acted on command `command_id`: durable before it is acknowledged."""
        self._durable({"command": command_id})

    def record_prompt(self, uuid):
        """The runner wrote its --prompt to the agent (a resumed run must not write it again)."""
        self._durable({"prompt": uuid})

    def record_agent_session(self, agent_session_id):
        """The agent's own session id, which a resumed run continues (flushed, not fsync'ed:
        the next sync of lines carries it)."""
        with self._lock:
            if not self._handle.closed:
                self._write({"agent_session": agent_session_id})
                self._handle.flush()

    def _durable(self, record):
        with self._lock:
            self._write(record)
            self._handle.flush()
            os.fsync(self._handle.fileno())
            self._dirty = False

    def close(self):
        """Flush and close the file (kept), releasing its lock."""
        locked = self._lock.acquire(timeout=5)  # a signal may have left it taken
        try:
            self._handle.close()
        finally:
            if locked:
                self._lock.release()

    def remove(self):
        """The session is complete: nothing is left to resend."""
        self.close()
        self.path.unlink(missing_ok=True)

    def _write(self, record):
        self._handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._dirty = True


def load(path):
    """(SpoolState, byte length of the good records) of a spool file; SpoolError naming the
    file and the line of the first bad record (but a torn last one)."""
    try:
        data = Path(path).read_bytes()
    except OSError as err:
        raise SpoolError(f"{path}: cannot read it: {err.strerror}") from None
    records, good = [], 0
    for number, line in enumerate(data.split(b"\n"), 1):
        if good + len(line) >= len(data):  # no line end: the torn last record of a crash
            break
        try:
            record = json.loads(line)
        except (ValueError, RecursionError):
            raise SpoolError(f"{path}: line {number}: bad record (not JSON)") from None
        problem = _problem(record, header=number == 1)
        if problem:
            raise SpoolError(f"{path}: line {number}: bad record ({problem})")
        records.append(record)
        good += len(line) + 1
    if not records:
        raise SpoolError(f"{path}: line 1: no spool header")
    return _state(records), good


def _problem(record, header):
    """What is wrong with one decoded record, None when nothing is."""
    if not isinstance(record, dict):
        return "not a JSON object"
    if header:
        if not is_session_id(record.get("session")):
            return "a header needs the session id (a UUID) under \"session\""
        if not isinstance(record.get("server"), (str, type(None))):
            return "the header's \"server\" is not a string"
        return None
    if "acked" in record:
        return None if _seq(record["acked"]) else "\"acked\" is not a seq (a whole number >= 0)"
    if "command" in record:
        return None if _seq(record["command"]) else "\"command\" is not a command id"
    for key in ("prompt", "agent_session"):
        if key in record:
            return None if isinstance(record[key], str) else f"\"{key}\" is not a string"
    if not _seq(record.get("seq")):
        return "neither a line (seq, stream, data) nor an ack: \"seq\" is not a whole number >= 0"
    if record.get("stream") not in STREAMS:
        return "\"stream\" is neither stdout nor stderr"
    if not isinstance(record.get("data"), str):
        return "\"data\" is not a string"
    return None


def _seq(value):
    return type(value) is int and value >= 0


def _state(records):
    state = SpoolState(records[0]["session"], records[0].get("server"))
    lines = []
    for record in records[1:]:
        if "acked" in record:
            state.acked = max(state.acked, record["acked"])
        elif "command" in record:
            state.commands_done.add(record["command"])
        elif "prompt" in record:
            state.prompt_sent = True
        elif "agent_session" in record:
            state.agent_session_id = record["agent_session"]
        else:
            lines.append(record)
            state.next_seq = max(state.next_seq, record["seq"] + 1)
    state.lines = lines
    state.unacked = [line for line in lines if line["seq"] > state.acked]
    return state


def _make_private_directory(directory):
    """Create the folder and its missing parents 0700 (only those this call creates)."""
    missing = []
    while not directory.exists():
        missing.append(directory)
        directory = directory.parent
    for folder in reversed(missing):
        try:
            folder.mkdir(mode=0o700)
        except FileExistsError:
            continue
        os.chmod(folder, 0o700)  # whatever the umask


def _lock(fd, path):
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise SpoolLocked(f"{path} is in use by another `turnlog run` continuing the same session;"
                          " one run at a time may write a session's spool") from None


def _same_file(fd, path):
    try:
        named = os.stat(path)
    except FileNotFoundError:
        return False
    opened = os.fstat(fd)
    return (named.st_dev, named.st_ino) == (opened.st_dev, opened.st_ino)


def _sync_directory(directory):
    """Make a new file's name durable too, not only its contents."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
