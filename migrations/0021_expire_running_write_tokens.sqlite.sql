-- 0021 (SQLite): no session write token without an expiry. A running session's own
-- write token now expires WRITE_TOKEN_LIFETIME_SECONDS after its issue and each output
-- request renews it; those issued before this migration had none while their session
-- ran. Each gets 24 hours from the upgrade (the default lifetime); a write renews it
-- as any other. Revoked tokens, and tokens of completed sessions (which expire at
-- completion plus the grace period), keep what they have.
UPDATE agent_tokens SET expires_at = strftime('%Y-%m-%dT%H:%M:%f000Z', 'now', '+1 day')
WHERE session_id IS NOT NULL AND expires_at IS NULL AND revoked_at IS NULL;
