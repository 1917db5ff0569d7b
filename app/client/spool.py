"""The runner's durable record of one session: every line it read, and how far the server has it.

One file per session, `<dir>/<session_id>.spool`, of JSON records, one a line:

    {"session": "<id>", "server": "<url>"}         the header, written once
    {"seq": 7, "stream": "stdout", "data": "..."}  a line read from the child
    {"acked": 7}                                   the server has stored every seq up to 7

Each line is written (to the OS) as soon as it is read, so a killed runner loses
none it has read, and fsync'ed before the batch that holds it is posted, so a line
the server has was on disk first, even after a power cut. Acks are flushed but not fsync'ed: a lost ack only
makes the next run post lines again, and the server drops those as duplicates
(same seq). A crash may tear the last record; loading drops it and truncates it
away. A bad record anywhere else is an error, not something to guess around.
"""
import json
import os
import threading
from dataclasses import dataclass
from dataclasses import field
from pathlib import Path


class SpoolError(Exception):
    """The spool file cannot be read as a spool."""


@dataclass
class SpoolState:
    """What a spool file holds: its lines, those not yet acknowledged, the next seq to give."""

    session_id: str
    server: str | None
    next_seq: int = 0
    acked: int = -1
    unacked: list = field(default_factory=list)
    lines: list = field(default_factory=list)


def spool_path(directory, session_id):
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
        directory.mkdir(parents=True, exist_ok=True)
        path = spool_path(directory, session_id)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_APPEND, 0o600)
        spool = cls(path, os.fdopen(fd, "a", encoding="utf-8"))
        spool._write({"session": session_id, "server": server})
        spool.sync()
        _sync_directory(directory)
        return spool

    @classmethod
    def resume(cls, directory, session_id):
        """(the spool of a session a crashed run left, its state), torn tail removed."""
        path = spool_path(directory, session_id)
        if not path.exists():
            raise SpoolError(f"no spool for session {session_id} in {directory}: a session is"
                             " continued from the spool (--spool) of the run that opened it")
        state, good_bytes = load(path)
        with open(path, "r+b") as raw:
            raw.truncate(good_bytes)
            os.fsync(raw.fileno())
        return cls(path, open(path, "a", encoding="utf-8")), state

    def append(self, chunk):
        """Record a line read from the child (safe from a crash of the runner at once, from
        one of the machine at the next `sync`)."""
        with self._lock:
            self._write({"seq": chunk["seq"], "stream": chunk["stream"], "data": chunk["data"]})
            self._handle.flush()

    def sync(self):
        """Make every record written so far durable."""
        with self._lock:
            if self._dirty:
                self._handle.flush()
                os.fsync(self._handle.fileno())
                self._dirty = False

    def ack(self, seq):
        """The server holds every line up to `seq`."""
        with self._lock:
            self._write({"acked": seq})
            self._handle.flush()

    def close(self):
        self._handle.close()

    def remove(self):
        """The session is complete: nothing is left to resend."""
        self.close()
        self.path.unlink(missing_ok=True)

    def _write(self, record):
        self._handle.write(json.dumps(record, ensure_ascii=False) + "\n")
        self._dirty = True


def load(path):
    """(SpoolState, byte length of the good records) of a spool file."""
    data = Path(path).read_bytes()
    records, good = [], 0
    for line in data.splitlines(keepends=True):
        try:
            if not line.endswith(b"\n"):
                raise ValueError("no line end")
            records.append(json.loads(line))
        except ValueError:
            if good + len(line) < len(data):
                raise SpoolError(f"{path}: bad record at byte {good}") from None
            break  # the torn last record of a crash
        good += len(line)
    if not records or "session" not in records[0]:
        raise SpoolError(f"{path}: no spool header")
    return _state(records), good


def _state(records):
    state = SpoolState(records[0]["session"], records[0].get("server"))
    lines = []
    for record in records[1:]:
        if "acked" in record:
            state.acked = max(state.acked, record["acked"])
        else:
            lines.append(record)
            state.next_seq = max(state.next_seq, record["seq"] + 1)
    state.lines = lines
    state.unacked = [line for line in lines if line["seq"] > state.acked]
    return state


def _sync_directory(directory):
    """Make a new file's name durable too, not only its contents."""
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
