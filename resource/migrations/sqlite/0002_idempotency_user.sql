-- A key of a token that acts for a user (authorization code, product user
-- token) belongs to that user too, so that two users of one app neither see
-- each other's answers nor learn that a key was used: user_id is the
-- token's subject, '' for a client-credentials token. Rows kept before have
-- '': the keys of client-credentials tokens replay as they did; those of a
-- user's token are no longer found (the user's retry is judged anew) and
-- expire with the others. SQLite cannot change a primary key: the table is
-- made again.
CREATE TABLE waybill_idempotency_keys_next (
    organization_id text NOT NULL,
    client_id       text NOT NULL,
    user_id         text NOT NULL DEFAULT '',
    idempotency_key text NOT NULL,
    fingerprint     text NOT NULL,
    status          integer NOT NULL,
    headers         text NOT NULL,
    body            text NOT NULL,
    created_at      text NOT NULL,
    expires_at      text NOT NULL,
    PRIMARY KEY (organization_id, client_id, user_id, idempotency_key)
);

INSERT INTO waybill_idempotency_keys_next
    (organization_id, client_id, user_id, idempotency_key, fingerprint, status, headers, body, created_at, expires_at)
SELECT organization_id, client_id, '', idempotency_key, fingerprint, status, headers, body, created_at, expires_at
FROM waybill_idempotency_keys;

DROP TABLE waybill_idempotency_keys;

ALTER TABLE waybill_idempotency_keys_next RENAME TO waybill_idempotency_keys;

CREATE INDEX waybill_idempotency_keys_expires_at ON waybill_idempotency_keys (expires_at);
