"""SQL for `agent_sessions`."""
import json

from sqlalchemy import bindparam
from sqlalchemy import text

from app.core.records import AgentSession
from app.core.records import LockedSession
from app.core.users import user_key
from app.formats import fast_json
from app.storage.repositories.dialect import choose
from app.storage.repositories.dialect import locking
from app.storage.repositories.dialect import on_driver

COLUMNS = (
    "session_id, user_id, session_type, context, status, provider, exit_code, "
    "message_count, conversation_turn_count, visible_message_count, request_count, total_tokens, total_input_tokens, "
    "total_output_tokens, next_event_index, created_at, updated_at, machine, opened_by_token, output_bytes, "
    "transcript_input_tokens, transcript_output_tokens, transcript_cache_read_tokens, "
    "transcript_cache_creation_tokens, transcript_cost_usd, "
    "command, first_prompt, failure_reason, stderr_tail, runner_seen_at"
)
# Columns stored as JSON text (migration 0026), decoded on read.
JSON_LISTS = ("command", "stderr_tail")
INSERT = text(
    "INSERT INTO agent_sessions (session_id, user_id, owner_key, session_type, context, status,"
    " provider, machine, opened_by_token, command, first_prompt, created_at, updated_at)"
    " VALUES (:session_id, :user_id, :owner_key, :session_type, :context, 'running',"
    " :provider, :machine, :opened_by_token, :command, :first_prompt, :now, :now)"
)
# The quotas: sessions a token opened since a moment (and the oldest of them, which
# says when the window frees a place), and a user's sessions still running, the user
# compared by owner_key (users.user_key(), migration 0022).
COUNT_OPENED_SINCE = text(
    "SELECT COUNT(*), MIN(created_at) FROM agent_sessions"
    " WHERE opened_by_token = :token_id AND created_at > :since"
)
COUNT_RUNNING_OF_USER = text(
    "SELECT COUNT(*) FROM agent_sessions WHERE owner_key = :owner_key AND status = 'running'"
)
NUL = "\x00"
SELECT_ONE_SQL = f"SELECT {COLUMNS} FROM agent_sessions WHERE session_id = :session_id"
SELECT_ONE = text(SELECT_ONE_SQL)
# Where each followed session stands, for the live hub's one poll per process.
SELECT_MARKS = text(
    "SELECT session_id, next_event_index, status FROM agent_sessions"
    " WHERE session_id IN :session_ids"
).bindparams(bindparam("session_ids", expanding=True))
MARKS_PER_QUERY = 500
# A session read for a write use case, its row locked so that the writes to one
# session are serial (dialect.ROW_LOCK says how each database does it).
LOCK_ONE = {name: text(sql) for name, sql in locking(SELECT_ONE_SQL).items()}
# The same for an ingest, with the open turn's header and the highest producer seq
# stored: what it would otherwise read in two more statements. This and RECORD_INGEST
# run on the driver's cursor (`{m}` marks a parameter): they are two of the five
# statements of every ingest request.
SELECT_LOCKED = "SELECT " + COLUMNS + ", turn_state, max_seq FROM agent_sessions WHERE session_id = {m}"
LOCK_FOR_WRITE = locking(SELECT_LOCKED)
LOCKED_NAMES = [name.strip() for name in COLUMNS.split(",")] + ["turn_state", "max_seq"]
# Newest first, keyset paged; (owner filter?, after a cursor?) -> statement. Four
# fixed statements rather than `:owner IS NULL OR ...`, which PostgreSQL cannot type.
OWNED = "user_id = :owner"
OLDER = "(created_at < :created_at OR (created_at = :created_at AND session_id < :session_id))"


def _list_statement(owned, older):
    conditions = [c for c, wanted in ((OWNED, owned), (OLDER, older)) if wanted]
    where = f" WHERE {' AND '.join(conditions)}" if conditions else ""
    return text(f"SELECT {COLUMNS} FROM agent_sessions{where}"
                " ORDER BY created_at DESC, session_id DESC LIMIT :limit")


LIST_PAGE = {(owned, older): _list_statement(owned, older)
             for owned in (False, True) for older in (False, True)}
