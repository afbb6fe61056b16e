// Package migrate applies embedded SQL migrations to a PostgreSQL or SQLite
// database.
//
// A migration is a file named NNNN_name.sql (0001_init.sql, 0002_orders.sql):
// a version of at least four digits, an underscore, a name of lower-case
// letters, digits and underscores, and the extension .sql. The caller keeps
// one directory of files per dialect and passes the one that matches the
// database:
//
//	//go:embed migrations
//	var migrations embed.FS
//
//	applied, err := migrate.Apply(ctx, db, query.Postgres, migrations, "migrations/postgres", "schema_migrations")
//
// Apply records every version it applies in a table of the caller's choice,
// so that several packages (the reference server, an OAuth store) can keep
// their migrations apart in one database. Each file runs in its own
// transaction together with the insert of its version, so a file is either
// applied and recorded or neither. Apply is safe to call from several
// processes at once: on PostgreSQL each transaction first takes a
// transaction-level advisory lock derived from the table name, on SQLite it
// starts with BEGIN IMMEDIATE; either way the version is checked again
// inside the transaction before the file runs.
//
// Because each file runs inside a transaction, a file must not hold
// transaction control (BEGIN, COMMIT) nor statements that refuse to run in a
// transaction (PostgreSQL's CREATE INDEX CONCURRENTLY, SQLite's
// PRAGMA foreign_keys, which is a no-op there). A file may hold several
// statements separated by semicolons.
package migrate

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"hash/fnv"
	"io/fs"
	"path"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/waybillhq/waybill/internal/sqlerr"
	"github.com/waybillhq/waybill/query"
)

var (
	// fileName matches a migration's file name and captures its version.
	fileName = regexp.MustCompile(`^([0-9]{4,})_[a-z0-9_]+\.sql$`)
	// tableName matches the table names Apply accepts: unquoted identifiers
	// that PostgreSQL does not fold.
	tableName = regexp.MustCompile(`^[a-z_][a-z0-9_]*$`)
)

// migration is one file of the migrations directory.
type migration struct {
	version int
	name    string // the file name, 0001_init.sql
	sql     string
}

// Apply applies, in order, the migrations in dir of fsys that the database
// has not seen yet. Files are named NNNN_name.sql (e.g. 0001_init.sql); a
// file that does not match, a subdirectory or two files of one version is
// an error, and nothing is applied then. Each file runs in its own
// transaction together with the insert of its version into the table named
// by table, which Apply creates if missing (version integer primary key,
// name text, applied_at text). On PostgreSQL every transaction takes
// pg_advisory_xact_lock of a hash of table and re-checks the version inside
// it; on SQLite every transaction starts with BEGIN IMMEDIATE on a
// dedicated connection and re-checks the version. So several processes may
// call Apply at once, and each file is applied exactly once.
//
// A version the database has recorded but dir no longer holds is ignored,
// so an older binary can start on a database that a newer one migrated. A
// version missing between recorded ones is applied like any other.
//
// d is query.Postgres or query.SQLite. On PostgreSQL the database/sql
// driver must run several statements in one Exec without arguments (pgx v5
// does); on SQLite too (modernc.org/sqlite does), and the database should
// be opened with a busy timeout (busy_timeout(5000), say) so that
// concurrent callers wait for each other instead of failing with
// SQLITE_BUSY.
//
// Apply returns the versions it applied, in order: nil when the database was
// up to date. When a migration fails, its transaction is rolled back (it is
// neither applied nor recorded), Apply stops and returns the versions it
// applied before it with an error naming the file.
func Apply(ctx context.Context, db *sql.DB, d query.Dialect, fsys fs.FS, dir, table string) ([]int, error) {
	if d != query.Postgres && d != query.SQLite {
		return nil, fmt.Errorf("migrate: unknown dialect %v", d)
	}
	if !tableName.MatchString(table) {
		return nil, fmt.Errorf("migrate: invalid table name %q: want lower-case letters, digits and underscores", table)
	}
	migrations, err := readDir(fsys, dir)
	if err != nil {
		return nil, err
	}
	r := &runner{dialect: d, table: table, lockKey: lockKey(table)}
	switch d {
	case query.Postgres:
		return r.applyPostgres(ctx, db, migrations)
	default:
		return r.applySQLite(ctx, db, migrations)
	}
}

