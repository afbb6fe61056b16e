-- The audit log (package audit): the security-relevant actions done to an
-- organization, appended in the transaction of the action and never
-- updated. seq orders the entries and is the cursor of their pages;
-- organization_id is NULL for an action of the whole installation (a signing
-- key rotated, a registration token made), which every organization's log
-- shows. details is a JSON object. Times are UTC text in the fixed-width
-- layout 2006-01-02T15:04:05.000000Z.
CREATE TABLE audit_log (
    seq             INTEGER PRIMARY KEY AUTOINCREMENT,
    id              TEXT NOT NULL UNIQUE,
    organization_id TEXT,
    at              TEXT NOT NULL,
    action          TEXT NOT NULL,
    actor_kind      TEXT NOT NULL,
    actor_id        TEXT NOT NULL,
    target_kind     TEXT NOT NULL,
    target_id       TEXT NOT NULL,
    remote_addr     TEXT NOT NULL,
    details         TEXT NOT NULL
) STRICT;

CREATE INDEX audit_log_organization_seq_idx ON audit_log (organization_id, seq);
