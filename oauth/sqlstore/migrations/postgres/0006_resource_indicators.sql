-- Resource indicators (RFC 8707): the resource an authorization request
-- named is kept with its code and with the refresh token family the code
-- begins, whose access tokens carry it in aud. '' is none.
ALTER TABLE oauth_codes ADD COLUMN resource text NOT NULL DEFAULT '';
ALTER TABLE oauth_refresh_tokens ADD COLUMN resource text NOT NULL DEFAULT '';
