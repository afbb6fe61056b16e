-- The answers to writes sent with an Idempotency-Key (package resource),
-- kept until expires_at so that a retry gets the first answer again. A key
-- belongs to one client (the token's client_id) in one organization.
-- fingerprint is the SHA-256 (hex) of what the request asked: method,
-- resource, path ids and body. headers is a JSON object of the answer's
-- headers that are replayed (Location, ETag).
CREATE TABLE waybill_idempotency_keys (
    organization_id text NOT NULL,
    client_id       text NOT NULL,
    idempotency_key text NOT NULL,
    fingerprint     text NOT NULL,
    status          integer NOT NULL,
    headers         text NOT NULL,
    body            text NOT NULL,
    created_at      timestamptz NOT NULL,
    expires_at      timestamptz NOT NULL,
    PRIMARY KEY (organization_id, client_id, idempotency_key)
);

CREATE INDEX waybill_idempotency_keys_expires_at ON waybill_idempotency_keys (expires_at);
