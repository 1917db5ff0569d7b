"""In-memory stand-ins for the repositories and the unit of work.

They subclass nothing but keep the same methods as the SQL ones, so the use cases in
app.services.ingest can be exercised with no database; tests assert on their state.
"""
import copy
import dataclasses
import json

from app.core.records import AgentSession
from app.core.records import Chunk
from app.core.records import Evidence
from app.core.records import LockedSession
from app.core.records import Message
from app.core.records import SessionCommand
from app.core.records import SessionInput
from app.core.records import SessionPermission
from app.core.records import TokenRecord
from app.core.records import ToolResult
from app.core.records import fitting
from app.core.users import user_key
from app.formats.output_frames import event_json
from app.storage.unit_of_work import AbstractUnitOfWork


class FakeSessions:
    def __init__(self, turn_states=None):
        self.rows = {}
        # the open turns' headers, shared with FakeTurnStates (one column in SQL)
        self.turn_states = {} if turn_states is None else turn_states
        self.max_seqs = {}

    def add(self, session_id, user_id, session_type, context, provider, now, machine=None,
            opened_by_token=None, command=None, first_prompt=None):
        self.rows[session_id] = AgentSession(session_id, user_id, session_type, context, "running",
                                             provider, None, 0, 0, 0, 0, 0, 0, now, now,
                                             machine=machine, opened_by_token=opened_by_token,
                                             command=None if command is None else list(command),
                                             first_prompt=first_prompt)

    def opened_since(self, token_id, since):
        stamps = [r.created_at for r in self.rows.values()
                  if r.opened_by_token == token_id and r.created_at > since]
        return len(stamps), min(stamps, default=None)

    def running_of_user(self, user_id):
        key = user_key(user_id)
        return sum(1 for r in self.rows.values()
                   if user_key(r.user_id) == key and r.status == "running")

    def get(self, session_id):
        return copy.deepcopy(self.rows.get(session_id))

    get_for_update = get

    def lock_for_write(self, session_id):
        if session_id not in self.rows:
            return None
        return LockedSession(self.get(session_id), copy.deepcopy(self.turn_states.get(session_id)),
                             self.max_seqs.get(session_id))

    def record_ingest(self, session_id, next_event_index, new_messages, now, *, turn_state,
                      max_seq, new_turns=0, new_visible=0, new_bytes=0, new_usage=None):
        row = self.rows[session_id]
        row.next_event_index = next_event_index
        self.turn_states[session_id] = copy.deepcopy(turn_state)
        self.max_seqs[session_id] = max_seq
        row.output_bytes += new_bytes
        self.add_messages(session_id, new_messages, now, new_turns=new_turns,
                          new_visible=new_visible, new_usage=new_usage)

    def add_messages(self, session_id, new_messages, now, *, new_turns=0, new_visible=0,
                     new_usage=None):
        if new_usage:
            self._add_transcript_usage(session_id, new_usage)
        row = self.rows[session_id]
        row.message_count += new_messages
        row.conversation_turn_count += new_turns
        row.visible_message_count += new_visible
        row.updated_at = now

    def mark_completed(self, session_id, status, exit_code, now, *, failure_reason=None,
                       stderr_tail=None):
        row = self.rows[session_id]
        row.status, row.exit_code = status, exit_code
        row.failure_reason, row.stderr_tail = failure_reason, list(stderr_tail or [])

    def assign_machine(self, session_id, machine, now):
        row = self.rows[session_id]
        row.machine, row.updated_at = machine, now

    def _add_transcript_usage(self, session_id, usage):
        row = self.rows[session_id]
        row.transcript_input_tokens += usage["input_tokens"]
        row.transcript_output_tokens += usage["output_tokens"]
        row.transcript_cache_read_tokens += usage["cache_read_input_tokens"]
        row.transcript_cache_creation_tokens += usage["cache_creation_input_tokens"]
        row.transcript_cost_usd += usage["total_cost_usd"]

    def add_usage(self, session_id, input_tokens, output_tokens, requests, now):
        row = self.rows[session_id]
        row.request_count += requests
        row.total_input_tokens += input_tokens
        row.total_output_tokens += output_tokens
        row.total_tokens += input_tokens + output_tokens


