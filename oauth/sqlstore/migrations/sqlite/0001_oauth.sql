-- The tables of the OAuth token service (package oauth/sqlstore).
--
-- Organization, user and branch ids belong to the host application: they are
-- kept as text, and no foreign key points at the host's tables. Lists
-- (scopes, branch ids, redirect URIs) are JSON arrays of strings kept as text.
-- Codes and refresh tokens are kept by the SHA-256 of their value.
-- Timestamps are UTC text in the fixed-width layout
-- 2006-01-02T15:04:05.000000Z, so that text order is time order.

CREATE TABLE oauth_apps (
    id              TEXT PRIMARY KEY,
    client_id       TEXT NOT NULL UNIQUE,
    name            TEXT NOT NULL,
    organization_id TEXT NOT NULL,
    scopes          TEXT NOT NULL,
    branch_ids      TEXT NOT NULL,
    redirect_uris   TEXT NOT NULL,
    secret_hash     BLOB NOT NULL,
    created_at      TEXT NOT NULL
) STRICT;

-- family_id is NULL until the code is redeemed; it names the refresh token
-- family issued from the code, so that a replay can revoke it.
CREATE TABLE oauth_codes (
    hash            BLOB PRIMARY KEY,
    client_id       TEXT NOT NULL,
    user_id         TEXT NOT NULL,
    organization_id TEXT NOT NULL,
    redirect_uri    TEXT NOT NULL,
    challenge       TEXT NOT NULL,
    scopes          TEXT NOT NULL,
    expires_at      TEXT NOT NULL,
    used_at         TEXT,
    family_id       TEXT
) STRICT;

-- A family is recorded by the first token saved in it or by its revocation,
-- whichever comes first; client_id, user_id and organization_id are NULL
-- for a family revoked before any token of it was saved.
CREATE TABLE oauth_families (
    id              TEXT PRIMARY KEY,
    client_id       TEXT,
    user_id         TEXT,
    organization_id TEXT,
    created_at      TEXT NOT NULL,
    revoked_at      TEXT
) STRICT;

CREATE TABLE oauth_refresh_tokens (
    hash            BLOB PRIMARY KEY,
    family_id       TEXT NOT NULL REFERENCES oauth_families (id) ON DELETE CASCADE,
    client_id       TEXT NOT NULL,
    user_id         TEXT NOT NULL,
    organization_id TEXT NOT NULL,
    scopes          TEXT NOT NULL,
    expires_at      TEXT NOT NULL,
    spent_at        TEXT,
    created_at      TEXT NOT NULL
) STRICT;

CREATE INDEX oauth_refresh_tokens_family_id_idx ON oauth_refresh_tokens (family_id);

-- One row per consent, oldest first: consent is asked at every authorization.
CREATE TABLE oauth_grants (
    id              INTEGER PRIMARY KEY,
    client_id       TEXT NOT NULL,
    user_id         TEXT NOT NULL,
    organization_id TEXT NOT NULL,
    scopes          TEXT NOT NULL,
    created_at      TEXT NOT NULL
) STRICT;

CREATE INDEX oauth_grants_client_user_idx ON oauth_grants (client_id, user_id, organization_id);

-- Signing keys by role; the row named 'signing' holds the key that signs.
CREATE TABLE oauth_keys (
    name       TEXT PRIMARY KEY,
    id         TEXT NOT NULL UNIQUE,
    secret     BLOB NOT NULL,
    created_at TEXT NOT NULL
) STRICT;
