"""Accumulation: stream events in, closed turns and system notes out.

Pure and in-memory. It knows nothing of sessions, policies, storage or clocks:
the caller says when each line was received, and the turn keeps the time of its
first line and of its flush trigger. Its state is a small header (`snapshot()` /
`Accumulator.restore()`) plus the open turn's content parts, which the caller
saves as they come (`take_unsaved_parts`: new parts appended, a restated item
rewritten in place) so that each request costs the same however long the turn
has grown.
"""
import binascii
import hashlib
from typing import NamedTuple

from app.core.thread_usage import RunningCost
from app.core.thread_usage import ThreadUsage
from app.transcript import event_types as ev
from app.transcript.recent_keys import RecentKeys
from app.transcript.replay import CAUGHT_UP
from app.transcript.replay import RESTARTED
from app.transcript.replay import ReplayChain
from app.transcript.replay import line_hash
from app.transcript.turns import SystemNote
from app.transcript.turns import Turn
from app.transcript.turns import TurnBuffer
from app.transcript.turns import UserPrompt
from app.transcript.turns import turn_key
from app.transcript.usage import COST
from app.transcript.usage import TURN_COST

# How many recent line ids are remembered to spot lines a runner sends again
# under new seqs. Bounded so the stored state stays a few kilobytes.
REPLAY_WINDOW = 256
# The window keeps a fixed-width digest of each id, not the id (a uuid is 36
# characters, some providers' ids are longer): 9 bytes, 12 characters of base64,
# stored as one string: the window is 3 KB of the header every ingest request
# rewrites (11 KB as whole ids). Two ids in one window share a digest with odds of
# about 2**-60.
LINE_KEY_BYTES = 9
LINE_KEY_CHARS = 12
URLSAFE = bytes.maketrans(b"+/", b"-_")
# The key under which a provider's running total for the turn (Codex's legacy
# token_count) is kept among the per-message usages; no message id looks like it.
TURN_TOTAL = "@turn"
# What `_sight` answers for a line whose window key was there already.
SEEN = object()
RESULT_TRIGGER = "result"
COMPLETION_TRIGGER = "completion"
PROMPT_TRIGGER = "prompt"


class UnsavedParts(NamedTuple):
    """What the caller must save of the open turn: `parts` numbered from `start`,
    and `restated` ({part number: part}) to write over parts saved earlier."""

    start: int
    parts: list
    restated: dict


