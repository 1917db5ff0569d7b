"""A turn's own usage out of a provider's running total for its thread (Codex prints
one at each `turn.completed`), and a turn's own cost out of Claude's running cost of its
session (`result.total_cost_usd`). Pure, in the bottom layer: the server's fold
(app/transcript) and the runner's usage reports (app/client/usage.py) step totals alike."""


def _count(value):
    return isinstance(value, int) and not isinstance(value, bool) and 0 <= value < 2**40


class ThreadUsage:
    """A turn's own usage out of a provider's running total for its thread.

    `codex exec --json` reports, on each `turn.completed`, the tokens of the whole
    thread so far: a run resumed with `codex exec resume` goes on from the total the
    earlier runs reached. One turn's usage is the difference from the previous total
    the session saw. A session that begins with a resumed thread has no previous total:
    its first turn takes the whole total, earlier runs included, as the CLI's own total
    does, so the session's sum is the thread's total.

    A total below the previous one (in any count) is no step forward of the thread: a
    line sent again under a new seq (a runner re-sending its stream). It names no new
    tokens, and the previous total stands, so a re-sent copy cannot shift the turns after
    it. A `thread.started` of another thread starts over from nothing.

    State: {"thread": the thread's id (None until one is named), "total": the last total}.
    """

    def __init__(self, state=None):
        self.state = {"thread": None, "total": {}, **(state or {})}

    def stored(self):
        """The state to keep with the open turn, or None while there is none to keep."""
        return dict(self.state) if self.state["total"] or self.state["thread"] else None

    def begin_thread(self, thread_id):
        """A thread's first line: another thread's total means nothing for this one. The
        first thread named takes the total as it stands (a turn stored before totals
        named their thread)."""
        if self.state["thread"] is None:
            self.state = {**self.state, "thread": thread_id}
        elif thread_id != self.state["thread"]:
            self.state = {"thread": thread_id, "total": {}}

    def name_thread(self, thread_id):
        """A thread's first line sent again: it names the thread, if none is named yet,
        but starts nothing over (a copy may be of any earlier line)."""
        if self.state["thread"] is None:
            self.begin_thread(thread_id)

    def turn_usage(self, total):
        """The tokens `total` (the thread's running total, as reported) adds to the
        previous one; {} when it is not a step forward."""
        counts = {key: value for key, value in total.items() if _count(value)}
        last = self.state["total"]
        if any(counts.get(key, 0) < value for key, value in last.items()):
            return {}
        self.state = {**self.state, "total": counts}
        return {key: value - last.get(key, 0) for key, value in counts.items()}


# How many agent sessions' running costs are kept: a turnlog session holds one, or a few
# (a run begun afresh, a resumed one); a bound keeps the stored state small.
COST_SESSIONS = 16


def _cost(value):
    return isinstance(value, (int, float)) and not isinstance(value, bool) and 0 <= value < 1e9


class RunningCost:
    """A turn's own cost out of Claude's running cost of its agent session.

    Claude's `result.total_cost_usd` is the cost of the agent session so far: a second
    prompt over stdin and a resumed run go on from it. One turn's cost is the difference
    from the last cost its agent session (the result's `session_id`) reported. A session
    first seen with a total already (a resumed run) takes it whole, as Claude's own count
    does (the last total of each agent session, summed over the sessions).

    A total below the last one is no step forward: a re-sent copy of an earlier result.
    It costs nothing and the last total stands; the same total again costs nothing too.

    State: {agent session id ("" for a result that names none): its last running cost},
    the COST_SESSIONS most recently stepped, oldest first.
    """

    def __init__(self, state=None):
        self.state = dict(state or {})

    def stored(self):
        """The state to keep with the open turn, or None while there is none to keep."""
        return dict(self.state) if self.state else None

    def turn_cost(self, session, total):
        """The cost `total` (the agent session's running cost, as reported) adds to the
        session's last one; None when `total` is no cost."""
        if not _cost(total):
            return None
        key = session if isinstance(session, str) else ""
        last = self.state.pop(key, 0)
        self.state[key] = max(last, total)
        while len(self.state) > COST_SESSIONS:
            del self.state[next(iter(self.state))]
        return float(max(0.0, total - last))
