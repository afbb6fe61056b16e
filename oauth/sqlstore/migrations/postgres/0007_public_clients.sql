-- Public clients (token_endpoint_auth_method none): apps without a secret,
-- which use only the authorization-code grant and refresh. Their
-- secret_hash is empty.
ALTER TABLE oauth_apps ADD COLUMN public boolean NOT NULL DEFAULT false;