class Accumulator:
    """Folds stream events into turns; a `result` line or `close()` ends a turn.

    A line whose own id was among the last REPLAY_WINDOW ids is a re-sent copy:
    it is skipped, so a replayed fragment never leaks into the open turn.
    """

    def __init__(self, buffer=None, recent_keys="", replay=None, runs=0, thread_usage=None,
                 last_end=None, last_init=None, running_cost=None):
        self.buffer = buffer or TurnBuffer()
        # provider turns begun so far (turn.started lines): the scope of item ids
        self._runs = runs
        # the window, restored from its stored string for free (recent_keys.py)
        self._recent = RecentKeys(recent_keys, LINE_KEY_CHARS, REPLAY_WINDOW)
        self.replay = ReplayChain(replay)
        # the provider's running total for its thread (Codex exec): a turn's own usage
        # is its step from the last one
        self.thread_usage = ThreadUsage(thread_usage)
        # the running cost of each agent session (Claude's total_cost_usd): a turn's own
        # cost is its step from the last one
        self.running_cost = RunningCost(running_cost)
        # the line_hash of the id-less result line that closed the last turn, until a
        # turn.started: the same line again, with nothing in between, is a re-sent copy
        self._last_end = last_end
        # the mark of the last agent-session init note (Claude prints its init at every
        # turn of an interactive session, and again when resumed): the same one again
        # writes no second "Session started" note
        self._last_init = last_init
        # Whether the last line fed changed the turn's token usage (not stored: the
        # live events of that line read it, LiveEvents.for_line)
        self.usage_changed = False
        # Reads the open turn's saved parts without taking them (None: the caller has
        # none to read): a prompt echo asks whether they hold visible text.
        self.load_saved_parts = None

    @classmethod
    def restore(cls, snapshot):
        """An accumulator from a `snapshot()` (None: a session with no state yet)."""
        if not snapshot:
            return cls()
        return cls.from_stored(snapshot["turn"], snapshot)

    @classmethod
    def from_stored(cls, turn, stream):
        """An accumulator from its open turn (`TurnBuffer.header()`) and its state across
        turns (`stream_state()`), each read by name; a missing field takes its default."""
        return cls(TurnBuffer.from_header(turn), _recent_keys(stream.get("recent_ids", "")),
                   stream.get("replay"), stream.get("runs", 0), stream.get("thread_usage"),
                   stream.get("last_end"), stream.get("last_init"), stream.get("running_cost"))

    def snapshot(self):
        """The state to store, without the parts (take and save those first)."""
        return {"turn": self.turn_header(), **self.stream_state()}

    def turn_header(self):
        """The open turn to store, without its parts (take and save those first)."""
        if self.buffer.parts or self.buffer.restated:
            raise RuntimeError("take_unsaved_parts() before snapshot()")
        return self.buffer.header()

    def stream_state(self):
        """What the accumulator keeps across turns: the replay window, the replay chain,
        how many provider turns began (the scope of item ids) and, for a provider that
        reports a running total of its thread or a running cost, the last one (absent
        otherwise)."""
        stored = {"recent_ids": self._recent.stored(), "replay": self.replay.snapshot(),
                  "runs": self._runs}
        thread_usage = self.thread_usage.stored()
        if thread_usage is not None:
            stored["thread_usage"] = thread_usage
        running_cost = self.running_cost.stored()
        if running_cost is not None:
            stored["running_cost"] = running_cost
        if self._last_end is not None:
            stored["last_end"] = self._last_end
        if self._last_init is not None:
            stored["last_init"] = self._last_init
        return stored

    def take_unsaved_parts(self):
        """The `UnsavedParts` the caller must save for the open turn."""
        buf = self.buffer
        unsaved = UnsavedParts(buf.saved_parts, buf.parts, buf.restated)
        buf.saved_parts += len(buf.parts)
        buf.parts, buf.restated = [], {}
        return unsaved

    def take_dropped_parts(self):
        """The part number from which saved parts must be deleted (an undone copy), or None."""
        dropped, self.buffer.drop_from = self.buffer.drop_from, None
        return dropped

    def is_repeat(self, event, line=None):
        """True when `feed` would skip this event as a re-sent copy of a recent line
        (or of a state of an item the open turn has finished)."""
        if event.item_id and event.item_id in self.buffer.done_items:
            return True
        key = self._window_key(event, _line_digest(event, line) if event.item_id else None)
        return key is not None and key in self._recent

    def feed(self, event, event_index, received_at=None, line=None):
        """Take one event, read from `line` and received at `received_at` (ISO text);
        return what it completed (a Turn, a SystemNote, or nothing).

        A line without an id of its own is named by its place in the stream
        (replay.py) when `line` is given, else by its buffer index.
        """
        digest = self._sight(event, line)
        if digest is SEEN:
            return []  # a re-sent line (or state of an item: a runner retrying its last lines)
        if event.item_id and event.item_id in self.buffer.done_items:
            return []  # a re-sent state of an item this turn has finished
        return self._take(event, event_index, received_at, digest)

    def feed_unless_repeat(self, event, event_index, received_at=None, line=None):
        """`feed`, or None when `is_repeat`: what the two say in a row, with the
        line's window key computed and looked up once."""
        if event.item_id and event.item_id in self.buffer.done_items:
            return None
        digest = self._sight(event, line)
        if digest is SEEN:
            return None
        return self._take(event, event_index, received_at, digest)

    def _sight(self, event, line):
        """The line's `_line_digest`, its window key now in the window; SEEN when the
        window held that key already (a re-sent line)."""
        digest = _line_digest(event, line)
        key = self._window_key(event, digest)
        if key is not None:
            if key in self._recent:
                if event.info.get("thread_id"):  # a resumed run names its thread again
                    self.thread_usage.name_thread(event.info["thread_id"])
                return SEEN
            self._recent.add(key)
        return digest

    def _take(self, event, event_index, received_at, digest):
        """`feed` for an event that is no re-sent copy (`digest`: its `_line_digest`)."""
        buf = self.buffer
        self.usage_changed = False
        identity, replay_identity = self._names(event, event_index, digest)
        if identity is None:
            return []  # the last line of a copy of the open turn, now undone
        if event.kind == ev.SYSTEM:
            return [] if self._repeats_init(event) else [self._note(event, identity, replay_identity)]
        if event.kind == ev.TURN_STARTED:
            self._runs += 1
            self._last_end = None
            buf.begin_item_scope()
            buf.mark_start(received_at)
            return []
        if event.kind == ev.RESULT:
            return self._result(event, identity, event_index, received_at, digest,
                                replay_identity)
        if event.kind == ev.IGNORED:
            self._follow_message_stream(event.info)
            return []
        if event.kind == ev.USER_PROMPT:
            return self._prompt(event, event_index, received_at)
        if event.kind not in (ev.ASSISTANT, ev.TOOL_RESULTS):
            return []
        buf.add_identity(identity, event_index, received_at, replay_identity)
        if event.message_id and event.message_id not in buf.message_ids:
            buf.message_ids.append(event.message_id)
        if event.message_id and event.info.get("usage"):
            self._keep_usage(event.message_id, event.info["usage"])
        if event.info.get("turn_usage"):  # a running total for the turn: the latest stands
            buf.usage[TURN_TOTAL] = dict(event.info["turn_usage"])
            self.usage_changed = True
        if event.item_id:
            buf.restate_item(event.item_id, event.blocks, event.item_done)
        else:
            buf.parts.extend(event.blocks)
        return []

    def _prompt(self, event, event_index, received_at):
        """A prompt the agent took: the open turn, when it holds visible text, is flushed
        first, so the prompt's row follows what the agent said before it. A turn of
        blocks only (a tool call whose run the prompt was injected into) stays open: its
        blocks go on into the row of the text that follows."""
        uuid = event.info.get("uuid") or event.identity
        prompt = UserPrompt(f"user:{uuid}", event.text, uuid, event_index, received_at)
        if not self.buffer.holds_text(self.load_saved_parts):
            return [prompt]
        return [self._close(PROMPT_TRIGGER, {}, received_at), prompt]

    def _result(self, event, identity, event_index, received_at, digest, replay_identity):
        """A result line closes the turn; the last one sent again alone (an id-less line,
        nothing read since it), a runner retrying its last request under a new seq,
        closes nothing."""
        if digest is not None and digest == self._last_end and self.buffer.is_untouched():
            return []
        self._last_end = digest
        self.buffer.add_identity(identity, event_index, received_at, replay_identity)
        return [self._close(RESULT_TRIGGER, self._turn_result(event.info), received_at)]

    def _repeats_init(self, event):
        """Whether `event` is the init note of the agent session the last one named, with
        the same text (a changed model or tool set is news, and written)."""
        session = event.info.get("agent_session")
        if session is None:
            return False
        mark = hashlib.blake2b(f"{session}\n{event.text}".encode(), digest_size=8).hexdigest()
        if mark == self._last_init:
            return True
        self._last_init = mark
        return False

    def _note(self, event, identity, replay_identity):
        """A system line's note; a thread's first line also starts its running total."""
        if event.info.get("thread_id"):
            self.thread_usage.begin_thread(event.info["thread_id"])
        return SystemNote(f"system:{identity}", event.text, event.info.get("subtype", ""),
                          f"system:{replay_identity}" if replay_identity else None)

    def _turn_result(self, info):
        """The result line's fields, with the turn's own usage where the line reports the
        thread's running total (`thread_usage`, kept beside it as reported), and its own
        cost (TURN_COST) where it reports the agent session's running cost (COST, kept
        as reported). The agent session it names is read here, and not kept."""
        result = {key: value for key, value in info.items() if key != "agent_session"}
        cost = self.running_cost.turn_cost(info.get("agent_session"), info.get(COST))
        if cost is not None:
            result[TURN_COST] = cost
        total = info.get("thread_usage")
        if isinstance(total, dict):
            result["usage"] = self.thread_usage.turn_usage(total)
        return result

    def close(self, completed_at=None):
        """Process completion (at `completed_at`): close the open turn, if it holds anything."""
        if self.buffer.is_empty():
            self.buffer = TurnBuffer()
            return None
        return self._close(COMPLETION_TRIGGER, {}, completed_at)

    def settle_replay(self, replayed):
        """The caller's verdict on a closed turn's `replay_key`: stored already (the
        lines are a re-sent copy) or not (new output)."""
        self.replay.settle(replayed)

    def _window_key(self, event, digest):
        """The replay window's key of the line (`digest`: its `_line_digest`): of its own
        id, else of its item state (None: it has neither). A line with an id has no item key."""
        if event.identity:
            return line_key(event.identity)
        item_key = self._item_key(event, digest)
        return line_key(item_key) if item_key else None

    def _item_key(self, event, digest):
        """The name of one state of an item (a Codex item line): the provider turn it
        belongs to, the item's id and the line's text (its `digest`). Item ids start afresh
        with every turn, and an item's states differ in their text, so the same name twice
        is the same line sent twice, wherever in the window the first copy sits."""
        if not event.item_id or event.identity or digest is None:
            return None
        return f"item:{self._runs}:{event.item_id}:{digest}"

    def _names(self, event, event_index, digest):
        """(the line's id, the id a replay candidate gives it, or None)."""
        if event.identity:
            return event.identity, event.identity if self.replay.running else None
        if digest is None or event.kind == ev.IGNORED:  # an ignored line names nothing
            return f"@{event_index}", None
        chain_id, candidate_id, turn = self.replay.name_hashed(digest)
        buf = self.buffer
        if turn == RESTARTED:
            buf.mark_for_replay()
            buf.replay_digest = None  # the candidate names this turn's lines from here
        elif turn == CAUGHT_UP and buf.undo_copy():
            return None, None  # the copy ended inside the turn it began in: it is undone
        elif turn == CAUGHT_UP and buf.replay_digest is not None:
            # The stream goes on from here under the names the copy retraced.
            buf.digest = buf.replay_digest
        return chain_id, candidate_id

    def _keep_usage(self, message_id, usage):
        """One usage per message id: the fullest report seen (later lines may add tokens)."""
        known = self.buffer.usage.get(message_id)
        if known == usage:
            return  # the usual case: each line of a message repeats its usage
        if known is None or sum(usage.values()) > sum(known.values()):
            self.buffer.usage[message_id] = dict(usage)
            self.usage_changed = True

    def _follow_message_stream(self, info):
        """Partial messages: which message is streaming, and the final usage its
        `message_delta` reports (cumulative, so a re-sent copy changes nothing)."""
        partial = info.get("partial") or {}
        if partial.get("op") == "message" and partial.get("message_id"):
            self.buffer.streaming_message = partial["message_id"]
        message_id = self.buffer.streaming_message
        if info.get("message_usage") and message_id:
            self.buffer.final_usage[message_id] = dict(info["message_usage"])

    def _close(self, trigger, result, completed_at):
        buf = self.buffer
        turn = Turn(
            key=turn_key(buf.digest),
            parts=tuple(buf.parts),
            message_ids=tuple(buf.message_ids),
            trigger=trigger,
            result=dict(result),
            first_event_index=buf.first_event_index,
            last_event_index=buf.last_event_index,
            saved_parts=buf.saved_parts,
            usage=buf.message_usage(),
            started_at=buf.started_at,
            completed_at=completed_at,
            restated=dict(buf.restated),
            replay_key=turn_key(buf.replay_digest) if buf.replay_digest else None,
        )
        self.buffer = TurnBuffer()
        return turn


def line_key(identity):
    """The replay window's fixed-width digest of a line id, in URL-safe base64."""
    digest = hashlib.blake2b(identity.encode("utf-8", "surrogatepass"), digest_size=LINE_KEY_BYTES)
    # base64.urlsafe_b64encode, without the two Python calls it makes per key
    return binascii.b2a_base64(digest.digest(), newline=False).translate(URLSAFE).decode("ascii")


def _recent_keys(stored):
    """The window's keys from a snapshot: one string of keys, or (a header saved before
    the keys were digests) a list of the ids themselves."""
    if isinstance(stored, str):
        return stored
    return "".join(line_key(identity) for identity in stored[-REPLAY_WINDOW:])


def _line_digest(event, line):
    """`line_hash(line)` where the item key or the replay chain reads it (a line with no
    id of its own that is an item state or not ignored), else None. Taken once per line,
    though both read it: a Codex item line can hold tens of kilobytes of output."""
    if line is None or event.identity or not (event.item_id or event.kind != ev.IGNORED):
        return None
    return line_hash(line)


def runner_note(event_index, payload):
    """A line the runner itself wrote on the `system` stream (not agent output)."""
    return SystemNote(f"system:@{event_index}", payload.strip(), "runner")
