-- 0018: session_evidence, the evidence record: one row per shell command an agent ran
-- (Claude Bash, Codex command_execution, Gemini run_shell_command), written by ingest
-- when the turn that ran it closes, in the same transaction as that turn's row.
-- evidence_id is the tool call's id and turn_id the turn's key (session_messages.turn_key);
-- a provider may reuse a call id in a later turn (Codex restarts item ids each run), so a
-- row is unique per (session, turn, call) and a replayed turn writes nothing new.
-- The row keeps its output's first and last 4 KiB (output_head, output_tail; the whole of
-- an output of up to 8 KiB is in output_head) and the test counts read from it
-- (test_summary, JSON text or NULL), so it outlives the output buffer's retention.
-- Sessions upgraded with buffer rows are backfilled by `db-upgrade` in this migration's
-- transaction, in Python (app/services/evidence.py): reading commands takes the providers'
-- line parsers, which SQL cannot run.
CREATE TABLE session_evidence (
    id                INTEGER PRIMARY KEY,
    session_id        TEXT NOT NULL REFERENCES agent_sessions (session_id) ON DELETE CASCADE,
    turn_id           TEXT NOT NULL,
    evidence_id       TEXT NOT NULL,
    command           TEXT NOT NULL,
    exit_code         BIGINT,
    is_error          INTEGER NOT NULL DEFAULT 0 CHECK (is_error IN (0, 1)),
    first_event_index BIGINT,
    last_event_index  BIGINT,
    output_head       TEXT NOT NULL DEFAULT '',
    output_tail       TEXT NOT NULL DEFAULT '',
    output_bytes      BIGINT NOT NULL DEFAULT 0,
    test_summary      TEXT,
    created_at        TEXT NOT NULL,
    UNIQUE (session_id, turn_id, evidence_id)
);

CREATE INDEX ix_session_evidence_page ON session_evidence (session_id, id);