// readDir reads and validates the migrations in dir of fsys and returns
// them ordered by version.
func readDir(fsys fs.FS, dir string) ([]migration, error) {
	entries, err := fs.ReadDir(fsys, dir)
	if err != nil {
		return nil, fmt.Errorf("migrate: %w", err)
	}
	var out []migration
	seen := map[int]string{}
	for _, e := range entries {
		m := fileName.FindStringSubmatch(e.Name())
		if m == nil || e.IsDir() {
			return nil, fmt.Errorf("migrate: %s: not a migration; want a file named NNNN_name.sql (e.g. 0001_init.sql)", path.Join(dir, e.Name()))
		}
		version, err := strconv.Atoi(m[1])
		if err != nil || version <= 0 {
			return nil, fmt.Errorf("migrate: %s: version must be a positive integer", path.Join(dir, e.Name()))
		}
		if other, ok := seen[version]; ok {
			return nil, fmt.Errorf("migrate: %s and %s have the same version %d", path.Join(dir, other), path.Join(dir, e.Name()), version)
		}
		seen[version] = e.Name()
		text, err := fs.ReadFile(fsys, path.Join(dir, e.Name()))
		if err != nil {
			return nil, fmt.Errorf("migrate: %w", err)
		}
		out = append(out, migration{version: version, name: e.Name(), sql: string(text)})
	}
	slices.SortFunc(out, func(a, b migration) int { return a.version - b.version })
	return out, nil
}

// lockKey returns the PostgreSQL advisory lock key of table: a 64-bit FNV-1a
// hash of the package name and the table name.
func lockKey(table string) int64 {
	h := fnv.New64a()
	_, _ = h.Write([]byte("waybill/migrate:" + table))
	return int64(h.Sum64())
}

// runner holds what every step of one Apply needs.
type runner struct {
	dialect query.Dialect
	table   string
	lockKey int64
}

// execer is what the steps that run inside a transaction need: a *sql.Tx on
// PostgreSQL, the dedicated *sql.Conn on SQLite.
type execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// applyPostgres applies migrations on PostgreSQL, each in a *sql.Tx that
// first takes the advisory lock.
func (r *runner) applyPostgres(ctx context.Context, db *sql.DB, migrations []migration) ([]int, error) {
	err := r.inPostgresTx(ctx, db, func(tx *sql.Tx) error { return r.createTable(ctx, tx) })
	if err != nil {
		return nil, err
	}
	seen, err := r.applied(ctx, db)
	if err != nil {
		return nil, err
	}
	var done []int
	for _, m := range migrations {
		if seen[m.version] {
			continue
		}
		var ran bool
		err := r.inPostgresTx(ctx, db, func(tx *sql.Tx) error {
			var err error
			ran, err = r.applyOne(ctx, tx, m)
			return err
		})
		if err != nil {
			return done, err
		}
		if ran {
			done = append(done, m.version)
		}
	}
	return done, nil
}

// inPostgresTx runs f in a transaction that holds the advisory lock of the
// table, and commits when f succeeds.
func (r *runner) inPostgresTx(ctx context.Context, db *sql.DB, f func(tx *sql.Tx) error) error {
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return fmt.Errorf("migrate: begin: %w", err)
	}
	defer func() { _ = tx.Rollback() }() // a no-op after Commit
	if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1)", r.lockKey); err != nil {
		return fmt.Errorf("migrate: lock %s: %w", r.table, err)
	}
	if err := f(tx); err != nil {
		return err
	}
	if err := tx.Commit(); err != nil {
		return fmt.Errorf("migrate: commit: %w", err)
	}
	return nil
}

// applySQLite applies migrations on SQLite over one dedicated connection,
// each in a transaction started with BEGIN IMMEDIATE.
func (r *runner) applySQLite(ctx context.Context, db *sql.DB, migrations []migration) ([]int, error) {
	conn, err := connectSQLite(ctx, db)
	if err != nil {
		return nil, fmt.Errorf("migrate: connect: %w", err)
	}
	defer func() { _ = conn.Close() }()

	err = r.inSQLiteTx(ctx, conn, func() error { return r.createTable(ctx, conn) })
	if err != nil {
		return nil, err
	}
	seen, err := r.applied(ctx, conn)
	if err != nil {
		return nil, err
	}
	var done []int
	for _, m := range migrations {
		if seen[m.version] {
			continue
		}
		var ran bool
		err := r.inSQLiteTx(ctx, conn, func() error {
			var err error
			ran, err = r.applyOne(ctx, conn, m)
			return err
		})
		if err != nil {
			return done, err
		}
		if ran {
			done = append(done, m.version)
		}
	}
	return done, nil
}

// connectBusyWait bounds how long connectSQLite tries again while the
// database is busy.
const connectBusyWait = 10 * time.Second

