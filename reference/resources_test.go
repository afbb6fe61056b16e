package main

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/resource"
	"github.com/waybillhq/waybill/tenancy"
)

// resourceByName returns the declaration of the resource name.
func resourceByName(t *testing.T, name string) *resource.Resource {
	t.Helper()
	for _, r := range resources() {
		if r.Name == name {
			return r
		}
	}
	t.Fatalf("no resource %s", name)
	return nil
}

// fieldNames returns the names of the fields of r for which keep is true.
func fieldNames(r *resource.Resource, keep func(resource.Field) bool) []string {
	var names []string
	for _, f := range r.Fields {
		if keep(f) {
			names = append(names, f.Name)
		}
	}
	return names
}

// TestResourceDeclarations checks what can be checked of the declarations
// without the registry: names, scope types (SPEC section 2), references,
// and the rules every field must keep.
func TestResourceDeclarations(t *testing.T) {
	t.Parallel()
	wantScope := map[string]tenancy.ScopeType{
		"branches": tenancy.Organization, "organizations": tenancy.Organization, "users": tenancy.Organization,
		"master_data": tenancy.Organization, "vehicles": tenancy.Organization,
		"accounts": tenancy.Branch, "orders": tenancy.Branch, "projects": tenancy.Branch, "quotations": tenancy.Branch,
		"shipments": tenancy.Branch, "trips": tenancy.Branch, "invoices": tenancy.Branch,
		"items": tenancy.BranchOrNull, "tariffs": tenancy.BranchOrNull, "zones": tenancy.BranchOrNull,
	}
	readOnly := []string{"branches", "organizations", "users", "master_data"}

	all := resources()
	names := map[string]bool{}
	for _, r := range all {
		assert.False(t, names[r.Name], "%s is declared twice", r.Name)
		names[r.Name] = true
	}
	assert.ElementsMatch(t, slices.Collect(maps.Keys(wantScope)), slices.Collect(maps.Keys(names)))

	for _, r := range all {
		t.Run(r.Name, func(t *testing.T) {
			assert.Equal(t, wantScope[r.Name], r.ScopeType, "scope type")
			assert.Equal(t, slices.Contains(readOnly, r.Name), r.ReadOnly, "read-only")
			assert.NotEmpty(t, r.Description)
			assert.LessOrEqual(t, r.MaxLimit, query.MaxLimit)

			schema := &query.Schema{MaxLimit: r.MaxLimit, DefaultSort: r.DefaultSort, Reserved: []string{"organization_id", "branch_id"}}
			schema.Fields = append(schema.Fields, query.Field{Name: "id", Type: query.UUID, Filterable: true, Sortable: true},
				query.Field{Name: "created_at", Type: query.Timestamp, Filterable: true, Sortable: true})
			seen := map[string]bool{"id": true, "created_at": true, "updated_at": true}
			for _, f := range r.Fields {
				assert.False(t, seen[f.Name], "field %s declared twice or common", f.Name)
				seen[f.Name] = true
				assert.NotContains(t, []string{"organization_id", "branch_id"}, f.Name)
				assert.NotEmpty(t, f.Description, f.Name)
				assert.True(t, f.Filterable, "%s: every field is filterable", f.Name)
				if r.ReadOnly {
					assert.False(t, f.Create || f.Update, "%s of a read-only resource is writable", f.Name)
				}
				if f.Required {
					assert.True(t, f.Create, "%s is required but not creatable", f.Name)
					assert.False(t, f.Nullable, "%s is required and nullable", f.Name)
				}
				if f.References != "" {
					assert.Equal(t, query.UUID, f.Type, f.Name)
					assert.True(t, names[f.References], "%s references the unknown resource %s", f.Name, f.References)
					if resourceByName(t, f.References).ScopeType == tenancy.Branch {
						assert.Equal(t, tenancy.Branch, r.ScopeType, "%s: only a branch-scoped resource may reference a branch-scoped one", f.Name)
					}
				}
				if f.Min != nil || f.Max != nil {
					assert.Contains(t, []query.Type{query.Integer, query.Number}, f.Type, f.Name)
				}
				if f.Type == query.Integer || f.Type == query.Number {
					if !r.ReadOnly {
						require.NotNil(t, f.Min, "%s has no lower bound", f.Name)
						require.NotNil(t, f.Max, "%s has no upper bound", f.Name)
						assert.Equal(t, 0.0, *f.Min, f.Name)
					}
				}
				schema.Fields = append(schema.Fields, query.Field{Name: f.Name, Type: f.Type, Values: f.Values,
					Filterable: f.Filterable, Ops: f.Ops, Sortable: f.Sortable, Nullable: f.Nullable})
			}
			schema.Fields = append(schema.Fields, query.Field{Name: "updated_at", Type: query.Timestamp, Filterable: true, Sortable: true})
			require.NoError(t, schema.Validate(), "the list schema")

			if !r.ReadOnly {
				assert.NotEmpty(t, fieldNames(r, func(f resource.Field) bool { return f.Create }), "create whitelist")
				assert.NotEmpty(t, fieldNames(r, func(f resource.Field) bool { return f.Update }), "update whitelist")
			}
		})
	}
}

