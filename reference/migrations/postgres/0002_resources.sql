-- The tables and views behind the API's fifteen resources (SPEC section 3),
-- the counters of generated numbers and the marker of the demo seed.
--
-- Every resource reads one table or view whose columns are named like its
-- fields: id, organization_id, branch_id (NOT NULL on branch-scoped tables,
-- NULL-able on branch-or-null ones — NULL is an organization-wide record —
-- and absent on organization-scoped ones), created_at, updated_at, then one
-- column per field. The server writes the tenant columns and the timestamps;
-- the defaults below serve plain SQL (the demo seed, migrations).
--
-- Foreign keys keep references inside the tenant, as a backstop of the
-- checks the server makes first: every table is UNIQUE (organization_id, id)
-- and branch-scoped ones also UNIQUE (branch_id, id); a reference from a
-- branch-scoped table to a branch-scoped one is (branch_id, x_id), so it
-- cannot cross branches; every other reference is (organization_id, x_id),
-- so it cannot cross organizations. Money is numeric(14,2), rates per unit
-- numeric(14,4), weights and volumes numeric(14,3).

-- Read-only resources ------------------------------------------------------

CREATE VIEW api_organizations AS
    SELECT id, id AS organization_id, name, created_at, created_at AS updated_at
    FROM organizations;

CREATE VIEW api_branches AS
    SELECT id, organization_id, name, created_at, created_at AS updated_at
    FROM branches;

-- One row per membership: a user of two organizations is listed in both.
-- The password hash is never part of it.
CREATE VIEW api_users AS
    SELECT u.id, m.organization_id, u.email, m.admin, u.created_at, u.created_at AS updated_at
    FROM users u
    JOIN memberships m ON m.user_id = u.id;

CREATE INDEX branches_by_created ON branches (organization_id, created_at, id);

-- The organization's reference lists: package types, units, currencies,
-- countries and vehicle types, seeded for every organization.
CREATE TABLE master_data (
    id              uuid        PRIMARY KEY,
    organization_id uuid        NOT NULL REFERENCES organizations (id),
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    category        text        NOT NULL,
    code            text        NOT NULL,
    label           text        NOT NULL,
    UNIQUE (organization_id, id),
    UNIQUE (organization_id, category, code)
);

CREATE INDEX master_data_by_created ON master_data (organization_id, created_at, id);

-- Organization-scoped ----------------------------------------------------

CREATE TABLE vehicles (
    id              uuid          PRIMARY KEY,
    organization_id uuid          NOT NULL REFERENCES organizations (id),
    created_at      timestamptz   NOT NULL DEFAULT now(),
    updated_at      timestamptz   NOT NULL DEFAULT now(),
    plate           text          NOT NULL,
    vehicle_type    text          NOT NULL,
    capacity_kg     numeric(14,3) NOT NULL DEFAULT 0,
    capacity_m3     numeric(14,3) NOT NULL DEFAULT 0,
    active          boolean       NOT NULL DEFAULT true,
    UNIQUE (organization_id, id),
    UNIQUE (organization_id, plate)
);

CREATE INDEX vehicles_by_created ON vehicles (organization_id, created_at, id);
CREATE INDEX vehicles_by_type ON vehicles (organization_id, vehicle_type);

-- Branch-scoped ----------------------------------------------------------

CREATE TABLE accounts (
    id              uuid        PRIMARY KEY,
    organization_id uuid        NOT NULL REFERENCES organizations (id),
    branch_id       uuid        NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    company_name    text        NOT NULL,
    email           text        NOT NULL DEFAULT '',
    phone           text        NOT NULL DEFAULT '',
    account_type    text        NOT NULL DEFAULT 'customer',
    status          text        NOT NULL DEFAULT 'active',
    comment         text,
    UNIQUE (organization_id, id),
    UNIQUE (branch_id, id),
    FOREIGN KEY (organization_id, branch_id) REFERENCES branches (organization_id, id)
);

CREATE INDEX accounts_by_created ON accounts (branch_id, created_at, id);
CREATE INDEX accounts_by_name ON accounts (branch_id, company_name, id);
CREATE INDEX accounts_by_status ON accounts (branch_id, status, account_type);