// connectSQLite returns a dedicated connection of db. A new connection runs
// the DSN's pragmas, and switching a new database file to WAL takes no busy
// handler: processes that start on one new file at once meet SQLITE_BUSY
// there, however long their busy_timeout. It tries again, a little later
// each time, for at most connectBusyWait.
func connectSQLite(ctx context.Context, db *sql.DB) (*sql.Conn, error) {
	deadline := time.Now().Add(connectBusyWait)
	for wait := 5 * time.Millisecond; ; wait = min(2*wait, 250*time.Millisecond) {
		conn, err := db.Conn(ctx)
		if err == nil || !sqlerr.Busy(err) || time.Now().Add(wait).After(deadline) {
			return conn, err
		}
		t := time.NewTimer(wait)
		select {
		case <-ctx.Done():
			t.Stop()
			return nil, ctx.Err()
		case <-t.C:
		}
	}
}

// inSQLiteTx runs f between BEGIN IMMEDIATE and COMMIT on conn, and rolls
// back when f or the commit fails. database/sql's BeginTx cannot start an
// immediate transaction, hence the statements by hand.
func (r *runner) inSQLiteTx(ctx context.Context, conn *sql.Conn, f func() error) error {
	if _, err := conn.ExecContext(ctx, "BEGIN IMMEDIATE"); err != nil {
		return fmt.Errorf("migrate: begin: %w", err)
	}
	err := f()
	if err == nil {
		if _, cerr := conn.ExecContext(ctx, "COMMIT"); cerr != nil {
			err = fmt.Errorf("migrate: commit: %w", cerr)
		}
	}
	if err != nil {
		rollback(ctx, conn)
	}
	return err
}

// rollback ends the open transaction of conn, even when ctx is done. When
// that fails too, conn is discarded rather than returned to the pool with a
// transaction open.
func rollback(ctx context.Context, conn *sql.Conn) {
	if _, err := conn.ExecContext(context.WithoutCancel(ctx), "ROLLBACK"); err != nil {
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
	}
}

// createTable creates the versions table if it does not exist.
func (r *runner) createTable(ctx context.Context, e execer) error {
	q := "CREATE TABLE IF NOT EXISTS " + r.table + " (version integer PRIMARY KEY, name text NOT NULL, applied_at text NOT NULL)"
	if _, err := e.ExecContext(ctx, q); err != nil {
		return fmt.Errorf("migrate: create table %s: %w", r.table, err)
	}
	return nil
}

// applied returns the versions recorded in the table.
func (r *runner) applied(ctx context.Context, e execer) (map[int]bool, error) {
	rows, err := e.QueryContext(ctx, "SELECT version FROM "+r.table)
	if err != nil {
		return nil, fmt.Errorf("migrate: read %s: %w", r.table, err)
	}
	defer func() { _ = rows.Close() }()
	seen := map[int]bool{}
	for rows.Next() {
		var v int
		if err := rows.Scan(&v); err != nil {
			return nil, fmt.Errorf("migrate: read %s: %w", r.table, err)
		}
		seen[v] = true
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("migrate: read %s: %w", r.table, err)
	}
	return seen, nil
}

// applyOne runs inside a locked transaction: it checks again that m is not
// recorded, then runs m and records it. It reports whether m ran: false when
// another process applied it in the meantime.
func (r *runner) applyOne(ctx context.Context, e execer, m migration) (bool, error) {
	var n int
	err := e.QueryRowContext(ctx, "SELECT count(*) FROM "+r.table+" WHERE version = "+r.param(1), m.version).Scan(&n)
	if err != nil {
		return false, fmt.Errorf("migrate: read %s: %w", r.table, err)
	}
	if n > 0 {
		return false, nil
	}
	if _, err := e.ExecContext(ctx, m.sql); err != nil {
		return false, fmt.Errorf("migrate: %s: %w", m.name, err)
	}
	now := time.Now().UTC().Format(query.SQLiteTimestampLayout)
	insert := "INSERT INTO " + r.table + " (version, name, applied_at) VALUES (" + r.param(1) + ", " + r.param(2) + ", " + r.param(3) + ")"
	_, err = e.ExecContext(ctx, insert, m.version, m.name, now)
	if err != nil {
		return false, fmt.Errorf("migrate: record %s: %w", m.name, err)
	}
	return true, nil
}

// param returns the placeholder of the i-th argument (from 1) of a
// statement in the runner's dialect: $i on PostgreSQL, ? on SQLite.
func (r *runner) param(i int) string {
	if r.dialect == query.Postgres {
		return "$" + strconv.Itoa(i)
	}
	return "?"
}
