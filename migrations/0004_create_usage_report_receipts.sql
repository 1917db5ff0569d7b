-- 0004: usage_report_receipts, so that each usage report moves the counters once.
CREATE TABLE usage_report_receipts (
    session_id    TEXT NOT NULL REFERENCES agent_sessions (session_id) ON DELETE CASCADE,
    report_id     TEXT NOT NULL,
    input_tokens  BIGINT  NOT NULL,
    output_tokens BIGINT  NOT NULL,
    requests      BIGINT  NOT NULL,
    received_at   TEXT NOT NULL,
    PRIMARY KEY (session_id, report_id)
);
