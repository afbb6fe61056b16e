-- Purge (Store.Purge) deletes what has ended in bounded batches; these
-- indexes let each batch find its rows without scanning a table. Unused
-- codes go when they expire, redeemed ones when their authorization has
-- reached its maximum age; tokens go when they expire; families when they
-- are revoked or reach their maximum age; grants with their authorization.
CREATE INDEX oauth_codes_unused_expires_at_idx ON oauth_codes (expires_at) WHERE used_at IS NULL;
CREATE INDEX oauth_codes_used_at_idx ON oauth_codes (used_at) WHERE used_at IS NOT NULL;
CREATE INDEX oauth_refresh_tokens_expires_at_idx ON oauth_refresh_tokens (expires_at);
CREATE INDEX oauth_families_revoked_at_idx ON oauth_families (revoked_at) WHERE revoked_at IS NOT NULL;
CREATE INDEX oauth_families_created_at_idx ON oauth_families (created_at);
CREATE INDEX oauth_grants_created_at_idx ON oauth_grants (created_at);
