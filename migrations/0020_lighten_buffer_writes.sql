-- 0020: two indexes every write kept up to date and no query needs.
-- ix_outputs_expires: pruning now walks each session's buffer in event order, on
-- the primary key (app/storage/repositories/outputs.py), so a buffered line costs
-- one b-tree less. ix_session_messages_order: every read of the transcript pages
-- by (session_id, id), which ix_session_messages_page holds; nothing sorts by time.
DROP INDEX ix_outputs_expires;
DROP INDEX ix_session_messages_order;