class FakeMessages:
    def __init__(self):
        self.rows = []

    def insert_new(self, session_id, drafts, timestamp):
        added = []
        for draft in drafts:
            if any(m.session_id == session_id and m.turn_key == draft.turn_key for m in self.rows):
                continue
            self.rows.append(Message(len(self.rows) + 1, session_id, draft.role, draft.content,
                                     draft.content_blocks, draft.metadata, draft.source,
                                     draft.turn_key, timestamp))
            added.append((len(self.rows), draft))
        return added

    def has_turn_key(self, session_id, turn_key):
        return any(m.session_id == session_id and m.turn_key == turn_key for m in self.rows)

    def list_before(self, session_id, before, limit):
        older = [m for m in self.rows if m.session_id == session_id and m.id < before]
        return copy.deepcopy(older[-limit:]) if limit else []

    def sized_page(self, session_id, after, limit, max_bytes):
        rows = [m for m in self.rows if m.session_id == session_id and m.id > after][:limit]
        count = fitting([_stored_size(m) for m in rows], max_bytes)
        return copy.deepcopy(rows[:count]), count < len(rows)

    def sized_before(self, session_id, before, limit, max_bytes):
        newest = self.list_before(session_id, before, limit)[::-1]
        count = fitting([_stored_size(m) for m in newest], max_bytes)
        return newest[:count][::-1], count < len(newest)

    def newest_before(self, session_id, before):
        return max((m.id for m in self.rows if m.session_id == session_id and m.id < before),
                   default=0)

    def ids_of_turns(self, session_id, turn_keys):
        return {m.turn_key: m.id for m in self.rows
                if m.session_id == session_id and m.turn_key in set(turn_keys)}

    def openers(self, session_ids):
        found = {}
        for sid in session_ids:
            rows = [m for m in self.rows if m.session_id == sid]
            init = [m for m in rows if m.role == "system"
                    and m.content.startswith("Session started:")]
            said = [m for m in rows if m.role == "assistant" and m.content]
            found[sid] = sorted(init[:1] + said[:1], key=lambda m: m.id)
        return {sid: rows for sid, rows in found.items() if rows}


def _stored_size(message):
    return (len(message.content) + len(json.dumps(message.content_blocks))
            + len(json.dumps(message.metadata)))


def _within(rows, max_bytes, size_of):
    count = fitting([size_of(row) for row in rows], max_bytes)
    return rows[:count], count < len(rows)


class FakeTurns:
    def __init__(self):
        self.keys = set()  # (session_id, turn_key)

    def add_many_if_new(self, session_id, turn_keys, now):
        added = []
        for key in turn_keys:
            if (session_id, key) not in self.keys:
                self.keys.add((session_id, key))
                added.append(key)
        return added

    def known(self, session_id, turn_keys):
        return {key for key in turn_keys if (session_id, key) in self.keys}


class FakeEvidence:
    def __init__(self):
        self.rows = []  # Evidence, in write order

    def add_many(self, session_id, items, now):
        known = {(e.session_id, e.turn_id, e.evidence_id) for e in self.rows}
        added = 0
        for item in items:
            if (session_id, item["turn_id"], item["evidence_id"]) in known:
                continue
            known.add((session_id, item["turn_id"], item["evidence_id"]))
            self.rows.append(Evidence(id=len(self.rows) + 1, session_id=session_id,
                                      created_at=now, **item))
            added += 1
        return added

    def list_page(self, session_id, after, limit):
        return [e for e in self.rows if e.session_id == session_id and e.id > after][:limit]


