package main

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"flag"
	"fmt"
	"net/url"
	"path/filepath"
	"strings"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	_ "modernc.org/sqlite"             // registers the "sqlite" database/sql driver

	"github.com/waybillhq/waybill/internal/migrate"
)

// defaultDatabaseURL is the database of every command when neither
// --database-url nor WAYBILL_DATABASE_URL names one: a SQLite file in the
// working directory, so that the binary runs with nothing installed.
const defaultDatabaseURL = "sqlite://waybill.db"

// databaseURLFlag declares --database-url, bound to p, on fs: the flag of
// every command that opens a database.
func databaseURLFlag(fs *flag.FlagSet, p *string) {
	fs.StringVar(p, "database-url", defaultDatabaseURL, "database `URL`: postgres://... (any pgx URL) or sqlite://PATH (relative, or absolute with a leading /)")
}

// migrationsTable records the versions of the reference server's own
// migrations. Libraries that keep tables of their own record theirs in
// tables of their own.
const migrationsTable = "waybill_schema_migrations"

// migrations holds the schema of the reference server, one directory per
// dialect, applied by migrateDB.
//
//go:embed migrations/postgres/*.sql migrations/sqlite/*.sql
var migrations embed.FS

// sqlitePragmas is the query of the SQLite DSN: modernc.org/sqlite runs
// these pragmas on every connection it opens. busy_timeout comes first, so
// that the switch to WAL already waits for other connections.
const sqlitePragmas = "_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)"

// openTimeout bounds the first connection to the database.
const openTimeout = 30 * time.Second

// openDB opens the database that rawURL names and checks that it answers:
//
//   - postgres://... or postgresql://...: PostgreSQL, any URL that pgx
//     accepts, with the database/sql driver of pgx v5;
//   - sqlite://PATH: a SQLite file, with modernc.org/sqlite. PATH is
//     relative to the working directory, or absolute when it starts with /
//     (sqlite:///var/lib/waybill.db). Every connection has foreign keys on,
//     a busy timeout of 5 s and the WAL journal.
//
// The pool of a SQLite database holds a single connection, so that the
// writes of the process are serialized and a transaction that reads then
// writes never fails with SQLITE_BUSY because another connection of the
// same process wrote first. Code that holds a transaction must therefore not
// use the *sql.DB until it ends.
func openDB(ctx context.Context, rawURL string) (*sql.DB, migrate.Dialect, error) {
	driver, dsn, dialect, err := parseDatabaseURL(rawURL)
	if err != nil {
		return nil, "", err
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return nil, "", fmt.Errorf("open database: %w", err)
	}
	if dialect == migrate.SQLite {
		db.SetMaxOpenConns(1)
	}
	ctx, cancel := context.WithTimeout(ctx, openTimeout)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		_ = db.Close()
		return nil, "", fmt.Errorf("open database %s: %w", redactURL(rawURL), err)
	}
	return db, dialect, nil
}

// parseDatabaseURL returns the database/sql driver, the DSN and the dialect
// of a database URL (see openDB).
func parseDatabaseURL(rawURL string) (driver, dsn string, dialect migrate.Dialect, err error) {
	switch {
	case strings.HasPrefix(rawURL, "postgres://"), strings.HasPrefix(rawURL, "postgresql://"):
		return "pgx", rawURL, migrate.Postgres, nil
	case strings.HasPrefix(rawURL, "sqlite://"):
		path, err := sqlitePath(rawURL)
		if err != nil {
			return "", "", "", err
		}
		return "sqlite", path + "?" + sqlitePragmas, migrate.SQLite, nil
	default:
		return "", "", "", errors.New("database URL must start with postgres://, postgresql:// or sqlite://")
	}
}

// sqlitePath returns the absolute path of the file that a sqlite:// URL
// names: what follows sqlite:// is a path, relative to the working directory
// unless it starts with /. Query parameters are not supported: the server
// sets the pragmas itself.
func sqlitePath(rawURL string) (string, error) {
	path := strings.TrimPrefix(rawURL, "sqlite://")
	switch {
	case path == "":
		return "", errors.New("database URL sqlite:// names no file; want sqlite://PATH, e.g. sqlite://waybill.db")
	case strings.ContainsAny(path, "?#"):
		return "", fmt.Errorf("database URL %s: a sqlite:// path may not hold ? or #", rawURL)
	}
	abs, err := filepath.Abs(path)
	if err != nil {
		return "", fmt.Errorf("database URL %s: %w", rawURL, err)
	}
	return abs, nil
}

// redactURL returns rawURL with its password hidden, for messages.
func redactURL(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// migrateDB applies the reference server's migrations that db has not seen
// yet and returns their versions.
func migrateDB(ctx context.Context, db *sql.DB, dialect migrate.Dialect) ([]int, error) {
	applied, err := migrate.Apply(ctx, db, dialect, migrations, "migrations/"+string(dialect), migrationsTable)
	if err != nil {
		return applied, err
	}
	return applied, newOAuthStore(db, dialect).Migrate(ctx)
}

// openAndMigrate opens the database that rawURL names and migrates it, as
// every command that opens a database does first (SPEC section 7). It
// returns the database, its dialect and the versions it applied.
func openAndMigrate(ctx context.Context, rawURL string) (*sql.DB, migrate.Dialect, []int, error) {
	db, dialect, err := openDB(ctx, rawURL)
	if err != nil {
		return nil, "", nil, err
	}
	applied, err := migrateDB(ctx, db, dialect)
	if err != nil {
		_ = db.Close()
		return nil, "", nil, err
	}
	return db, dialect, applied, nil
}
