-- The outbox of package events. Every write through a resource registry
-- appends its events here in its own transaction.
--
-- A write inserts its events with seq NULL: writers never wait for each
-- other. Sequence then numbers the committed ones, per organization 1, 2,
-- 3, ... in the order they were inserted, under a lock that one sequencer
-- holds at a time, and raises the organization's head in the same
-- transaction: once a reader sees head H, every event up to H is numbered
-- and committed, and no event is ever numbered below it later.
CREATE TABLE waybill_event_heads (
    organization_id text PRIMARY KEY,
    seq             bigint NOT NULL,
    -- Events with seq <= purged_through were removed by retention.
    purged_through  bigint NOT NULL DEFAULT 0
);

-- pos is the order of insertion; body is the CloudEvent JSON exactly as
-- the feed serves it and webhooks deliver it.
CREATE TABLE waybill_events (
    pos             bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
    organization_id text NOT NULL,
    seq             bigint,
    id              text NOT NULL UNIQUE,
    type            text NOT NULL,
    resource        text NOT NULL,
    branch_id       text,
    record_id       text NOT NULL,
    time            timestamptz NOT NULL,
    body            text NOT NULL
);

CREATE UNIQUE INDEX waybill_events_seq ON waybill_events (organization_id, seq);
CREATE INDEX waybill_events_unnumbered ON waybill_events (pos) WHERE seq IS NULL;
CREATE INDEX waybill_events_time ON waybill_events (time);