class FakeToolResults:
    def __init__(self):
        self.rows = []  # ToolResult, in write order

    def add_many(self, session_id, items, now):
        known = {(r.session_id, r.turn_id, r.tool_use_id) for r in self.rows}
        added = 0
        for item in items:
            key = (session_id, item["turn_id"], item["tool_use_id"])
            if key in known:
                continue
            known.add(key)
            fields = {k: v for k, v in item.items() if k != "place"}
            self.rows.append(ToolResult(id=len(self.rows) + 1, session_id=session_id,
                                        created_at=now, **fields))
            added += 1
        return added

    def of_messages(self, session_id, first, last, limit):
        return [r for r in self.rows if r.session_id == session_id and r.message_id is not None
                and first <= r.message_id <= last][:limit]

    def without_row(self, session_id, after, before, limit):
        rows = [r for r in self.rows if r.session_id == session_id and r.message_id is None
                and after <= r.after_message_id < before]
        return sorted(rows, key=lambda r: (r.after_message_id, r.id))[:limit]


class FakeOutputs:
    def __init__(self, sessions=None):
        self.sessions = sessions  # the FakeSessions of the same unit of work
        self.rows = []  # (session_id, StoredOutput)
        self.live = {}  # (session_id, event_index) -> stored live events

    def known_seqs(self, session_id, seqs):
        wanted = set(seqs)
        return {o.producer_seq: Chunk(o.payload, o.stream, o.producer_seq)
                for sid, o in self.rows if sid == session_id and o.producer_seq in wanted}

    def add_many(self, session_id, outputs, expires_at, live_events=()):
        self.rows.extend((session_id, out) for out in outputs)
        for out, live in zip(outputs, live_events or [None] * len(outputs)):
            if live is not None:
                self.live[(session_id, out.event_index)] = live

    def list_live_after(self, session_id, after, limit, max_bytes=0):
        retained = {o.event_index for sid, o in self.rows if sid == session_id}
        found = [(index, text) for (sid, index), text in self.live.items()
                 if sid == session_id and index > after and index in retained]
        return _within(sorted(found)[:limit], max_bytes, lambda row: len(row[1]))

    def last_live(self, session_id):
        found, _ = self.list_live_after(session_id, -1, 2**62)
        return found[-1] if found else None

    def list_after(self, session_id, after, limit, max_bytes=0):
        found = [(o.event_index, event_json(o.event_index, o.stream, o.payload, o.created_at))
                 for sid, o in self.rows if sid == session_id and o.event_index > after]
        return _within(sorted(found)[:limit], max_bytes, lambda row: len(row[1]))

    def list_feeds_after(self, session_id, after, limit, max_bytes=0):
        rows, _ = self.list_after(session_id, after, limit, max_bytes)
        return [(index, data, self.live.get((session_id, index))) for index, data in rows]

    def buffered_sessions(self):
        return sorted({(sid, self.sessions.get(sid).provider, self.sessions.get(sid).status)
                       for sid, _ in self.rows})

    def list_lines_after(self, session_id, after, limit):
        found = [(o.event_index, o.stream, o.payload)
                 for sid, o in self.rows if sid == session_id and o.event_index > after]
        return sorted(found)[:limit]

    def last_stderr(self, session_id, limit):
        found = sorted((o.event_index, o.payload) for sid, o in self.rows
                       if sid == session_id and o.stream == "stderr")
        return [payload for _, payload in found[-limit:]] if limit else []

    def oldest_index(self, session_id):
        return min((o.event_index for sid, o in self.rows if sid == session_id), default=None)

    def forget_before(self, session_id, event_index):
        """What a retention purge does to the buffer (tests only)."""
        self.rows = [(sid, o) for sid, o in self.rows
                     if sid != session_id or o.event_index >= event_index]


class FakeStreamCursors:
    def __init__(self):
        self.rows = {}

    def last_delivered(self, session_id, client_id):
        return self.rows.get((session_id, client_id))

    def set_last_delivered(self, session_id, client_id, last_delivered, now):
        key = (session_id, client_id)
        self.rows[key] = max(last_delivered, self.rows.get(key, last_delivered))