// TestQuotationAndAccountFields checks the two resources SPEC section 3
// spells out field by field.
func TestQuotationAndAccountFields(t *testing.T) {
	t.Parallel()
	create := func(f resource.Field) bool { return f.Create }
	update := func(f resource.Field) bool { return f.Update }
	filter := func(f resource.Field) bool { return f.Filterable }
	sort := func(f resource.Field) bool { return f.Sortable }
	required := func(f resource.Field) bool { return f.Required }

	q := resourceByName(t, "quotations")
	writable := []string{"account_id", "quotation_date", "valid_until", "status", "total_weight_kg", "total_volume_m3", "total_packages"}
	all := append([]string{"quotation_number"}, writable...)
	assert.Equal(t, all, fieldNames(q, func(resource.Field) bool { return true }))
	assert.Equal(t, writable, fieldNames(q, create))
	assert.Equal(t, writable, fieldNames(q, update))
	assert.Equal(t, all, fieldNames(q, filter))
	assert.Equal(t, all, fieldNames(q, sort))
	assert.Equal(t, []string{"account_id", "quotation_date", "valid_until"}, fieldNames(q, required))
	assert.Equal(t, []string{"draft", "sent", "accepted", "rejected", "cancelled", "expired"}, q.Fields[4].Values)
	assert.Equal(t, "accounts", q.Fields[1].References)
	for _, f := range q.Fields[5:] {
		assert.Equal(t, 0.0, *f.Min, f.Name)
	}
	assert.Equal(t, query.Integer, q.Fields[7].Type)
	assert.Equal(t, query.Number, q.Fields[6].Type)

	a := resourceByName(t, "accounts")
	fields := []string{"company_name", "email", "phone", "account_type", "status", "comment"}
	assert.Equal(t, fields, fieldNames(a, func(resource.Field) bool { return true }))
	assert.Equal(t, fields, fieldNames(a, create))
	assert.Equal(t, fields, fieldNames(a, update))
	assert.Equal(t, fields, fieldNames(a, filter))
	assert.Equal(t, []string{"company_name", "account_type", "status"}, fieldNames(a, sort))
	assert.Equal(t, []string{"company_name"}, fieldNames(a, required))
	assert.Equal(t, []string{"email", "phone", "comment"}, fieldNames(a, func(f resource.Field) bool { return f.Nullable }))
	assert.Equal(t, []string{"customer", "carrier"}, a.Fields[3].Values)
	assert.Equal(t, []string{"active", "inactive", "blocked"}, a.Fields[4].Values)
}

// columnsOf returns every column the resource's table or view must have.
func columnsOf(r *resource.Resource) []string {
	cols := []string{"id", "organization_id"}
	if r.ScopeType != tenancy.Organization {
		cols = append(cols, "branch_id")
	}
	cols = append(cols, "created_at", "updated_at")
	for _, f := range r.Fields {
		cols = append(cols, f.Name)
	}
	return cols
}

func tableOf(r *resource.Resource) string {
	if r.Table != "" {
		return r.Table
	}
	return r.Name
}

// TestResourceTables checks, on both databases, that the table or view of
// every resource has a column for every field and the tenant columns its
// scope type needs — and no branch_id for organization-scoped ones.
func TestResourceTables(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			db := openTestDB(t, b)
			for _, r := range resources() {
				cols := columnsOf(r)
				rows, err := db.QueryContext(t.Context(), "SELECT "+strings.Join(cols, ", ")+" FROM "+tableOf(r)+" LIMIT 0")
				require.NoError(t, err, r.Name)
				got, err := rows.Columns()
				require.NoError(t, err)
				require.NoError(t, rows.Close())
				assert.Equal(t, cols, got, r.Name)
				if r.ScopeType == tenancy.Organization {
					_, err := db.ExecContext(t.Context(), "SELECT branch_id FROM "+tableOf(r)+" LIMIT 0")
					assert.Error(t, err, "%s is organization-scoped and has no branch_id", r.Name)
				}
			}
		})
	}
}

