"""Telling a stream re-sent under new seqs from new output, for lines with no id.

A line with an id of its own (Claude's `uuid`, a Gemini line's timestamp and text)
is known again by that id. A line without one that means something to a turn
(every Codex line but `thread.started`, a Gemini line without a timestamp; lines
the parser ignores take no part) is named by its place in the session's stream of
such lines: a hash chain over their text,
`chain = H(chain, H(line))`. Two identical runs are then two different turns
(their lines sit at different places), and the same chain value always means the
same line at the same place.

A runner that re-sends its stream from the start under new seqs makes the chain
go on where it stood, so the re-sent lines would look new. So when a line repeats
the session's first chained line, a second chain, the candidate, starts over from
there: if the lines that follow are the stream again, the candidate retraces the
chain values they had the first time, and the turns they close carry the keys the
first time stored. (So a run that repeats the session's beginning line for line
is taken for a copy of it.) The caller checks a closed turn's `replay_key` against the keys
stored: found, the turn is a copy (no row, no counter) and the candidate goes on
(`settle(True)`); not found, it is new output and the candidate is dropped. Pure.
"""
import hashlib

START = ""
RESTARTED = "restarted"
CAUGHT_UP = "caught_up"


def line_hash(line):
    return hashlib.sha256(line.encode("utf-8", "surrogatepass")).hexdigest()[:32]


def _link(chain, digest):
    return hashlib.sha256(f"{chain}\n{digest}".encode()).hexdigest()[:32]


class ReplayChain:
    """The chain state: {"chain", "candidate" (None when none runs), "origin" (the
    chain where the candidate started), "first" (the hash of the session's first
    chained line), "replaying" (a candidate confirmed)}."""

    def __init__(self, state=None):
        self.state = {"chain": START, "candidate": None, "origin": None, "first": None,
                      "replaying": False, **(state or {})}

    def snapshot(self):
        return dict(self.state)

    def name(self, line):
        """(its chain id, its candidate id or None, RESTARTED / CAUGHT_UP / None) for the
        next chained line: whether a candidate starts over at it, or ends with it.

        A candidate that reaches the chain value it started from has retraced the
        whole stream: the copy is over, and the stream goes on from there as if it had
        not been sent again (so a later copy is known the same way).
        """
        return self.name_hashed(line_hash(line))

    def name_hashed(self, digest):
        """`name` of the line whose `line_hash` is `digest`."""
        state = self.state
        restarted = None
        if state["first"] is None:
            state["first"] = digest
        elif digest == state["first"] and not state["replaying"]:
            state["candidate"], state["origin"], restarted = START, state["chain"], RESTARTED
        state["chain"] = _link(state["chain"], digest)
        if state["candidate"] is None:
            return f"~{state['chain']}", None, restarted
        state["candidate"] = _link(state["candidate"], digest)
        candidate = f"~{state['candidate']}"
        if state["candidate"] == state["origin"]:
            state["chain"] = state["candidate"]
            state["candidate"], state["origin"], state["replaying"] = None, None, False
            return candidate, candidate, CAUGHT_UP
        return f"~{state['chain']}", candidate, restarted

    @property
    def running(self):
        return self.state["candidate"] is not None

    def settle(self, replayed):
        """A turn the candidate named closed: it was a copy (go on) or new output (drop it)."""
        if not self.running:
            return  # the copy is over already (name() saw it catch up)
        if replayed:
            self.state["replaying"] = True
        else:
            self.state.update(candidate=None, origin=None, replaying=False)