class FakeTurnStates:
    def __init__(self):
        self.rows = {}
        self.parts = {}

    def load_parts(self, session_id):
        return copy.deepcopy(self.parts.get(session_id, []))

    def append_parts(self, session_id, start, parts):
        if not parts:
            return
        saved = self.parts.setdefault(session_id, [])
        assert len(saved) == start, "parts must be appended in order"
        saved.extend(copy.deepcopy(parts))

    def replace_parts(self, session_id, restated):
        saved = self.parts.get(session_id, [])
        for number, part in restated.items():
            assert 0 <= number < len(saved), "only saved parts can be restated"
            saved[number] = copy.deepcopy(part)

    def take_parts(self, session_id):
        return self.parts.pop(session_id, [])

    def drop_parts_from(self, session_id, start):
        saved = self.parts.get(session_id, [])
        del saved[start:]

    def load(self, session_id):
        return copy.deepcopy(self.rows.get(session_id))

    def save(self, session_id, snapshot, now):
        self.rows[session_id] = copy.deepcopy(snapshot)


class FakeFinalEvents:
    def __init__(self):
        self.rows = {}

    def get(self, session_id):
        return self.rows.get(session_id)

    def add(self, session_id, event_index, events, now):
        self.rows.setdefault(session_id, (event_index, events))


class FakeUsage:
    def __init__(self):
        self.receipts = set()

    def add_if_new(self, session_id, report_id, input_tokens, output_tokens, requests, now):
        if (session_id, report_id) in self.receipts:
            return False
        self.receipts.add((session_id, report_id))
        return True


class FakeTokens:
    def __init__(self):
        self.rows = {}  # id -> TokenRecord
        self.hashes = {}  # token hash -> id
        self.viewers = {}  # key hash -> [token_id, expires_at, revoked_at]
        self.locked = []

    def add(self, kind, name, is_admin, token_hash, now, *, allowed_users=None, expires_at=None,
            session_id=None):
        token_id = max(self.rows, default=0) + 1
        self.rows[token_id] = TokenRecord(token_id, kind, name, is_admin, now, None,
                                          None if allowed_users is None else tuple(allowed_users),
                                          expires_at, session_id)
        self.hashes[token_hash] = token_id
        return token_id

    def active_by_id(self, token_id, now):
        record = self.rows.get(token_id)
        if record is None or record.revoked_at is not None:
            return None
        return record if record.expires_at is None or record.expires_at > now else None

    def active_by_hash(self, token_hash, now):
        return self.active_by_id(self.hashes.get(token_hash), now)

    def lock(self, token_id):
        self.locked.append(token_id)

    def renew(self, token_id, at):
        record = self.rows[token_id]
        if record.revoked_at is None:
            self.rows[token_id] = dataclasses.replace(record, expires_at=at)

    def expire_session_tokens(self, session_id, at):
        for token_id, record in self.rows.items():
            if record.session_id == session_id and (record.expires_at is None or record.expires_at > at):
                self.rows[token_id] = dataclasses.replace(record, expires_at=at)

    def add_viewer_session(self, key_hash, token_id, now, expires_at):
        self.viewers[key_hash] = [token_id, expires_at, None]

    def viewer_token(self, key_hash, now):
        token_id, expires_at, revoked_at = self.viewers.get(key_hash, (None, "", "revoked"))
        return self.active_by_id(token_id, now) if revoked_at is None and expires_at > now else None

    def revoke_viewer_session(self, key_hash, now):
        viewer = self.viewers.get(key_hash)
        if viewer is None or viewer[2] is not None:
            return False
        viewer[2] = now
        return True

    def delete_expired_viewer_sessions(self, now):
        expired = [k for k, (_, expires_at, _) in self.viewers.items() if expires_at <= now]
        for key in expired:
            del self.viewers[key]
        return len(expired)

    def revoke(self, token_id, now):
        record = self.rows.get(token_id)
        if record is None or record.revoked_at is not None:
            return False
        self.rows[token_id] = dataclasses.replace(record, revoked_at=now)
        return True


class FakeUserDays:
    def __init__(self):
        self.output = {}  # (user_key, day) -> bytes
        self.opened = {}  # (user_key, day) -> sessions

    def add_output(self, user_key, day, n):
        self.output[user_key, day] = self.output.get((user_key, day), 0) + n
        return self.output[user_key, day]

    def add_session(self, user_key, day):
        self.opened[user_key, day] = self.opened.get((user_key, day), 0) + 1
        return self.opened[user_key, day]


