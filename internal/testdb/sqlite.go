package testdb

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// sqlitePragmas is the DSN query that modernc.org/sqlite applies to every connection it
// opens.
const sqlitePragmas = "_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)"

// SQLitePath returns the path of a new SQLite database file in t.TempDir(). The file
// does not exist yet; SQLite creates it on first open, and the directory is removed in
// t.Cleanup.
func SQLitePath(t testing.TB) string {
	t.Helper()
	return filepath.Join(t.TempDir(), "test.db")
}

// SQLite returns a *sql.DB (driver "sqlite" from modernc.org/sqlite) on a new file in
// t.TempDir(), closed in t.Cleanup. Every connection of the pool has foreign_keys ON,
// journal_mode WAL and busy_timeout 5000 (milliseconds).
func SQLite(t testing.TB) *sql.DB {
	t.Helper()
	// A plain path, not a file: URI, so that characters such as '#' or '%' that
	// t.TempDir keeps from the test name are not read as URI syntax.
	db, err := sql.Open("sqlite", SQLitePath(t)+"?"+sqlitePragmas)
	if err != nil {
		t.Fatalf("testdb: open sqlite: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		t.Fatalf("testdb: open sqlite: %v", err)
	}
	return db
}