CREATE TABLE projects (
    id              uuid        PRIMARY KEY,
    organization_id uuid        NOT NULL REFERENCES organizations (id),
    branch_id       uuid        NOT NULL,
    created_at      timestamptz NOT NULL DEFAULT now(),
    updated_at      timestamptz NOT NULL DEFAULT now(),
    name            text        NOT NULL,
    code            text,
    account_id      uuid,
    status          text        NOT NULL DEFAULT 'active',
    start_date      date,
    end_date        date,
    description     text,
    UNIQUE (organization_id, id),
    UNIQUE (branch_id, id),
    UNIQUE (branch_id, code),
    FOREIGN KEY (organization_id, branch_id) REFERENCES branches (organization_id, id),
    FOREIGN KEY (branch_id, account_id) REFERENCES accounts (branch_id, id)
);

CREATE INDEX projects_by_created ON projects (branch_id, created_at, id);
CREATE INDEX projects_by_status ON projects (branch_id, status);
CREATE INDEX projects_by_account ON projects (branch_id, account_id);

CREATE TABLE quotations (
    id               uuid          PRIMARY KEY,
    organization_id  uuid          NOT NULL REFERENCES organizations (id),
    branch_id        uuid          NOT NULL,
    created_at       timestamptz   NOT NULL DEFAULT now(),
    updated_at       timestamptz   NOT NULL DEFAULT now(),
    quotation_number text          NOT NULL,
    account_id       uuid          NOT NULL,
    quotation_date   date          NOT NULL,
    valid_until      date          NOT NULL,
    status           text          NOT NULL DEFAULT 'draft',
    total_weight_kg  numeric(14,3) NOT NULL DEFAULT 0,
    total_volume_m3  numeric(14,3) NOT NULL DEFAULT 0,
    total_packages   bigint        NOT NULL DEFAULT 0,
    UNIQUE (organization_id, id),
    UNIQUE (branch_id, id),
    UNIQUE (branch_id, quotation_number),
    FOREIGN KEY (organization_id, branch_id) REFERENCES branches (organization_id, id),
    FOREIGN KEY (branch_id, account_id) REFERENCES accounts (branch_id, id)
);

