-- The branches the service knows, for tenancy, and the tickets of each branch.
CREATE TABLE branches (
	id              uuid PRIMARY KEY,
	organization_id uuid NOT NULL
);

CREATE TABLE tickets (
	id              uuid PRIMARY KEY,
	organization_id uuid NOT NULL,
	branch_id       uuid NOT NULL REFERENCES branches,
	created_at      timestamptz NOT NULL,
	updated_at      timestamptz NOT NULL,
	subject         text NOT NULL,
	status          text NOT NULL DEFAULT 'open' CHECK (status IN ('open', 'pending', 'closed')),
	priority        integer NOT NULL DEFAULT 3 CHECK (priority BETWEEN 1 AND 5),
	customer_email  text
);

CREATE INDEX tickets_by_branch ON tickets (organization_id, branch_id, created_at);