# What a write adds to the session row, all in one place: its transcript counters,
# by what it newly inserted, and (migration 0019) the transcript usage of the turns it
# newly closed. Usage is (column, key of transcript_delta()).
TRANSCRIPT_USAGE = (("transcript_input_tokens", "input_tokens"),
                    ("transcript_output_tokens", "output_tokens"),
                    ("transcript_cache_read_tokens", "cache_read_input_tokens"),
                    ("transcript_cache_creation_tokens", "cache_creation_input_tokens"),
                    ("transcript_cost_usd", "total_cost_usd"))
NO_USAGE = {key: 0 for _, key in TRANSCRIPT_USAGE}
INCREMENTED = ("message_count", "conversation_turn_count", "visible_message_count",
               *(column for column, _ in TRANSCRIPT_USAGE))
ADD_COUNTS = "".join(f" {column} = {column} + {{m}}," for column in INCREMENTED)
# Both run on the driver's cursor (`{m}` marks a parameter): RECORD_INGEST ends every
# ingest request.
RECORD_INGEST = (
    "UPDATE agent_sessions SET next_event_index = {m}, output_bytes = output_bytes + {m},"
    + ADD_COUNTS + " turn_state = {m}, max_seq = {m}, updated_at = {m} WHERE session_id = {m}"
)
ADD_MESSAGES = "UPDATE agent_sessions SET" + ADD_COUNTS + " updated_at = {m} WHERE session_id = {m}"
# stopped_by: who queued the session's stop command, when one was queued (issue 30);
# failure_reason and stderr_tail: why a failed session failed (migration 0026).
MARK_COMPLETED = text(
    "UPDATE agent_sessions SET status = :status, exit_code = :exit_code, updated_at = :now,"
    " failure_reason = :failure_reason, stderr_tail = :stderr_tail,"
    " stopped_by = (SELECT created_by FROM session_commands WHERE session_id = :session_id"
    " AND kind = 'stop' ORDER BY command_id DESC LIMIT 1)"
    " WHERE session_id = :session_id"
)
ASSIGN_MACHINE = text(
    "UPDATE agent_sessions SET machine = :machine, updated_at = :now WHERE session_id = :session_id"
)
ADD_USAGE = text(
    "UPDATE agent_sessions SET request_count = request_count + :requests,"
    " total_input_tokens = total_input_tokens + :input_tokens,"
    " total_output_tokens = total_output_tokens + :output_tokens,"
    " total_tokens = total_tokens + :input_tokens + :output_tokens, updated_at = :now"
    " WHERE session_id = :session_id"
)

# What closed turns reported of their own usage (never a usage report's counters).


