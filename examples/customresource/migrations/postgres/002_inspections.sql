-- The inspections resource. Every resource table has id, organization_id,
-- created_at and updated_at, and branch-scoped ones branch_id, all set by
-- the server; then the declared fields, one column each, named as the fields.
CREATE TABLE inspections (
    id              uuid        NOT NULL PRIMARY KEY,
    organization_id uuid        NOT NULL,
    branch_id       uuid        NOT NULL,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL,
    vehicle_plate   text        NOT NULL,
    inspected_on    date        NOT NULL,
    result          text        NOT NULL CHECK (result IN ('pass', 'fail', 'pending')),
    status          text        NOT NULL CHECK (status IN ('scheduled', 'done', 'cancelled')),
    notes           text,
    -- A record can never point at a branch of another organization.
    FOREIGN KEY (organization_id, branch_id) REFERENCES branches (organization_id, id)
);

-- Serves the default order (created_at:desc, then id) inside a branch.
CREATE INDEX inspections_branch_created ON inspections (branch_id, created_at, id);
