-- Connected apps. oauth_app_uses records when a token of an app was last
-- issued for an organization (at issuance, not at each request).
-- oauth_cutoffs records each disconnection of an app from an organization:
-- the verifiers load the recent ones into memory and refuse the app's
-- tokens for the organization issued until then.
CREATE TABLE oauth_app_uses (
    client_id       text NOT NULL,
    organization_id text NOT NULL,
    last_used_at    timestamptz NOT NULL,
    PRIMARY KEY (organization_id, client_id)
);

CREATE TABLE oauth_cutoffs (
    organization_id text NOT NULL,
    client_id       text NOT NULL,
    at              timestamptz NOT NULL
);

CREATE INDEX oauth_cutoffs_at_idx ON oauth_cutoffs (at);
CREATE INDEX oauth_cutoffs_organization_idx ON oauth_cutoffs (organization_id, client_id);
-- Disconnection finds an organization's consents and the families of an
-- app in it.
CREATE INDEX oauth_grants_organization_idx ON oauth_grants (organization_id, client_id);
CREATE INDEX oauth_families_client_idx ON oauth_families (client_id, organization_id);
CREATE INDEX oauth_codes_unused_client_idx ON oauth_codes (client_id, organization_id) WHERE used_at IS NULL;
