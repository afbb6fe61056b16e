-- The tenancy tables: organizations own branches; users belong to
-- organizations through memberships. Business tables (later migrations)
-- carry organization_id, and branch-scoped ones (organization_id, branch_id)
-- with a foreign key to branches (organization_id, id), so a record can never
-- point at a branch of another organization.

CREATE TABLE organizations (
    id         uuid        PRIMARY KEY,
    name       text        NOT NULL,
    created_at timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE branches (
    id              uuid        PRIMARY KEY,
    organization_id uuid        NOT NULL REFERENCES organizations (id),
    name            text        NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    -- The target of composite foreign keys (organization_id, branch_id); its
    -- index also serves "the branches of an organization".
    UNIQUE (organization_id, id)
);

-- email is stored lower-cased by the application.
CREATE TABLE users (
    id            uuid        PRIMARY KEY,
    email         text        NOT NULL UNIQUE,
    password_hash text        NOT NULL,
    created_at    timestamptz NOT NULL DEFAULT now()
);

CREATE TABLE memberships (
    user_id         uuid    NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    organization_id uuid    NOT NULL REFERENCES organizations (id) ON DELETE CASCADE,
    admin           boolean NOT NULL DEFAULT false,
    PRIMARY KEY (user_id, organization_id)
);

CREATE INDEX memberships_organization_id ON memberships (organization_id);