CREATE INDEX quotations_by_created ON quotations (branch_id, created_at, id);
-- Counts and lists by status and validity ("sent quotations that expire
-- before ..."), answered from the index alone.
CREATE INDEX quotations_count ON quotations (branch_id, status, valid_until) INCLUDE (organization_id);
CREATE INDEX quotations_by_date ON quotations (branch_id, quotation_date, id);
CREATE INDEX quotations_by_account ON quotations (branch_id, account_id);

CREATE TABLE orders (
    id               uuid          PRIMARY KEY,
    organization_id  uuid          NOT NULL REFERENCES organizations (id),
    branch_id        uuid          NOT NULL,
    created_at       timestamptz   NOT NULL DEFAULT now(),
    updated_at       timestamptz   NOT NULL DEFAULT now(),
    order_number     text          NOT NULL,
    account_id       uuid          NOT NULL,
    project_id       uuid,
    quotation_id     uuid,
    status           text          NOT NULL DEFAULT 'draft',
    pickup_address   text          NOT NULL,
    pickup_from      timestamptz,
    pickup_until     timestamptz,
    delivery_address text          NOT NULL,
    delivery_from    timestamptz,
    delivery_until   timestamptz,
    weight_kg        numeric(14,3) NOT NULL DEFAULT 0,
    volume_m3        numeric(14,3) NOT NULL DEFAULT 0,
    packages         bigint        NOT NULL DEFAULT 0,
    reference        text,
    UNIQUE (organization_id, id),
    UNIQUE (branch_id, id),
    UNIQUE (branch_id, order_number),
    FOREIGN KEY (organization_id, branch_id) REFERENCES branches (organization_id, id),
    FOREIGN KEY (branch_id, account_id) REFERENCES accounts (branch_id, id),
    FOREIGN KEY (branch_id, project_id) REFERENCES projects (branch_id, id),
    FOREIGN KEY (branch_id, quotation_id) REFERENCES quotations (branch_id, id)
);

CREATE INDEX orders_by_created ON orders (branch_id, created_at, id);
CREATE INDEX orders_by_status ON orders (branch_id, status, pickup_from);
CREATE INDEX orders_by_pickup ON orders (branch_id, pickup_from, id);
CREATE INDEX orders_by_delivery ON orders (branch_id, delivery_from, id);
CREATE INDEX orders_by_account ON orders (branch_id, account_id);
CREATE INDEX orders_by_project ON orders (branch_id, project_id);
CREATE INDEX orders_by_quotation ON orders (branch_id, quotation_id);

CREATE TABLE trips (
    id              uuid         PRIMARY KEY,
    organization_id uuid         NOT NULL REFERENCES organizations (id),
    branch_id       uuid         NOT NULL,
    created_at      timestamptz  NOT NULL DEFAULT now(),
    updated_at      timestamptz  NOT NULL DEFAULT now(),
    trip_number     text         NOT NULL,
    vehicle_id      uuid,
    driver_name     text,
    driver_phone    text,
    status          text         NOT NULL DEFAULT 'planned',
    planned_start   timestamptz,
    planned_end     timestamptz,
    actual_start    timestamptz,
    actual_end      timestamptz,
    UNIQUE (organization_id, id),
    UNIQUE (branch_id, id),
    UNIQUE (branch_id, trip_number),
    FOREIGN KEY (organization_id, branch_id) REFERENCES branches (organization_id, id),
    -- Vehicles belong to the organization: any branch may use them.
    FOREIGN KEY (organization_id, vehicle_id) REFERENCES vehicles (organization_id, id)
);

CREATE INDEX trips_by_created ON trips (branch_id, created_at, id);
CREATE INDEX trips_by_status ON trips (branch_id, status, planned_start);
CREATE INDEX trips_by_planned_start ON trips (branch_id, planned_start, id);
CREATE INDEX trips_by_vehicle ON trips (organization_id, vehicle_id);

CREATE TABLE shipments (
    id              uuid          PRIMARY KEY,
    organization_id uuid          NOT NULL REFERENCES organizations (id),
    branch_id       uuid          NOT NULL,
    created_at      timestamptz   NOT NULL DEFAULT now(),
    updated_at      timestamptz   NOT NULL DEFAULT now(),
    tracking_number text          NOT NULL,
    order_id        uuid          NOT NULL,
    trip_id         uuid,
    status          text          NOT NULL DEFAULT 'planned',
    weight_kg       numeric(14,3) NOT NULL DEFAULT 0,
    volume_m3       numeric(14,3) NOT NULL DEFAULT 0,
    packages        bigint        NOT NULL DEFAULT 0,
    delivered_at    timestamptz,
    UNIQUE (organization_id, id),
    UNIQUE (branch_id, id),
    UNIQUE (branch_id, tracking_number),
    FOREIGN KEY (organization_id, branch_id) REFERENCES branches (organization_id, id),
    FOREIGN KEY (branch_id, order_id) REFERENCES orders (branch_id, id),
    FOREIGN KEY (branch_id, trip_id) REFERENCES trips (branch_id, id)
);

CREATE INDEX shipments_by_created ON shipments (branch_id, created_at, id);
CREATE INDEX shipments_by_status ON shipments (branch_id, status);
CREATE INDEX shipments_by_order ON shipments (branch_id, order_id);
CREATE INDEX shipments_by_trip ON shipments (branch_id, trip_id);

CREATE TABLE invoices (
    id              uuid          PRIMARY KEY,
    organization_id uuid          NOT NULL REFERENCES organizations (id),
    branch_id       uuid          NOT NULL,
    created_at      timestamptz   NOT NULL DEFAULT now(),
    updated_at      timestamptz   NOT NULL DEFAULT now(),
    invoice_number  text          NOT NULL,
    account_id      uuid          NOT NULL,
    order_id        uuid,
    invoice_date    date          NOT NULL,
    due_date        date          NOT NULL,
    currency        text          NOT NULL DEFAULT 'EUR',
    net_amount      numeric(14,2) NOT NULL DEFAULT 0,
    tax_amount      numeric(14,2) NOT NULL DEFAULT 0,
    total_amount    numeric(14,2) NOT NULL DEFAULT 0,
    status          text          NOT NULL DEFAULT 'draft',
    UNIQUE (organization_id, id),
    UNIQUE (branch_id, id),
    UNIQUE (branch_id, invoice_number),
    FOREIGN KEY (organization_id, branch_id) REFERENCES branches (organization_id, id),
    FOREIGN KEY (branch_id, account_id) REFERENCES accounts (branch_id, id),
    FOREIGN KEY (branch_id, order_id) REFERENCES orders (branch_id, id)
);

CREATE INDEX invoices_by_created ON invoices (branch_id, created_at, id);
CREATE INDEX invoices_by_status ON invoices (branch_id, status, due_date);
CREATE INDEX invoices_by_date ON invoices (branch_id, invoice_date, id);
CREATE INDEX invoices_by_account ON invoices (branch_id, account_id);
CREATE INDEX invoices_by_order ON invoices (branch_id, order_id);

-- Branch-or-null: branch_id NULL is a record of the whole organization,
-- which every branch sees. Lists read (organization_id, created_at, id) and
-- keep the rows of the branch and the NULL ones.

CREATE TABLE zones (
    id               uuid        PRIMARY KEY,
    organization_id  uuid        NOT NULL REFERENCES organizations (id),
    branch_id        uuid,
    created_at       timestamptz NOT NULL DEFAULT now(),
    updated_at       timestamptz NOT NULL DEFAULT now(),
    name             text        NOT NULL,
    country_code     text        NOT NULL,
    postal_code_from text,
    postal_code_to   text,
    UNIQUE (organization_id, id),
    UNIQUE (branch_id, id),
    FOREIGN KEY (organization_id, branch_id) REFERENCES branches (organization_id, id)
);

CREATE INDEX zones_by_created ON zones (organization_id, created_at, id);
CREATE INDEX zones_by_country ON zones (organization_id, country_code, postal_code_from);

CREATE TABLE items (
    id              uuid          PRIMARY KEY,
    organization_id uuid          NOT NULL REFERENCES organizations (id),
    branch_id       uuid,
    created_at      timestamptz   NOT NULL DEFAULT now(),
    updated_at      timestamptz   NOT NULL DEFAULT now(),
    sku             text,
    name            text          NOT NULL,
    unit            text          NOT NULL DEFAULT 'pcs',
    weight_kg       numeric(14,3) NOT NULL DEFAULT 0,
    volume_m3       numeric(14,3) NOT NULL DEFAULT 0,
    UNIQUE (organization_id, id),
    UNIQUE (branch_id, id),
    FOREIGN KEY (organization_id, branch_id) REFERENCES branches (organization_id, id)
);

CREATE INDEX items_by_created ON items (organization_id, created_at, id);
-- A SKU names one item per branch, and one organization-wide item; items
-- without a SKU are not constrained.
CREATE UNIQUE INDEX items_sku ON items (organization_id, coalesce(branch_id, '00000000-0000-0000-0000-000000000000'::uuid), sku);

CREATE TABLE tariffs (
    id              uuid          PRIMARY KEY,
    organization_id uuid          NOT NULL REFERENCES organizations (id),
    branch_id       uuid,
    created_at      timestamptz   NOT NULL DEFAULT now(),
    updated_at      timestamptz   NOT NULL DEFAULT now(),
    name            text          NOT NULL,
    zone_id         uuid,
    price_per_kg    numeric(14,4) NOT NULL DEFAULT 0,
    price_per_m3    numeric(14,4) NOT NULL DEFAULT 0,
    minimum_price   numeric(14,2) NOT NULL DEFAULT 0,
    currency        text          NOT NULL DEFAULT 'EUR',
    valid_from      date          NOT NULL,
    valid_until     date,
    UNIQUE (organization_id, id),
    UNIQUE (branch_id, id),
    FOREIGN KEY (organization_id, branch_id) REFERENCES branches (organization_id, id),
    FOREIGN KEY (organization_id, zone_id) REFERENCES zones (organization_id, id)
);

CREATE INDEX tariffs_by_created ON tariffs (organization_id, created_at, id);
CREATE INDEX tariffs_by_validity ON tariffs (organization_id, valid_from, valid_until);
CREATE INDEX tariffs_by_zone ON tariffs (organization_id, zone_id);

-- Generated numbers ------------------------------------------------------

-- The counter of one kind of number (quotation, order, ...) of one branch
-- and year: next_value is the number the next record gets. Taken with an
-- upsert inside the write's transaction, so numbers have no duplicates, and
-- a write that fails or rolls back gives its number back.
CREATE TABLE number_sequences (
    branch_id  uuid    NOT NULL REFERENCES branches (id),
    kind       text    NOT NULL,
    year       integer NOT NULL,
    next_value bigint  NOT NULL,
    PRIMARY KEY (branch_id, kind, year)
);

-- The demo seed ----------------------------------------------------------

-- One row once "waybill serve --demo" has seeded its organization; client_id
-- is set once the demo app is registered.
CREATE TABLE demo_seed (
    id              integer     PRIMARY KEY CHECK (id = 1),
    organization_id uuid        NOT NULL REFERENCES organizations (id),
    client_id       text,
    created_at      timestamptz NOT NULL DEFAULT now()
);