class FakeInputs:
    def __init__(self):
        self.rows = []  # SessionInput, in write order

    def add_if_new(self, session_id, client_message_id, content, created_by, now):
        if self.find(session_id, client_message_id) is not None:
            return None
        row = SessionInput(input_id=len(self.rows) + 1, session_id=session_id,
                           client_message_id=client_message_id, content=content, state="queued",
                           reason=None, created_by=created_by, created_at=now)
        self.rows.append(row)
        return row

    def find(self, session_id, client_message_id):
        return next((row for row in self.rows if (row.session_id, row.client_message_id)
                     == (session_id, client_message_id)), None)

    def list_pending(self, session_id):
        return [row for row in self.rows if row.session_id == session_id and row.state != "applied"]

    def mark_applied(self, session_id, input_ids, now):
        changed = 0
        for n, row in enumerate(self.rows):
            if row.session_id == session_id and row.input_id in input_ids and row.state != "applied":
                self.rows[n] = dataclasses.replace(row, state="applied", applied_at=now)
                changed += 1
        return changed


class FakePermissions:
    """PermissionRepository's methods ingest uses, on a dict."""

    def __init__(self):
        self.rows = {}  # (session_id, request_id) -> SessionPermission

    def add_if_new(self, session_id, request_id, tool_name, tool_input, event_index,
                   requested_at, expires_at):
        if (session_id, request_id) in self.rows:
            return None
        row = SessionPermission(session_id, request_id, tool_name, tool_input, event_index,
                                requested_at, expires_at, "pending")
        self.rows[(session_id, request_id)] = row
        return row

    def find(self, session_id, request_id):
        return self.rows.get((session_id, request_id))

    def resolve_if_pending(self, session_id, request_id, state, message, resolved_by, now):
        row = self.rows.get((session_id, request_id))
        if row is None or row.state != "pending":
            return False
        self.rows[(session_id, request_id)] = dataclasses.replace(
            row, state=state, message=message, resolved_by=resolved_by, resolved_at=now)
        return True


class FakeCommands:
    def __init__(self):
        self.rows = []  # SessionCommand, in write order

    def add(self, session_id, kind, body, created_by, now):
        row = SessionCommand(command_id=len(self.rows) + 1, session_id=session_id, kind=kind,
                             body=dict(body), created_by=created_by, created_at=now)
        self.rows.append(row)
        return row

    def find(self, session_id, command_id):
        return next((row for row in self.rows if (row.session_id, row.command_id)
                     == (session_id, command_id)), None)


class FakeRunners:
    def __init__(self):
        self.presences = {}  # session_id -> (controls, seen_at, stopped_by)

    def attach(self, session_id, controls, now):
        self.presences[session_id] = (list(controls), now, None)

    def presence(self, session_id):
        return self.presences.get(session_id, (None, None, None))


class FakeUnitOfWork(AbstractUnitOfWork):
    """Commits are recorded, not applied: the fakes change in place, like autocommit."""

    def __init__(self):
        self.turn_states = FakeTurnStates()
        self.sessions = FakeSessions(self.turn_states.rows)
        self.messages = FakeMessages()
        self.outputs = FakeOutputs(self.sessions)
        self.turns = FakeTurns()
        self.usage = FakeUsage()
        self.stream_cursors = FakeStreamCursors()
        self.tokens = FakeTokens()
        self.final_events = FakeFinalEvents()
        self.evidence = FakeEvidence()
        self.tool_results = FakeToolResults()
        self.user_days = FakeUserDays()
        self.inputs = FakeInputs()
        self.commands = FakeCommands()
        self.runners = FakeRunners()
        self.permissions = FakePermissions()
        self.commits = 0

    def commit(self):
        self.commits += 1

    def rollback(self):
        pass

    def __call__(self, write=False):
        """Serve as its own factory, as streaming's `new_uow()` expects."""
        return self