// openTestDB opens and migrates a new database of the backend.
func openTestDB(t *testing.T, b backend) *sql.DB {
	t.Helper()
	db, dialect, err := openDB(t.Context(), b.url(t), defaultDBMaxConns)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	_, err = migrateDB(t.Context(), db, dialect)
	require.NoError(t, err)
	return db
}

// tenantFixture is an organization with two branches, and another
// organization with one.
type tenantFixture struct {
	org, north, south string
	otherOrg, other   string
}

func newTenantFixture(t *testing.T, db *sql.DB) tenantFixture {
	t.Helper()
	f := tenantFixture{org: newID(), north: newID(), south: newID(), otherOrg: newID(), other: newID()}
	mustExec(t, db, "INSERT INTO organizations (id, name) VALUES ($1, $2), ($3, $4)", f.org, "Acme", f.otherOrg, "Other")
	mustExec(t, db, "INSERT INTO branches (id, organization_id, name) VALUES ($1, $2, 'North'), ($3, $2, 'South'), ($4, $5, 'Elsewhere')",
		f.north, f.org, f.south, f.other, f.otherOrg)
	return f
}

func mustExec(t *testing.T, db *sql.DB, stmt string, args ...any) {
	t.Helper()
	_, err := db.ExecContext(t.Context(), stmt, args...)
	require.NoError(t, err, stmt)
}

// insertRow inserts a record as the generic handlers would: the tenant
// columns, the timestamps and the record's fields, Go values bound as the
// dialect wants them. It returns the new id.
func insertRow(ctx context.Context, q interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
}, d query.Dialect, table string, tenant tenancy.Tenant, branchColumn bool, rec resource.Record) (string, error) {
	id := newID()
	now := time.Now()
	cols := []string{"id", "organization_id", "created_at", "updated_at"}
	args := []any{id, tenant.OrganizationID, d.Timestamp(now), d.Timestamp(now)}
	if branchColumn {
		cols = append(cols, "branch_id")
		var branch any
		if tenant.BranchID != "" {
			branch = tenant.BranchID
		}
		args = append(args, branch)
	}
	for _, k := range slices.Sorted(maps.Keys(rec)) {
		v := rec[k]
		if tm, ok := v.(time.Time); ok {
			v = d.Timestamp(tm)
		}
		cols = append(cols, k)
		args = append(args, v)
	}
	marks := make([]string, len(args))
	for i := range marks {
		marks[i] = fmt.Sprintf("$%d", i+1)
	}
	_, err := q.ExecContext(ctx, "INSERT INTO "+table+" ("+strings.Join(cols, ", ")+") VALUES ("+strings.Join(marks, ", ")+")", args...)
	return id, err
}

