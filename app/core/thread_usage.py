"""A turn's own usage out of a provider's running total for its thread (Codex prints
one at each `turn.completed`). Pure, in the bottom layer: the server's fold (app/transcript)
and the runner's usage reports (app/client/usage.py) step totals alike."""


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
