-- A key of a token that acts for a user (authorization code, product user
-- token) belongs to that user too, so that two users of one app neither see
-- each other's answers nor learn that a key was used: user_id is the
-- token's subject, '' for a client-credentials token. Rows kept before have
-- '': the keys of client-credentials tokens replay as they did; those of a
-- user's token are no longer found (the user's retry is judged anew) and
-- expire with the others.
ALTER TABLE waybill_idempotency_keys ADD COLUMN user_id text NOT NULL DEFAULT '';
ALTER TABLE waybill_idempotency_keys DROP CONSTRAINT waybill_idempotency_keys_pkey;
ALTER TABLE waybill_idempotency_keys ADD PRIMARY KEY (organization_id, client_id, user_id, idempotency_key);