// TestTenantForeignKeys checks that the database refuses a reference out of
// the tenant, on both databases: across branches for branch-scoped
// references, across organizations for the others.
func TestTenantForeignKeys(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			db := openTestDB(t, b)
			ctx := t.Context()
			f := newTenantFixture(t, db)
			north := tenancy.Tenant{OrganizationID: f.org, BranchID: f.north}
			south := tenancy.Tenant{OrganizationID: f.org, BranchID: f.south}
			other := tenancy.Tenant{OrganizationID: f.otherOrg, BranchID: f.other}
			orgWide := tenancy.Tenant{OrganizationID: f.org}

			account, err := insertRow(ctx, db, b.dialect, "accounts", north, true, resource.Record{"company_name": "Acme"})
			require.NoError(t, err)
			quotation := func(tenant tenancy.Tenant, number, account string) error {
				_, err := insertRow(ctx, db, b.dialect, "quotations", tenant, true, resource.Record{
					"quotation_number": number, "account_id": account, "quotation_date": "2026-03-01", "valid_until": "2026-03-31",
				})
				return err
			}
			require.NoError(t, quotation(north, "Q-1", account), "an account of the same branch")
			assert.Error(t, quotation(south, "Q-2", account), "an account of another branch")
			assert.Error(t, quotation(other, "Q-3", account), "an account of another organization")
			assert.Error(t, quotation(north, "Q-1", account), "a duplicate number in the branch")
			require.NoError(t, quotation(south, "Q-1", newAccount(t, db, b.dialect, south)), "the same number in another branch")

			vehicle, err := insertRow(ctx, db, b.dialect, "vehicles", orgWide, false, resource.Record{"plate": "HH-1", "vehicle_type": "truck"})
			require.NoError(t, err)
			_, err = insertRow(ctx, db, b.dialect, "vehicles", orgWide, false, resource.Record{"plate": "HH-1", "vehicle_type": "van"})
			assert.Error(t, err, "a duplicate plate in the organization")
			_, err = insertRow(ctx, db, b.dialect, "trips", south, true, resource.Record{"trip_number": "T-1", "vehicle_id": vehicle})
			assert.NoError(t, err, "a vehicle of the organization, from any branch")
			_, err = insertRow(ctx, db, b.dialect, "trips", other, true, resource.Record{"trip_number": "T-1", "vehicle_id": vehicle})
			assert.Error(t, err, "a vehicle of another organization")

			zone, err := insertRow(ctx, db, b.dialect, "zones", orgWide, true, resource.Record{"name": "Germany", "country_code": "DE"})
			require.NoError(t, err, "an organization-wide zone")
			_, err = insertRow(ctx, db, b.dialect, "tariffs", north, true, resource.Record{"name": "T", "zone_id": zone, "valid_from": "2026-01-01"})
			assert.NoError(t, err, "a branch tariff of an organization-wide zone")
			_, err = insertRow(ctx, db, b.dialect, "tariffs", other, true, resource.Record{"name": "T", "zone_id": zone, "valid_from": "2026-01-01"})
			assert.Error(t, err, "a zone of another organization")

			_, err = insertRow(ctx, db, b.dialect, "items", tenancy.Tenant{OrganizationID: f.org, BranchID: f.other}, true, resource.Record{"name": "Box"})
			assert.Error(t, err, "a branch of another organization")
			_, err = insertRow(ctx, db, b.dialect, "items", orgWide, true, resource.Record{"name": "Box", "sku": "B-1"})
			require.NoError(t, err)
			_, err = insertRow(ctx, db, b.dialect, "items", orgWide, true, resource.Record{"name": "Box again", "sku": "B-1"})
			assert.Error(t, err, "a duplicate SKU among organization-wide items")
			_, err = insertRow(ctx, db, b.dialect, "items", north, true, resource.Record{"name": "Box of North", "sku": "B-1"})
			assert.NoError(t, err, "a branch may have an item of an organization-wide SKU")
			for range 2 {
				_, err = insertRow(ctx, db, b.dialect, "items", north, true, resource.Record{"name": "No SKU"})
				assert.NoError(t, err, "items without a SKU")
			}

			_, err = db.ExecContext(ctx, "DELETE FROM accounts WHERE id = $1", account)
			assert.Error(t, err, "an account that a quotation references")
		})
	}
}

func newAccount(t *testing.T, db *sql.DB, d query.Dialect, tenant tenancy.Tenant) string {
	t.Helper()
	id, err := insertRow(t.Context(), db, d, "accounts", tenant, true, resource.Record{"company_name": "Account " + tenant.BranchID[:8]})
	require.NoError(t, err)
	return id
}

