package main

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"io/fs"
	"strings"

	_ "github.com/jackc/pgx/v5/stdlib" // database/sql driver "pgx"
	_ "modernc.org/sqlite"             // database/sql driver "sqlite", pure Go

	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/resource"
)

// migrations holds the schema: migrations/sqlite and migrations/postgres,
// the same numbered files in each dialect.
//
//go:embed migrations
var migrations embed.FS

// openDB opens the database dsn names (a postgres:// URL, or else a SQLite
// file), applies the migrations it lacks and seeds the development branch.
func openDB(ctx context.Context, dsn string) (*sql.DB, query.Dialect, error) {
	driver, dialect := "sqlite", query.SQLite
	if strings.HasPrefix(dsn, "postgres://") || strings.HasPrefix(dsn, "postgresql://") {
		driver, dialect = "pgx", query.Postgres
	} else {
		dsn += "?_pragma=foreign_keys(1)&_pragma=busy_timeout(5000)"
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return nil, 0, err
	}
	if dialect == query.SQLite {
		// SQLite has one writer: one connection makes concurrent writes
		// wait for each other instead of failing with SQLITE_BUSY.
		db.SetMaxOpenConns(1)
	}
	if err := migrate(ctx, db, dialect); err != nil {
		db.Close()
		return nil, 0, fmt.Errorf("migrate: %w", err)
	}
	// The registry keeps the answers of writes sent with an Idempotency-Key
	// in a table of its own.
	if err := (&resource.Registry{DB: db, Dialect: dialect}).Migrate(ctx); err != nil {
		db.Close()
		return nil, 0, err
	}
	if _, err := db.ExecContext(ctx, "INSERT INTO branches (id, organization_id, name) VALUES ($1, $2, 'Main depot') ON CONFLICT DO NOTHING",
		devBranch, devOrganization); err != nil {
		db.Close()
		return nil, 0, fmt.Errorf("seed: %w", err)
	}
	return db, dialect, nil
}

// migrate applies, in name order and each in a transaction, the files of
// migrations/<dialect> that schema_migrations does not list yet. A service
// may as well run the same files with its usual migration tool.
func migrate(ctx context.Context, db *sql.DB, dialect query.Dialect) error {
	if _, err := db.ExecContext(ctx, "CREATE TABLE IF NOT EXISTS schema_migrations (name text PRIMARY KEY)"); err != nil {
		return err
	}
	dir := "migrations/" + dialect.String()
	files, err := fs.ReadDir(migrations, dir)
	if err != nil {
		return err
	}
	for _, f := range files {
		var applied int
		if err := db.QueryRowContext(ctx, "SELECT COUNT(*) FROM schema_migrations WHERE name = $1", f.Name()).Scan(&applied); err != nil {
			return err
		}
		if applied > 0 {
			continue
		}
		text, err := fs.ReadFile(migrations, dir+"/"+f.Name())
		if err != nil {
			return err
		}
		if err := inTx(ctx, db, func(tx *sql.Tx) error {
			if _, err := tx.ExecContext(ctx, string(text)); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, "INSERT INTO schema_migrations (name) VALUES ($1)", f.Name())
			return err
		}); err != nil {
			return fmt.Errorf("%s: %w", f.Name(), err)
		}
	}
	return nil
}

func inTx(ctx context.Context, db *sql.DB, f func(*sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := f(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// addBranch records a branch of an organization of the token service, named
// by its id, unless the branches table has it already.
func addBranch(ctx context.Context, db *sql.DB, org, branch string) error {
	_, err := db.ExecContext(ctx, "INSERT INTO branches (id, organization_id, name) VALUES ($1, $2, $1) ON CONFLICT DO NOTHING",
		strings.ToLower(branch), strings.ToLower(org))
	if err != nil {
		return fmt.Errorf("add branch %s: %w", branch, err)
	}
	return nil
}