class SessionRepository:
    """Reads and writes `agent_sessions` rows on one connection (inside its transaction)."""

    def __init__(self, conn):
        self.conn = conn

    def add(self, session_id, user_id, session_type, context, provider, now, machine=None,
            opened_by_token=None, command=None, first_prompt=None):
        """Insert a new running session; `context` (and `command`, a list) is stored as
        JSON text, and the owner also as its quotas count it (owner_key)."""
        self.conn.execute(
            INSERT,
            {
                "session_id": session_id,
                "user_id": user_id,
                "owner_key": user_key(user_id),
                "session_type": session_type,
                "context": json.dumps(context),
                "provider": provider,
                "machine": machine,
                "opened_by_token": opened_by_token,
                "command": None if command is None else json.dumps(list(command)),
                "first_prompt": first_prompt,
                "now": now,
            },
        )

    def opened_since(self, token_id, since):
        """(how many sessions `token_id` opened after `since`, the oldest one's created_at)."""
        count, oldest = self.conn.execute(COUNT_OPENED_SINCE,
                                          {"token_id": token_id, "since": since}).one()
        return count, oldest

    def running_of_user(self, user_id):
        """How many of `user_id`'s sessions are still running, however its owner was
        spelt (users.user_key())."""
        return self.conn.execute(COUNT_RUNNING_OF_USER,
                                 {"owner_key": user_key(user_id)}).scalar_one()

    def marks(self, session_ids):
        """{session_id: (next_event_index, status)} for those of `session_ids` that exist."""
        ids = [sid for sid in session_ids if NUL not in sid]
        found = {}
        for at in range(0, len(ids), MARKS_PER_QUERY):
            rows = self.conn.execute(SELECT_MARKS, {"session_ids": ids[at:at + MARKS_PER_QUERY]})
            found.update((row[0], (row[1], row[2])) for row in rows)
        return found

    def get(self, session_id):
        """The session, or None when there is no such session."""
        return self._one(SELECT_ONE, session_id)

    def get_for_update(self, session_id):
        """Lock the session row for this transaction, then read it."""
        return self._one(choose(self.conn, LOCK_ONE), session_id)

    def lock_for_write(self, session_id):
        """Lock the session row for this transaction; the session with its open turn's
        header and highest stored seq (a LockedSession), or None."""
        if NUL in session_id:
            return None
        rows = on_driver(self.conn, choose(self.conn, LOCK_FOR_WRITE), (session_id,))
        if not rows:
            return None
        data = dict(zip(LOCKED_NAMES, rows[0]))
        turn_state, max_seq = data.pop("turn_state"), data.pop("max_seq")
        return LockedSession(_to_session(data), fast_json.loads(turn_state) if turn_state else None,
                             max_seq)

    def _one(self, statement, session_id):
        if NUL in session_id:  # no id holds one, and PostgreSQL refuses it as a parameter
            return None
        row = self.conn.execute(statement, {"session_id": session_id}).mappings().first()
        return _to_session(row) if row else None

    def list_page(self, limit, before=None, owner=None):
        """Newest first; `before` is the (created_at, session_id) of the last row seen;
        `owner` keeps only that user's sessions (None: every session)."""
        params = {"limit": limit}
        if owner is not None:
            params["owner"] = owner
        if before is not None:
            params["created_at"], params["session_id"] = before
        statement = LIST_PAGE[(owner is not None, before is not None)]
        return [_to_session(row) for row in self.conn.execute(statement, params).mappings()]

    def record_ingest(self, session_id, next_event_index, new_messages, now, *, turn_state,
                      max_seq, new_turns=0, new_visible=0, new_bytes=0, new_usage=None):
        """After an ingest: the next free event index, the open turn's header and the
        highest stored seq, `new_bytes` more bytes of output, and `new_messages` more
        rows (`new_visible` of them with visible text) from `new_turns` more closed turns,
        whose usage (transcript_delta()) is `new_usage`."""
        on_driver(self.conn, RECORD_INGEST, (
            next_event_index, new_bytes, *_counts(new_messages, new_turns, new_visible, new_usage),
            fast_json.dumps(turn_state), max_seq, now, session_id))

    def add_messages(self, session_id, new_messages, now, *, new_turns=0, new_visible=0,
                     new_usage=None):
        """Count `new_messages` more transcript rows (`new_visible` of them with
        visible text) and `new_turns` more closed turns, whose usage is `new_usage`."""
        on_driver(self.conn, ADD_MESSAGES, (
            *_counts(new_messages, new_turns, new_visible, new_usage), now, session_id))

    def mark_completed(self, session_id, status, exit_code, now, *, failure_reason=None,
                       stderr_tail=None):
        """Close the session with its final status and the process's exit code; a failed
        one with why it never started (if so) and its last stderr lines."""
        self.conn.execute(
            MARK_COMPLETED,
            {"session_id": session_id, "status": status, "exit_code": exit_code, "now": now,
             "failure_reason": failure_reason,
             "stderr_tail": json.dumps(list(stderr_tail)) if stderr_tail else None},
        )

    def assign_machine(self, session_id, machine, now):
        """Name the machine whose runner tokens may write the session."""
        self.conn.execute(ASSIGN_MACHINE,
                          {"session_id": session_id, "machine": machine, "now": now})

    def add_usage(self, session_id, input_tokens, output_tokens, requests, now):
        """Add one usage report to the session's request and token counters."""
        self.conn.execute(
            ADD_USAGE,
            {
                "session_id": session_id,
                "input_tokens": input_tokens,
                "output_tokens": output_tokens,
                "requests": requests,
                "now": now,
            },
        )


def _counts(new_messages, new_turns, new_visible, new_usage):
    """The values of ADD_COUNTS, in its order."""
    usage = new_usage or NO_USAGE
    return (new_messages, new_turns, new_visible, *(usage[key] for _, key in TRANSCRIPT_USAGE))


def _to_session(row):
    data = dict(row)
    data["context"] = fast_json.loads(data["context"] or "{}")
    for name in JSON_LISTS:
        data[name] = fast_json.loads(data[name]) if data[name] else None
    data["stderr_tail"] = data["stderr_tail"] or []
    return AgentSession(**data)
