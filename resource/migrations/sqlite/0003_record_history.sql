-- The history of records (package resource, SQLHistory): one row for each
-- create, update and delete, appended in the write's transaction. seq is the
-- order of the entries; id is the id of the write's event. organization_id
-- and branch_id are the record's, kept so that the history of a deleted
-- record is shown to its tenant alone. changed is a JSON array of field
-- names, before_values and after_values JSON objects of those fields. Rows
-- older than the audit retention are purged by time (text in the layout
-- 2006-01-02T15:04:05.000000Z, which sorts in time order).
CREATE TABLE waybill_record_history (
    seq             integer PRIMARY KEY AUTOINCREMENT,
    organization_id text NOT NULL,
    branch_id       text,
    resource        text NOT NULL,
    record_id       text NOT NULL,
    id              text NOT NULL,
    type            text NOT NULL,
    time            text NOT NULL,
    client_id       text,
    user_id         text,
    changed         text NOT NULL,
    before_values   text NOT NULL,
    after_values    text NOT NULL
);

CREATE INDEX waybill_record_history_record ON waybill_record_history (record_id, seq);
CREATE INDEX waybill_record_history_time ON waybill_record_history (time);
