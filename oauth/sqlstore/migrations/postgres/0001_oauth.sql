-- The tables of the OAuth token service (package oauth/sqlstore).
--
-- Organization, user and branch ids belong to the host application: they are
-- kept as text, and no foreign key points at the host's tables. Lists
-- (scopes, branch ids, redirect URIs) are JSON arrays of strings kept as text.
-- Codes and refresh tokens are kept by the SHA-256 of their value.

CREATE TABLE oauth_apps (
    id              text PRIMARY KEY,
    client_id       text NOT NULL UNIQUE,
    name            text NOT NULL,
    organization_id text NOT NULL,
    scopes          text NOT NULL,
    branch_ids      text NOT NULL,
    redirect_uris   text NOT NULL,
    secret_hash     bytea NOT NULL,
    created_at      timestamptz NOT NULL
);

-- family_id is NULL until the code is redeemed; it names the refresh token
-- family issued from the code, so that a replay can revoke it.
CREATE TABLE oauth_codes (
    hash            bytea PRIMARY KEY,
    client_id       text NOT NULL,
    user_id         text NOT NULL,
    organization_id text NOT NULL,
    redirect_uri    text NOT NULL,
    challenge       text NOT NULL,
    scopes          text NOT NULL,
    expires_at      timestamptz NOT NULL,
    used_at         timestamptz,
    family_id       text
);

-- A family is recorded by the first token saved in it or by its revocation,
-- whichever comes first; client_id, user_id and organization_id are NULL
-- for a family revoked before any token of it was saved.
CREATE TABLE oauth_families (
    id              text PRIMARY KEY,
    client_id       text,
    user_id         text,
    organization_id text,
    created_at      timestamptz NOT NULL,
    revoked_at      timestamptz
);

CREATE TABLE oauth_refresh_tokens (
    hash            bytea PRIMARY KEY,
    family_id       text NOT NULL REFERENCES oauth_families (id) ON DELETE CASCADE,
    client_id       text NOT NULL,
    user_id         text NOT NULL,
    organization_id text NOT NULL,
    scopes          text NOT NULL,
    expires_at      timestamptz NOT NULL,
    spent_at        timestamptz,
    created_at      timestamptz NOT NULL
);

CREATE INDEX oauth_refresh_tokens_family_id_idx ON oauth_refresh_tokens (family_id);

-- One row per consent, oldest first: consent is asked at every authorization.
CREATE TABLE oauth_grants (
    id              bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    client_id       text NOT NULL,
    user_id         text NOT NULL,
    organization_id text NOT NULL,
    scopes          text NOT NULL,
    created_at      timestamptz NOT NULL
);

CREATE INDEX oauth_grants_client_user_idx ON oauth_grants (client_id, user_id, organization_id);

-- Signing keys by role; the row named 'signing' holds the key that signs.
CREATE TABLE oauth_keys (
    name       text PRIMARY KEY,
    id         text NOT NULL UNIQUE,
    secret     bytea NOT NULL,
    created_at timestamptz NOT NULL
);
