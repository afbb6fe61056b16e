-- The audit log (package audit): the security-relevant actions done to an
-- organization, appended in the transaction of the action and never
-- updated. seq orders the entries and is the cursor of their pages;
-- organization_id is NULL for an action of the whole installation (a signing
-- key rotated, a registration token made), which every organization's log
-- shows. details is a JSON object.
CREATE TABLE audit_log (
    seq             bigserial PRIMARY KEY,
    id              text NOT NULL UNIQUE,
    organization_id text,
    at              timestamptz NOT NULL,
    action          text NOT NULL,
    actor_kind      text NOT NULL,
    actor_id        text NOT NULL,
    target_kind     text NOT NULL,
    target_id       text NOT NULL,
    remote_addr     text NOT NULL,
    details         text NOT NULL
);

CREATE INDEX audit_log_organization_seq_idx ON audit_log (organization_id, seq);
