-- Dynamic Client Registration (RFC 7591/7592). A client that registered
-- itself has the SHA-256 of its registration access token, which manages
-- its registration, and the token_endpoint_auth_method it chose; other apps
-- have NULL and ''. Initial access tokens, which let their holders register
-- clients until they expire, are kept by the SHA-256 of their value.
ALTER TABLE oauth_apps ADD COLUMN registration_token_hash bytea;
ALTER TABLE oauth_apps ADD COLUMN token_endpoint_auth_method text NOT NULL DEFAULT '';

CREATE TABLE oauth_initial_access_tokens (
    hash       bytea PRIMARY KEY,
    expires_at timestamptz NOT NULL,
    created_at timestamptz NOT NULL
);
