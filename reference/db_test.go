package main

import (
	"context"
	"database/sql"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/internal/eventstore"
	"github.com/waybillhq/waybill/internal/migrate"
	"github.com/waybillhq/waybill/internal/testdb"
	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/query"
)

// backend is a database the command tests run on.
type backend struct {
	name    string
	dialect query.Dialect
	// url returns the URL of a new, empty database of the test.
	url func(t *testing.T) string
}

// backends returns a SQLite file and a PostgreSQL schema.
func backends() []backend {
	return []backend{
		{"sqlite", query.SQLite, func(t *testing.T) string { return "sqlite://" + testdb.SQLitePath(t) }},
		{"postgres", query.Postgres, func(t *testing.T) string { return testdb.PostgresURL(t) }},
	}
}

// TestMain runs the tests with testdb.Main, which says how many skipped for want of
// PostgreSQL or Redis.
func TestMain(m *testing.M) { testdb.Main(m) }

func TestParseDatabaseURL(t *testing.T) {
	t.Parallel()
	wd, err := os.Getwd()
	require.NoError(t, err)
	tests := []struct {
		url         string
		wantDriver  string
		wantDSN     string
		wantDialect query.Dialect
		wantErr     string
	}{
		{url: "postgres://u:p@db:5432/waybill?sslmode=disable", wantDriver: "pgx", wantDSN: "postgres://u:p@db:5432/waybill?sslmode=disable", wantDialect: query.Postgres},
		{url: "postgresql://db/waybill", wantDriver: "pgx", wantDSN: "postgresql://db/waybill", wantDialect: query.Postgres},
		{url: "sqlite://waybill.db", wantDriver: "sqlite", wantDSN: filepath.Join(wd, "waybill.db") + "?" + sqlitePragmas, wantDialect: query.SQLite},
		{url: "sqlite://data/w.db", wantDriver: "sqlite", wantDSN: filepath.Join(wd, "data/w.db") + "?" + sqlitePragmas, wantDialect: query.SQLite},
		{url: "sqlite://./w.db", wantDriver: "sqlite", wantDSN: filepath.Join(wd, "w.db") + "?" + sqlitePragmas, wantDialect: query.SQLite},
		{url: "sqlite:///var/lib/waybill.db", wantDriver: "sqlite", wantDSN: "/var/lib/waybill.db?" + sqlitePragmas, wantDialect: query.SQLite},
		{url: "sqlite://", wantErr: "sqlite:// names no file"},
		{url: "sqlite://w.db?mode=ro", wantErr: "may not hold ? or #"},
		{url: "mysql://db/waybill", wantErr: "database URL must start with postgres://, postgresql:// or sqlite://"},
		{url: "waybill.db", wantErr: "database URL must start with"},
		{url: "", wantErr: "database URL must start with"},
		{url: "host=db user=u password=secret", wantErr: "database URL must start with"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			t.Parallel()
			driver, dsn, dialect, err := parseDatabaseURL(tt.url)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				assert.NotContains(t, err.Error(), "secret")
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tt.wantDriver, driver)
			assert.Equal(t, tt.wantDSN, dsn)
			assert.Equal(t, tt.wantDialect, dialect)
		})
	}
}

// TestSQLiteRelativePath runs migrate on sqlite://NAME and checks that the
// file is made in the working directory. It changes the working directory,
// so it cannot run in parallel.
func TestSQLiteRelativePath(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	require.NoError(t, os.Mkdir("sub", 0o755))

	for _, tc := range []struct{ url, file string }{
		{"sqlite://rel.db", filepath.Join(dir, "rel.db")},
		{"sqlite://sub/nested.db", filepath.Join(dir, "sub", "nested.db")},
		{"sqlite://./dot.db", filepath.Join(dir, "dot.db")},
	} {
		out, err := runCommand(t, nil, "migrate", "--database-url", tc.url)
		require.NoError(t, err, tc.url)
		assert.JSONEq(t, `{"applied":[1,2,3,4,5,6,7]}`, out)
		assert.FileExists(t, tc.file)
	}
}

func TestSQLiteAbsolutePath(t *testing.T) {
	t.Parallel()
	path := testdb.SQLitePath(t)
	require.True(t, strings.HasPrefix(path, "/"))
	out, err := runCommand(t, nil, "migrate", "--database-url", "sqlite://"+path) // sqlite:///tmp/...
	require.NoError(t, err)
	assert.JSONEq(t, `{"applied":[1,2,3,4,5,6,7]}`, out)
	assert.FileExists(t, path)
}

