-- OpenID Connect: the nonce of the authorization request and the time the
-- user signed in are kept with the code, for the id token its exchange
-- issues. NULL is none (a code of a request without nonce, or issued
-- before this migration).
ALTER TABLE oauth_codes ADD COLUMN nonce text;
ALTER TABLE oauth_codes ADD COLUMN auth_time timestamptz;
