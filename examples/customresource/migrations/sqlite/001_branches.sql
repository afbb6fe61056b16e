-- The branches this service knows, for tenancy: which organization owns
-- each branch. In production this is the same directory the Waybill token
-- service issues tokens for (a shared table, a view, or a synced copy).
CREATE TABLE branches (
    id              text NOT NULL PRIMARY KEY,
    organization_id text NOT NULL,
    name            text NOT NULL,
    UNIQUE (organization_id, id)
) STRICT;