func TestOpenDB(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			db, dialect, err := openDB(t.Context(), b.url(t), defaultDBMaxConns)
			require.NoError(t, err)
			t.Cleanup(func() { _ = db.Close() })
			assert.Equal(t, b.dialect, dialect)

			applied, err := migrateDB(t.Context(), db, dialect)
			require.NoError(t, err)
			assert.Equal(t, []int{1, 2, 3, 4, 5, 6, 7}, applied)
			applied, err = migrateDB(t.Context(), db, dialect)
			require.NoError(t, err)
			assert.Empty(t, applied)

			// The schema refuses what it must refuse on both databases.
			ctx := t.Context()
			org := newID()
			_, err = db.ExecContext(ctx, "INSERT INTO organizations (id, name) VALUES ($1, $2)", org, "Acme")
			require.NoError(t, err)
			_, err = db.ExecContext(ctx, "INSERT INTO branches (id, organization_id, name) VALUES ($1, $2, $3)", newID(), newID(), "Orphan")
			assert.Error(t, err, "a branch of no organization")
			_, err = db.ExecContext(ctx, "INSERT INTO users (id, email, password_hash) VALUES ($1, $2, $3)", newID(), "a@example.com", "h")
			require.NoError(t, err)
			_, err = db.ExecContext(ctx, "INSERT INTO users (id, email, password_hash) VALUES ($1, $2, $3)", newID(), "a@example.com", "h")
			assert.Error(t, err, "a duplicate email")
			_, err = db.ExecContext(ctx, "INSERT INTO memberships (user_id, organization_id, admin) VALUES ($1, $2, $3)", newID(), org, true)
			assert.Error(t, err, "a membership of no user")

			var createdAt string
			require.NoError(t, db.QueryRowContext(ctx, "SELECT CAST(created_at AS text) FROM organizations WHERE id = $1", org).Scan(&createdAt))
			if dialect == query.SQLite {
				assert.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`, createdAt, "query.SQLiteTimestampLayout")
			}
		})
	}

	t.Run("unreachable postgres", func(t *testing.T) {
		t.Parallel()
		_, _, err := openDB(t.Context(), "postgres://u:hunter2@127.0.0.1:1/x?connect_timeout=5", defaultDBMaxConns)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "open database postgres://u:xxxxx@127.0.0.1:1/x")
		assert.NotContains(t, err.Error(), "hunter2")
	})
	t.Run("sqlite in a missing directory", func(t *testing.T) {
		t.Parallel()
		dir := filepath.Join(t.TempDir(), "missing")
		_, _, err := openDB(t.Context(), "sqlite://"+filepath.Join(dir, "w.db"), defaultDBMaxConns)
		require.Error(t, err)
		assert.Contains(t, err.Error(), "the directory "+dir+" does not exist; create it first")
	})
}

// Two pools on one SQLite file, as two processes would have: a
// transaction of one that reads and then writes holds the write lock from
// its BEGIN, so a write of the other waits for its commit instead of
// making it fail with SQLITE_BUSY_SNAPSHOT; a read-only transaction (an
// export's snapshot) takes no write lock, and the other's write goes on
// while it reads.
func TestSQLiteTransactionsOfTwoProcesses(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	dbURL := "sqlite://" + testdb.SQLitePath(t)
	var dbs [2]*sql.DB
	for i := range dbs {
		db, dialect, err := openDB(ctx, dbURL, defaultDBMaxConns)
		require.NoError(t, err)
		t.Cleanup(func() { _ = db.Close() })
		_, err = migrateDB(ctx, db, dialect)
		require.NoError(t, err)
		dbs[i] = db
	}
	count := func(q interface {
		QueryRowContext(context.Context, string, ...any) *sql.Row
	}) int {
		var n int
		require.NoError(t, q.QueryRowContext(ctx, "SELECT COUNT(*) FROM organizations").Scan(&n))
		return n
	}
	// write inserts an organization through the other pool, in a goroutine.
	write := func() <-chan error {
		done := make(chan error, 1)
		go func() {
			_, err := dbs[1].ExecContext(ctx, "INSERT INTO organizations (id, name) VALUES ($1, 'Other')", newID())
			done <- err
		}()
		return done
	}

	t.Run("read then write", func(t *testing.T) {
		tx, err := dbs[0].BeginTx(ctx, nil)
		require.NoError(t, err)
		defer func() { _ = tx.Rollback() }()
		before := count(tx)
		done := write()
		select {
		case err := <-done:
			t.Fatalf("the other process wrote (error %v) while a transaction held the write lock", err)
		case <-time.After(300 * time.Millisecond):
		}
		_, err = tx.ExecContext(ctx, "INSERT INTO organizations (id, name) VALUES ($1, 'Mine')", newID())
		require.NoError(t, err, "the write after the read")
		require.NoError(t, tx.Commit())
		require.NoError(t, <-done, "the other process's write, once the lock is free")
		assert.Equal(t, before+2, count(dbs[0]))
	})

	t.Run("a read-only transaction", func(t *testing.T) {
		tx, err := dbs[0].BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		require.NoError(t, err)
		defer func() { _ = tx.Rollback() }()
		before := count(tx)
		select {
		case err := <-write():
			require.NoError(t, err)
		case <-time.After(wait):
			t.Fatal("the other process's write waited for a read-only transaction")
		}
		assert.Equal(t, before, count(tx), "the snapshot does not see the later write")
		require.NoError(t, tx.Commit())
		assert.Equal(t, before+1, count(dbs[0]))
	})

	t.Run("an export's snapshot", func(t *testing.T) {
		conn, tx, _, err := eventstore.BeginSnapshot(ctx, dbs[0], query.SQLite, newID())
		require.NoError(t, err)
		defer func() { _ = tx.Rollback(); _ = conn.Close() }()
		select {
		case err := <-write():
			require.NoError(t, err)
		case <-time.After(wait):
			t.Fatal("the other process's write waited for an export's snapshot")
		}
	})
}

func TestReadyz(t *testing.T) {
	t.Parallel()
	db, _, err := openDB(t.Context(), "sqlite://"+testdb.SQLitePath(t), defaultDBMaxConns)
	require.NoError(t, err)
	h := newHandler(db, &oauth.Server{}, nil)

	serveOnce := func(method string) *httptest.ResponseRecorder {
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequestWithContext(t.Context(), method, "/readyz", nil))
		return rec
	}

	rec := serveOnce(http.MethodGet)
	assert.Equal(t, http.StatusOK, rec.Code)
	assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	assert.JSONEq(t, `{"status":"ready"}`, rec.Body.String())

	rec = serveOnce(http.MethodPost)
	assert.Equal(t, http.StatusMethodNotAllowed, rec.Code)
	assert.Equal(t, "GET, HEAD", rec.Header().Get("Allow"))

	require.NoError(t, db.Close())
	for _, method := range []string{http.MethodGet, http.MethodHead} {
		rec = serveOnce(method)
		assert.Equal(t, http.StatusServiceUnavailable, rec.Code, method)
		assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
		if method == http.MethodGet {
			assert.JSONEq(t, `{"error":"temporarily_unavailable","error_description":"the database is not reachable"}`, rec.Body.String())
		} else {
			assert.Empty(t, rec.Body.String())
		}
	}
}

// TestMigrateAccountContacts migrates a database of the first two migrations,
// with accounts whose email and phone are the ” they defaulted to and a
// project that references one, to the third: ” becomes NULL, other values
// stay, and the references, indexes and NOT NULL columns hold.
func TestMigrateAccountContacts(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			ctx := t.Context()
			db, dialect, err := openDB(ctx, b.url(t), defaultDBMaxConns)
			require.NoError(t, err)
			t.Cleanup(func() { _ = db.Close() })
			dir := "migrations/" + dialect.String()
			before := fstest.MapFS{}
			for _, name := range []string{"0001_tenancy.sql", "0002_resources.sql"} {
				data, err := fs.ReadFile(migrations, dir+"/"+name)
				require.NoError(t, err)
				before[dir+"/"+name] = &fstest.MapFile{Data: data}
			}
			applied, err := migrate.Apply(ctx, db, dialect, before, dir, migrationsTable)
			require.NoError(t, err)
			require.Equal(t, []int{1, 2}, applied)

			f := newTenantFixture(t, db)
			blank, given := newID(), newID()
			mustExec(t, db, "INSERT INTO accounts (id, organization_id, branch_id, company_name) VALUES ($1, $2, $3, 'Blank')", blank, f.org, f.north)
			mustExec(t, db, "INSERT INTO accounts (id, organization_id, branch_id, company_name, email, phone) VALUES ($1, $2, $3, 'Given', 'a@b.example', '+49 1')",
				given, f.org, f.north)
			mustExec(t, db, "INSERT INTO projects (id, organization_id, branch_id, name, account_id) VALUES ($1, $2, $3, 'Site', $4)", newID(), f.org, f.north, blank)

			applied, err = migrateDB(ctx, db, dialect)
			require.NoError(t, err)
			require.Equal(t, []int{3, 4, 5, 6, 7}, applied)

			for id, want := range map[string][2]sql.NullString{
				blank: {},
				given: {{String: "a@b.example", Valid: true}, {String: "+49 1", Valid: true}},
			} {
				var email, phone sql.NullString
				require.NoError(t, db.QueryRowContext(ctx, "SELECT email, phone FROM accounts WHERE id = $1", id).Scan(&email, &phone))
				assert.Equal(t, want, [2]sql.NullString{email, phone})
			}
			var projects int
			require.NoError(t, db.QueryRowContext(ctx, "SELECT count(*) FROM projects WHERE account_id = $1", blank).Scan(&projects))
			assert.Equal(t, 1, projects, "the project kept its account")
			_, err = db.ExecContext(ctx, "DELETE FROM accounts WHERE id = $1", blank)
			assert.Error(t, err, "an account that a project references")
			_, err = db.ExecContext(ctx, "INSERT INTO projects (id, organization_id, branch_id, name, account_id) VALUES ($1, $2, $3, 'Nowhere', $4)",
				newID(), f.org, f.north, newID())
			assert.Error(t, err, "a project of an account that does not exist")
			_, err = db.ExecContext(ctx, "INSERT INTO accounts (id, organization_id, branch_id) VALUES ($1, $2, $3)", newID(), f.org, f.north)
			assert.Error(t, err, "company_name is still NOT NULL")
			mustExec(t, db, "INSERT INTO accounts (id, organization_id, branch_id, company_name) VALUES ($1, $2, $3, 'New')", newID(), f.org, f.north)
		})
	}
}
