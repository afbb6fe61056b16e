// Package integrationtest shows how to write integration tests for a
// resource of your own against a real PostgreSQL.
//
// This file stands for your code: a branch-scoped "tickets" resource, its
// PostgreSQL migration (migrations/*.sql, applied by Migrate), the branch
// lookup that tenancy needs, and NewRegistry, which puts them together.
// integration_test.go is the recipe to copy: each test gets a PostgreSQL
// schema of its own (from WAYBILL_TEST_DATABASE_URL, else a container that
// testcontainers-go starts), migrates it, serves the registry with
// httptest, signs tokens with a bearer.KeySet, and checks create, list,
// filters, the status flow and tenant isolation over HTTP.
package integrationtest

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"io/fs"

	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/resource"
	"github.com/waybillhq/waybill/tenancy"
)

// Tickets declares the tickets of a branch: /v1/{branch id}/tickets with
// the scopes svc:tickets:read and svc:tickets:write. A ticket is open, then
// pending or closed; closed is final.
func Tickets() *resource.Resource {
	return &resource.Resource{
		Name: "tickets", ScopeType: tenancy.Branch,
		Description: "Support tickets of a branch.",
		Fields: []resource.Field{
			{Name: "subject", Type: query.String, Create: true, Update: true, Required: true, Filterable: true, Sortable: true, MaxLength: 200,
				Description: "What the ticket is about."},
			{Name: "status", Type: query.Enum, Values: []string{"open", "pending", "closed"}, Create: true, Update: true, Filterable: true, Sortable: true,
				Description: "open, then pending or closed; closed is final."},
			{Name: "priority", Type: query.Integer, Create: true, Update: true, Filterable: true, Sortable: true, Min: resource.Bound(1), Max: resource.Bound(5),
				Description: "1 (highest) to 5; 3 unless set."},
			{Name: "customer_email", Type: query.String, Create: true, Update: true, Nullable: true, Filterable: true,
				Description: "Who to answer."},
		},
		Hooks: resource.StatusFlow("status", "open", map[string][]string{
			"open":    {"pending", "closed"},
			"pending": {"open", "closed"},
		}),
	}
}

// NewRegistry returns the API of the tickets over db, a PostgreSQL database
// that Migrate has migrated. verifier checks the bearer tokens (an
// *bearer.Verifier).
func NewRegistry(db *sql.DB, verifier tenancy.Verifier) (*resource.Registry, error) {
	reg := &resource.Registry{DB: db, Dialect: query.Postgres, Verifier: verifier, Branches: Branches{DB: db}}
	if err := reg.Register(Tickets()); err != nil {
		return nil, err
	}
	return reg, nil
}

// migrations are the schema's migrations, applied in name order.
//
//go:embed migrations/*.sql
var migrations embed.FS

// Migrate applies the migrations that db lacks, each in a transaction that
// records it in schema_migrations. Running it again changes nothing.
func Migrate(ctx context.Context, db *sql.DB) error {
	if _, err := db.ExecContext(ctx, `CREATE TABLE IF NOT EXISTS schema_migrations (name text PRIMARY KEY)`); err != nil {
		return fmt.Errorf("migrate: %w", err)
	}
	names, err := fs.Glob(migrations, "migrations/*.sql") // sorted
	if err != nil {
		return err
	}
	for _, name := range names {
		if err := apply(ctx, db, name); err != nil {
			return fmt.Errorf("migrate %s: %w", name, err)
		}
	}
	return nil
}

// apply runs the migration name unless schema_migrations records it.
func apply(ctx context.Context, db *sql.DB, name string) error {
	body, err := migrations.ReadFile(name)
	if err != nil {
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	defer tx.Rollback() // a no-op after Commit
	res, err := tx.ExecContext(ctx, `INSERT INTO schema_migrations (name) VALUES ($1) ON CONFLICT DO NOTHING`, name)
	if err != nil {
		return err
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return err // applied before
	}
	if _, err := tx.ExecContext(ctx, string(body)); err != nil {
		return err
	}
	return tx.Commit()
}

// Branches is the branches table, as tenancy asks about it.
type Branches struct{ DB *sql.DB }

// Organization returns the organization of a branch, or tenancy.ErrNoBranch.
func (b Branches) Organization(ctx context.Context, id string) (string, error) {
	var org string
	err := b.DB.QueryRowContext(ctx, `SELECT organization_id FROM branches WHERE id = $1`, id).Scan(&org)
	if errors.Is(err, sql.ErrNoRows) {
		return "", tenancy.ErrNoBranch
	}
	return org, err
}

// List returns the branch ids of an organization.
func (b Branches) List(ctx context.Context, org string) ([]string, error) {
	rows, err := b.DB.QueryContext(ctx, `SELECT id FROM branches WHERE organization_id = $1 ORDER BY id`, org)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var ids []string
	for rows.Next() {
		var id string
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}
