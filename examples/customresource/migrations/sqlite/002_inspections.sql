-- The inspections resource. Every resource table has id, organization_id,
-- created_at and updated_at, and branch-scoped ones branch_id, all set by
-- the server; then the declared fields, one column each, named as the fields.
--
-- SQLite keeps uuids and dates as text, and timestamps as text in
-- query.SQLiteTimestampLayout, so that text order is time order. STRICT
-- refuses a value of the wrong type, as PostgreSQL would.
CREATE TABLE inspections (
    id              text NOT NULL PRIMARY KEY,
    organization_id text NOT NULL,
    branch_id       text NOT NULL,
    created_at      text NOT NULL,
    updated_at      text NOT NULL,
    vehicle_plate   text NOT NULL,
    inspected_on    text NOT NULL,
    result          text NOT NULL CHECK (result IN ('pass', 'fail', 'pending')),
    status          text NOT NULL CHECK (status IN ('scheduled', 'done', 'cancelled')),
    notes           text,
    -- A record can never point at a branch of another organization.
    FOREIGN KEY (organization_id, branch_id) REFERENCES branches (organization_id, id)
) STRICT;

-- Serves the default order (created_at:desc, then id) inside a branch.
CREATE INDEX inspections_branch_created ON inspections (branch_id, created_at, id);
