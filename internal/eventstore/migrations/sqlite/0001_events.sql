-- The outbox of package events. Every write through a resource registry
-- appends its events here in its own transaction.
--
-- seq numbers the events of one organization 1, 2, 3, ... without holes.
-- waybill_event_heads holds the last seq handed out; SQLite has one writer,
-- so seq order is commit order.
-- Timestamps are text in the layout 2006-01-02T15:04:05.000000Z, which sorts in time order.
CREATE TABLE waybill_event_heads (
    organization_id text PRIMARY KEY,
    seq             integer NOT NULL,
    -- Events with seq <= purged_through were removed by retention.
    purged_through  integer NOT NULL DEFAULT 0
);

-- body is the CloudEvent JSON exactly as the feed serves it and webhooks
-- deliver it.
CREATE TABLE waybill_events (
    organization_id text NOT NULL,
    seq             integer NOT NULL,
    id              text NOT NULL UNIQUE,
    type            text NOT NULL,
    resource        text NOT NULL,
    branch_id       text,
    record_id       text NOT NULL,
    time            text NOT NULL,
    body            text NOT NULL,
    PRIMARY KEY (organization_id, seq)
);

CREATE INDEX waybill_events_time ON waybill_events (time);