// TestResourcesCreate runs the create hooks of every writable resource on
// a valid body inside a transaction and stores the result as the generic
// handlers would, on both databases: the hooks' values bind on both.
func TestResourcesCreate(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			db := openTestDB(t, b)
			f := newTenantFixture(t, db)
			ids := map[string]string{}
			now := time.Now().UTC().Truncate(time.Second)
			year := time.Now().UTC().Year()
			bodies := []struct {
				name string
				body func() resource.Record
				want resource.Record // values after the hooks
				set  []string        // fields the hooks set to some value
			}{
				{"vehicles", func() resource.Record {
					return resource.Record{"plate": " hh-wb 7 ", "vehicle_type": "van", "capacity_kg": 1200.4567}
				}, resource.Record{"plate": "HH-WB 7", "capacity_kg": 1200.457, "capacity_m3": 0.0, "active": true}, nil},
				{"accounts", func() resource.Record { return resource.Record{"company_name": " Acme ", "email": "ops@acme.example"} },
					resource.Record{"company_name": "Acme", "account_type": "customer", "status": "active"}, nil},
				{"projects", func() resource.Record {
					return resource.Record{"name": "Site", "account_id": ids["accounts"], "start_date": "2026-01-01", "end_date": "2026-02-01"}
				}, resource.Record{"status": "active"}, nil},
				{"quotations", func() resource.Record {
					return resource.Record{"account_id": ids["accounts"], "quotation_date": "2026-03-01", "valid_until": "2026-03-31", "total_volume_m3": 1.23456}
				}, resource.Record{"quotation_number": fmt.Sprintf("Q-%d-000001", year), "status": "draft", "total_volume_m3": 1.235,
					"total_weight_kg": 0.0, "total_packages": int64(0)}, nil},
				{"orders", func() resource.Record {
					return resource.Record{"account_id": ids["accounts"], "project_id": ids["projects"], "quotation_id": ids["quotations"],
						"pickup_address": "Hafenstraße 7, 20457 Hamburg", "delivery_address": "Zollhof 2, 80331 München",
						"pickup_from": now, "pickup_until": now.Add(4 * time.Hour), "delivery_from": now.Add(24 * time.Hour)}
				}, resource.Record{"order_number": fmt.Sprintf("O-%d-000001", year), "status": "draft", "packages": int64(0)}, nil},
				{"trips", func() resource.Record {
					return resource.Record{"vehicle_id": ids["vehicles"], "planned_start": now, "planned_end": now.Add(8 * time.Hour), "status": "in_progress"}
				}, resource.Record{"trip_number": fmt.Sprintf("T-%d-000001", year)}, []string{"actual_start"}},
				{"shipments", func() resource.Record {
					return resource.Record{"order_id": ids["orders"], "trip_id": ids["trips"], "packages": int64(3)}
				}, resource.Record{"tracking_number": fmt.Sprintf("S-%d-000001", year), "status": "planned"}, nil},
				{"invoices", func() resource.Record {
					return resource.Record{"account_id": ids["accounts"], "order_id": ids["orders"], "invoice_date": "2026-04-01", "due_date": "2026-05-01",
						"net_amount": 100.0, "tax_amount": 19.0}
				}, resource.Record{"invoice_number": fmt.Sprintf("INV-%d-000001", year), "total_amount": 119.0, "currency": "EUR", "status": "draft"}, nil},
				{"zones", func() resource.Record {
					return resource.Record{"name": "Hamburg", "country_code": "DE", "postal_code_from": "20000"}
				}, nil, nil},
				{"items", func() resource.Record { return resource.Record{"name": "Pallet", "sku": "P-1"} }, resource.Record{"unit": "pcs"}, nil},
				{"tariffs", func() resource.Record {
					return resource.Record{"name": "Local", "zone_id": ids["zones"], "valid_from": "2026-01-01", "price_per_kg": 0.12345}
				}, resource.Record{"price_per_kg": 0.1235, "currency": "EUR"}, nil},
			}
			for _, tc := range bodies {
				r := resourceByName(t, tc.name)
				tenant := tenancy.Tenant{OrganizationID: f.org, BranchID: f.north}
				if r.ScopeType == tenancy.Organization {
					tenant.BranchID = ""
				}
				w := &resource.Write{Resource: r, Tenant: tenant, Changes: tc.body(), Dialect: b.dialect, Time: time.Now()}
				err := inTx(t.Context(), db, func(tx *sql.Tx) error {
					if err := r.Hooks.BeforeCreate(t.Context(), tx, w); err != nil {
						return err
					}
					for k := range w.Changes {
						assert.True(t, slices.ContainsFunc(r.Fields, func(f resource.Field) bool { return f.Name == k }), "%s: hooks set the unknown field %s", tc.name, k)
					}
					var err error
					ids[tc.name], err = insertRow(t.Context(), tx, b.dialect, tableOf(r), tenant, r.ScopeType != tenancy.Organization, w.Changes)
					return err
				})
				require.NoError(t, err, tc.name)
				for k, v := range tc.want {
					assert.Equal(t, v, w.Changes[k], "%s.%s", tc.name, k)
				}
				for _, k := range tc.set {
					assert.NotNil(t, w.Changes[k], "%s.%s is set", tc.name, k)
				}
			}
			var n int
			for _, tc := range bodies {
				require.NoError(t, db.QueryRowContext(t.Context(), "SELECT count(*) FROM "+tc.name+" WHERE id = $1", ids[tc.name]).Scan(&n))
				assert.Equal(t, 1, n, tc.name)
			}
		})
	}
}
