-- external_id: the record's id in the client's own system (an ERP's order
-- number), by which upserts (Prefer: resolution=merge-duplicates) and batch
-- updates find records. 1 to 200 characters or NULL, unique among the
-- records of its tenant scope: the branch for branch records, the
-- organization for organization records and for the organization-wide
-- (branch_id NULL) records of items, tariffs and zones. The partial unique
-- indexes enforce it whatever writes at once.

ALTER TABLE vehicles ADD COLUMN external_id text CHECK (char_length(external_id) BETWEEN 1 AND 200);
ALTER TABLE accounts ADD COLUMN external_id text CHECK (char_length(external_id) BETWEEN 1 AND 200);
ALTER TABLE quotations ADD COLUMN external_id text CHECK (char_length(external_id) BETWEEN 1 AND 200);
ALTER TABLE projects ADD COLUMN external_id text CHECK (char_length(external_id) BETWEEN 1 AND 200);
ALTER TABLE orders ADD COLUMN external_id text CHECK (char_length(external_id) BETWEEN 1 AND 200);
ALTER TABLE shipments ADD COLUMN external_id text CHECK (char_length(external_id) BETWEEN 1 AND 200);
ALTER TABLE trips ADD COLUMN external_id text CHECK (char_length(external_id) BETWEEN 1 AND 200);
ALTER TABLE invoices ADD COLUMN external_id text CHECK (char_length(external_id) BETWEEN 1 AND 200);
ALTER TABLE items ADD COLUMN external_id text CHECK (char_length(external_id) BETWEEN 1 AND 200);
ALTER TABLE tariffs ADD COLUMN external_id text CHECK (char_length(external_id) BETWEEN 1 AND 200);
ALTER TABLE zones ADD COLUMN external_id text CHECK (char_length(external_id) BETWEEN 1 AND 200);

CREATE UNIQUE INDEX vehicles_external_id ON vehicles (organization_id, external_id) WHERE external_id IS NOT NULL;
CREATE UNIQUE INDEX accounts_external_id ON accounts (branch_id, external_id) WHERE external_id IS NOT NULL;
CREATE UNIQUE INDEX quotations_external_id ON quotations (branch_id, external_id) WHERE external_id IS NOT NULL;
CREATE UNIQUE INDEX projects_external_id ON projects (branch_id, external_id) WHERE external_id IS NOT NULL;
CREATE UNIQUE INDEX orders_external_id ON orders (branch_id, external_id) WHERE external_id IS NOT NULL;
CREATE UNIQUE INDEX shipments_external_id ON shipments (branch_id, external_id) WHERE external_id IS NOT NULL;
CREATE UNIQUE INDEX trips_external_id ON trips (branch_id, external_id) WHERE external_id IS NOT NULL;
CREATE UNIQUE INDEX invoices_external_id ON invoices (branch_id, external_id) WHERE external_id IS NOT NULL;
CREATE UNIQUE INDEX items_external_id ON items (branch_id, external_id) WHERE external_id IS NOT NULL AND branch_id IS NOT NULL;
CREATE UNIQUE INDEX items_external_id_org ON items (organization_id, external_id) WHERE external_id IS NOT NULL AND branch_id IS NULL;
CREATE UNIQUE INDEX tariffs_external_id ON tariffs (branch_id, external_id) WHERE external_id IS NOT NULL AND branch_id IS NOT NULL;
CREATE UNIQUE INDEX tariffs_external_id_org ON tariffs (organization_id, external_id) WHERE external_id IS NOT NULL AND branch_id IS NULL;
CREATE UNIQUE INDEX zones_external_id ON zones (branch_id, external_id) WHERE external_id IS NOT NULL AND branch_id IS NOT NULL;
CREATE UNIQUE INDEX zones_external_id_org ON zones (organization_id, external_id) WHERE external_id IS NOT NULL AND branch_id IS NULL;
