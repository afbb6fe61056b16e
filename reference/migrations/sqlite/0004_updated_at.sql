-- Indexes for incremental sync: filter=updated_at:gt:T&sort=updated_at:asc, paged
-- by cursor, reads each resource in index order (scope column, updated_at, id).
CREATE INDEX master_data_by_updated ON master_data (organization_id, updated_at, id);
CREATE INDEX vehicles_by_updated ON vehicles (organization_id, updated_at, id);
CREATE INDEX accounts_by_updated ON accounts (branch_id, updated_at, id);
CREATE INDEX projects_by_updated ON projects (branch_id, updated_at, id);
CREATE INDEX quotations_by_updated ON quotations (branch_id, updated_at, id);
CREATE INDEX orders_by_updated ON orders (branch_id, updated_at, id);
CREATE INDEX trips_by_updated ON trips (branch_id, updated_at, id);
CREATE INDEX shipments_by_updated ON shipments (branch_id, updated_at, id);
CREATE INDEX invoices_by_updated ON invoices (branch_id, updated_at, id);
CREATE INDEX zones_by_updated ON zones (organization_id, updated_at, id);
CREATE INDEX items_by_updated ON items (organization_id, updated_at, id);
CREATE INDEX tariffs_by_updated ON tariffs (organization_id, updated_at, id);
