-- The tenancy tables: organizations own branches; users belong to
-- organizations through memberships. Business tables (later migrations)
-- carry organization_id, and branch-scoped ones (organization_id, branch_id)
-- with a foreign key to branches (organization_id, id), so a record can never
-- point at a branch of another organization.
--
-- SQLite keeps uuids as text (lower-case, canonical form), booleans as
-- integers 0 and 1, and timestamps as text in the layout
-- 2006-01-02T15:04:05.000000Z (UTC, microseconds; query.SQLiteTimestampLayout)
-- so that text order is time order. Tables are STRICT so that a value of the
-- wrong type is refused as PostgreSQL would refuse it.

CREATE TABLE organizations (
    id         text NOT NULL PRIMARY KEY,
    name       text NOT NULL,
    created_at text NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f000Z', 'now'))
) STRICT;

CREATE TABLE branches (
    id              text NOT NULL PRIMARY KEY,
    organization_id text NOT NULL REFERENCES organizations (id),
    name            text NOT NULL,
    created_at      text NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f000Z', 'now')),
    -- The target of composite foreign keys (organization_id, branch_id); its
    -- index also serves "the branches of an organization".
    UNIQUE (organization_id, id)
) STRICT;

-- email is stored lower-cased by the application.
CREATE TABLE users (
    id            text NOT NULL PRIMARY KEY,
    email         text NOT NULL UNIQUE,
    password_hash text NOT NULL,
    created_at    text NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f000Z', 'now'))
) STRICT;

CREATE TABLE memberships (
    user_id         text    NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    organization_id text    NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    admin           integer NOT NULL DEFAULT 0 CHECK (admin IN (0, 1)),
    PRIMARY KEY (user_id, organization_id)
) STRICT;

CREATE INDEX memberships_organization_id ON memberships (organization_id);
