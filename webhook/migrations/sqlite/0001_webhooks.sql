-- The webhook endpoints of organizations and the deliveries of events to
-- them (package webhook).
-- Timestamps are text in the layout 2006-01-02T15:04:05.000000Z, which sorts in time order.

-- An endpoint gets the events of its organization with seq > after_seq
-- (the organization's event head when it was registered) whose type matches
-- event_types, of the branches in branch_ids (NULL: every branch), and only
-- those its grant allows: the resources whose read scope, and the branches
-- (NULL: all), the token that last set event_types or branch_ids had.
-- secret is the signing secret, sealed (AES-256-GCM) under the secrets key
-- named by secret_key_id, or in clear when secret_key_id is ''. client_id
-- is the app whose token registered the endpoint: when the app is
-- disconnected from the organization, its endpoints are disabled.
CREATE TABLE waybill_webhook_endpoints (
    id              text PRIMARY KEY,
    organization_id text NOT NULL,
    url             text NOT NULL,
    event_types     text NOT NULL,
    branch_ids      text,
    grant_resources text NOT NULL,
    grant_branches  text,
    secret          blob NOT NULL,
    secret_key_id   text NOT NULL DEFAULT '',
    status          text NOT NULL CHECK (status IN ('enabled', 'disabled')),
    disabled_reason text NOT NULL DEFAULT '',
    client_id       text NOT NULL,
    after_seq       integer NOT NULL,
    created_at      text NOT NULL,
    updated_at      text NOT NULL
);

CREATE INDEX waybill_webhook_endpoints_organization ON waybill_webhook_endpoints (organization_id, created_at, id);

-- How far the fan-out has turned each organization's events into
-- deliveries.
CREATE TABLE waybill_webhook_fanout (
    organization_id text PRIMARY KEY,
    seq             integer NOT NULL
);

-- One delivery per event per endpoint. attempts counts the attempts of the
-- current round (a redelivery starts a new one); lease_until is set while a
-- replica delivers it: when that replica dies, another takes it after the
-- lease.
CREATE TABLE waybill_webhook_deliveries (
    id              text PRIMARY KEY,
    endpoint_id     text NOT NULL REFERENCES waybill_webhook_endpoints (id) ON DELETE CASCADE,
    organization_id text NOT NULL,
    event_seq       integer NOT NULL,
    event_id        text NOT NULL,
    record_id       text NOT NULL,
    status          text NOT NULL CHECK (status IN ('pending', 'delivered', 'failed')),
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at text NOT NULL,
    lease_until     text,
    created_at      text NOT NULL,
    updated_at      text NOT NULL,
    UNIQUE (endpoint_id, event_seq)
);

CREATE INDEX waybill_webhook_deliveries_due ON waybill_webhook_deliveries (next_attempt_at) WHERE status = 'pending';
CREATE INDEX waybill_webhook_deliveries_record ON waybill_webhook_deliveries (endpoint_id, record_id, event_seq);
CREATE INDEX waybill_webhook_deliveries_list ON waybill_webhook_deliveries (endpoint_id, created_at, id);

-- Every attempt of a delivery: n counts them over the delivery's life.
-- status_code is NULL when no HTTP answer came; error is '' on success.
CREATE TABLE waybill_webhook_attempts (
    delivery_id text NOT NULL REFERENCES waybill_webhook_deliveries (id) ON DELETE CASCADE,
    n           integer NOT NULL,
    at          text NOT NULL,
    status_code integer,
    error       text NOT NULL DEFAULT '',
    duration_ms integer NOT NULL,
    PRIMARY KEY (delivery_id, n)
);

-- The cut-offs of apps whose endpoints were disabled (DisableAppEndpoints):
-- each is handled once, by whichever process sees it first.
CREATE TABLE waybill_webhook_cutoffs (
    organization_id text NOT NULL,
    client_id       text NOT NULL,
    at              text NOT NULL,
    PRIMARY KEY (organization_id, client_id, at)
);
