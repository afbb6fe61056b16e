-- An account's email and phone are NULL when nobody gave them, as the API
-- returns them; they were '' before. An empty string that a client sent is
-- indistinguishable from that default and becomes NULL too.
--
-- SQLite cannot drop a NOT NULL, so the table is built anew. The rows that
-- reference accounts are checked at the commit (defer_foreign_keys, which
-- works inside the migration's transaction where foreign_keys cannot be
-- turned off): dropping the table counts them as violations, inserting the
-- same accounts again clears them, and a missing account fails the commit.
PRAGMA defer_foreign_keys = ON;

CREATE TEMP TABLE accounts_before AS SELECT * FROM accounts;

DROP TABLE accounts;

CREATE TABLE accounts (
    id              text  NOT NULL PRIMARY KEY,
    organization_id text  NOT NULL REFERENCES organizations (id),
    branch_id       text  NOT NULL,
    created_at      text  NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f000Z', 'now')),
    updated_at      text  NOT NULL DEFAULT (strftime('%Y-%m-%dT%H:%M:%f000Z', 'now')),
    company_name    text  NOT NULL,
    email           text,
    phone           text,
    account_type    text  NOT NULL DEFAULT 'customer',
    status          text  NOT NULL DEFAULT 'active',
    comment         text,
    UNIQUE (organization_id, id),
    UNIQUE (branch_id, id),
    FOREIGN KEY (organization_id, branch_id) REFERENCES branches (organization_id, id)
) STRICT;

INSERT INTO accounts (id, organization_id, branch_id, created_at, updated_at, company_name, email, phone, account_type, status, comment)
SELECT id, organization_id, branch_id, created_at, updated_at, company_name, NULLIF(email, ''), NULLIF(phone, ''), account_type, status, comment
FROM accounts_before;

DROP TABLE accounts_before;

CREATE INDEX accounts_by_created ON accounts (branch_id, created_at, id);
CREATE INDEX accounts_by_name ON accounts (branch_id, company_name, id);
CREATE INDEX accounts_by_status ON accounts (branch_id, status, account_type);
