package migrate_test

import (
	"context"
	"database/sql"
	"io/fs"
	"slices"
	"sync"
	"testing"
	"testing/fstest"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/internal/migrate"
	"github.com/waybillhq/waybill/internal/testdb"
	"github.com/waybillhq/waybill/query"
)

// sqlitePragmas matches what internal/testdb and the reference server set
// on every SQLite connection.
const sqlitePragmas = "?_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)"

// backend is one database the tests run on.
type backend struct {
	name    string
	dialect query.Dialect
	// open returns a new database for the test.
	open func(t *testing.T) *sql.DB
	// pools returns n separate pools on one new database, as n processes
	// would open them.
	pools func(t *testing.T, n int) []*sql.DB
}

// backends returns PostgreSQL and SQLite.
func backends() []backend {
	return []backend{
		{
			name:    "postgres",
			dialect: query.Postgres,
			open:    func(t *testing.T) *sql.DB { return testdb.Postgres(t) },
			pools: func(t *testing.T, n int) []*sql.DB {
				return openPools(t, "pgx", testdb.PostgresURL(t), n)
			},
		},
		{
			name:    "sqlite",
			dialect: query.SQLite,
			open:    func(t *testing.T) *sql.DB { return testdb.SQLite(t) },
			pools: func(t *testing.T, n int) []*sql.DB {
				return openPools(t, "sqlite", testdb.SQLitePath(t)+sqlitePragmas, n)
			},
		},
	}
}

// openPools opens n pools of driver on dsn, closed in t.Cleanup. Each pool
// connects once, one after the other: the first connection to a new SQLite
// file switches it to WAL, which concurrent first connections may see as
// SQLITE_BUSY, and that is not what the tests are about.
func openPools(t *testing.T, driver, dsn string, n int) []*sql.DB {
	t.Helper()
	var dbs []*sql.DB
	for range n {
		db, err := sql.Open(driver, dsn)
		require.NoError(t, err)
		t.Cleanup(func() { _ = db.Close() })
		require.NoError(t, db.PingContext(t.Context()))
		dbs = append(dbs, db)
	}
	return dbs
}

// versions returns the versions and names recorded in table.
func versions(t *testing.T, db *sql.DB, table string) map[int]string {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), "SELECT version, name, applied_at FROM "+table+" ORDER BY version")
	require.NoError(t, err)
	defer rows.Close()
	out := map[int]string{}
	for rows.Next() {
		var (
			v        int
			name, at string
		)
		require.NoError(t, rows.Scan(&v, &name, &at))
		assert.Regexp(t, `^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`, at)
		out[v] = name
	}
	require.NoError(t, rows.Err())
	return out
}

// count returns the number of rows of table.
func count(t *testing.T, db *sql.DB, table string) int {
	t.Helper()
	var n int
	require.NoError(t, db.QueryRowContext(t.Context(), "SELECT count(*) FROM "+table).Scan(&n))
	return n
}

// tableExists reports whether a query on table succeeds.
func tableExists(t *testing.T, db *sql.DB, table string) bool {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), "SELECT 1 FROM "+table)
	if err != nil {
		return false
	}
	_ = rows.Close()
	return true
}

// file returns a MapFS file holding text.
func file(text string) *fstest.MapFile {
	return &fstest.MapFile{Data: []byte(text)}
}

func TestApply(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()

			t.Run("applies in order, then nothing", func(t *testing.T) {
				t.Parallel()
				db := b.open(t)
				// Listed out of order on purpose; 0002 and 0010 hold several
				// statements and need the tables of the files before them.
				fsys := fstest.MapFS{
					"m/0010_more.sql":  file("ALTER TABLE items ADD COLUMN note text;\nINSERT INTO items (id, name, note) VALUES (3, 'c', 'n');"),
					"m/0001_init.sql":  file("CREATE TABLE items (id integer PRIMARY KEY, name text NOT NULL);"),
					"m/0002_seed.sql":  file("INSERT INTO items (id, name) VALUES (1, 'a');\n\nINSERT INTO items (id, name) VALUES (2, 'b');\n"),
					"other/0001_x.sql": file("this is not SQL"),
				}
				applied, err := migrate.Apply(t.Context(), db, b.dialect, fsys, "m", "schema_migrations")
				require.NoError(t, err)
				assert.Equal(t, []int{1, 2, 10}, applied)
				assert.Equal(t, map[int]string{1: "0001_init.sql", 2: "0002_seed.sql", 10: "0010_more.sql"}, versions(t, db, "schema_migrations"))
				assert.Equal(t, 3, count(t, db, "items"))

				applied, err = migrate.Apply(t.Context(), db, b.dialect, fsys, "m", "schema_migrations")
				require.NoError(t, err)
				assert.Empty(t, applied, "second Apply is a no-op")
				assert.Equal(t, 3, count(t, db, "items"))

				fsys["m/0011_later.sql"] = file("INSERT INTO items (id, name) VALUES (4, 'd')")
				applied, err = migrate.Apply(t.Context(), db, b.dialect, fsys, "m", "schema_migrations")
				require.NoError(t, err)
				assert.Equal(t, []int{11}, applied, "only the new file")
				assert.Equal(t, 4, count(t, db, "items"))
			})

			t.Run("empty directory", func(t *testing.T) {
				t.Parallel()
				db := b.open(t)
				fsys := fstest.MapFS{"m": &fstest.MapFile{Mode: fs.ModeDir | 0o755}}
				applied, err := migrate.Apply(t.Context(), db, b.dialect, fsys, "m", "schema_migrations")
				require.NoError(t, err)
				assert.Empty(t, applied)
				assert.Empty(t, versions(t, db, "schema_migrations"), "the table exists and is empty")
			})

			t.Run("a failing migration rolls back and is not recorded", func(t *testing.T) {
				t.Parallel()
				db := b.open(t)
				fsys := fstest.MapFS{
					"m/0001_init.sql": file("CREATE TABLE items (id integer PRIMARY KEY);"),
					// The first two statements succeed, the third fails.
					"m/0002_bad.sql":   file("CREATE TABLE half (id integer);\nINSERT INTO items (id) VALUES (1);\nINSERT INTO missing (id) VALUES (1);"),
					"m/0003_after.sql": file("CREATE TABLE after (id integer);"),
				}
				applied, err := migrate.Apply(t.Context(), db, b.dialect, fsys, "m", "schema_migrations")
				require.Error(t, err)
				assert.Contains(t, err.Error(), "migrate: 0002_bad.sql: ")
				assert.Equal(t, []int{1}, applied, "the versions applied before the failure")
				assert.Equal(t, map[int]string{1: "0001_init.sql"}, versions(t, db, "schema_migrations"))
				assert.False(t, tableExists(t, db, "half"), "the failing file's DDL is rolled back")
				assert.Equal(t, 0, count(t, db, "items"), "the failing file's insert is rolled back")
				assert.False(t, tableExists(t, db, "after"), "Apply stops at the failure")

				fsys["m/0002_bad.sql"] = file("CREATE TABLE half (id integer);\nINSERT INTO items (id) VALUES (1);")
				applied, err = migrate.Apply(t.Context(), db, b.dialect, fsys, "m", "schema_migrations")
				require.NoError(t, err)
				assert.Equal(t, []int{2, 3}, applied, "the fixed file runs on the next Apply")
				assert.Equal(t, 1, count(t, db, "items"))
			})

			t.Run("tables keep their versions apart", func(t *testing.T) {
				t.Parallel()
				db := b.open(t)
				one := fstest.MapFS{"m/0001_a.sql": file("CREATE TABLE a (id integer)")}
				two := fstest.MapFS{"m/0001_b.sql": file("CREATE TABLE b (id integer)")}
				applied, err := migrate.Apply(t.Context(), db, b.dialect, one, "m", "one_migrations")
				require.NoError(t, err)
				assert.Equal(t, []int{1}, applied)
				applied, err = migrate.Apply(t.Context(), db, b.dialect, two, "m", "two_migrations")
				require.NoError(t, err)
				assert.Equal(t, []int{1}, applied)
				assert.True(t, tableExists(t, db, "a"))
				assert.True(t, tableExists(t, db, "b"))
			})

			t.Run("versions the directory no longer holds are ignored", func(t *testing.T) {
				t.Parallel()
				db := b.open(t)
				newer := fstest.MapFS{
					"m/0001_a.sql": file("CREATE TABLE a (id integer)"),
					"m/0002_b.sql": file("CREATE TABLE b (id integer)"),
				}
				_, err := migrate.Apply(t.Context(), db, b.dialect, newer, "m", "schema_migrations")
				require.NoError(t, err)
				older := fstest.MapFS{"m/0001_a.sql": file("CREATE TABLE a (id integer)")}
				applied, err := migrate.Apply(t.Context(), db, b.dialect, older, "m", "schema_migrations")
				require.NoError(t, err)
				assert.Empty(t, applied)
			})

			t.Run("concurrent Apply applies each file once", func(t *testing.T) {
				t.Parallel()
				const callers = 4
				dbs := b.pools(t, callers)
				// Every file would fail if it ran twice (CREATE TABLE), and
				// every file counts its runs in ran.
				fsys := fstest.MapFS{
					"m/0001_init.sql": file("CREATE TABLE ran (version integer NOT NULL);\nINSERT INTO ran VALUES (1);"),
					"m/0002_a.sql":    file("CREATE TABLE a (id integer);\nINSERT INTO ran VALUES (2);"),
					"m/0003_b.sql":    file("CREATE TABLE b (id integer);\nINSERT INTO ran VALUES (3);"),
					"m/0004_c.sql":    file("CREATE TABLE c (id integer);\nINSERT INTO ran VALUES (4);"),
				}
				var (
					wg      sync.WaitGroup
					mu      sync.Mutex
					applied []int
					errs    []error
				)
				start := make(chan struct{})
				for _, db := range dbs {
					wg.Go(func() {
						<-start
						got, err := migrate.Apply(context.Background(), db, b.dialect, fsys, "m", "schema_migrations")
						mu.Lock()
						defer mu.Unlock()
						applied = append(applied, got...)
						errs = append(errs, err)
					})
				}
				close(start)
				wg.Wait()
				for _, err := range errs {
					require.NoError(t, err)
				}
				slices.Sort(applied)
				assert.Equal(t, []int{1, 2, 3, 4}, applied, "each version applied by exactly one caller")
				assert.Equal(t, 4, count(t, dbs[0], "ran"), "each file ran once")
				assert.Len(t, versions(t, dbs[0], "schema_migrations"), 4)
			})
		})
	}
}

func TestApplyRejects(t *testing.T) {
	t.Parallel()
	ok := file("CREATE TABLE t (id integer)")
	tests := []struct {
		name    string
		fsys    fstest.MapFS
		dialect query.Dialect
		dir     string
		table   string
		wantErr string
	}{
		{name: "short version", fsys: fstest.MapFS{"m/001_init.sql": ok}, wantErr: "migrate: m/001_init.sql: not a migration"},
		{name: "no name", fsys: fstest.MapFS{"m/0001.sql": ok}, wantErr: "migrate: m/0001.sql: not a migration"},
		{name: "dash", fsys: fstest.MapFS{"m/0001-init.sql": ok}, wantErr: "not a migration"},
		{name: "upper case", fsys: fstest.MapFS{"m/0001_Init.sql": ok}, wantErr: "not a migration"},
		{name: "other extension", fsys: fstest.MapFS{"m/0001_init.SQL": ok}, wantErr: "not a migration"},
		{name: "other file", fsys: fstest.MapFS{"m/0001_init.sql": ok, "m/README.md": ok}, wantErr: "migrate: m/README.md: not a migration"},
		{name: "subdirectory", fsys: fstest.MapFS{"m/0001_init.sql": ok, "m/sub/0002_x.sql": ok}, wantErr: "migrate: m/sub: not a migration"},
		{name: "version zero", fsys: fstest.MapFS{"m/0000_init.sql": ok}, wantErr: "migrate: m/0000_init.sql: version must be a positive integer"},
		{name: "duplicate version", fsys: fstest.MapFS{"m/0001_a.sql": ok, "m/0001_b.sql": ok}, wantErr: "migrate: m/0001_a.sql and m/0001_b.sql have the same version 1"},
		{name: "same number, other width", fsys: fstest.MapFS{"m/0001_a.sql": ok, "m/00001_b.sql": ok}, wantErr: "have the same version 1"},
		{name: "missing directory", fsys: fstest.MapFS{"m/0001_a.sql": ok}, dir: "nope", wantErr: "migrate: open nope"},
		{name: "unknown dialect", fsys: fstest.MapFS{"m/0001_a.sql": ok}, dialect: query.Dialect(9), wantErr: `migrate: unknown dialect Dialect(9)`},
		{name: "bad table name", fsys: fstest.MapFS{"m/0001_a.sql": ok}, table: "x; DROP TABLE t", wantErr: `migrate: invalid table name "x; DROP TABLE t"`},
		{name: "upper-case table name", fsys: fstest.MapFS{"m/0001_a.sql": ok}, table: "Migrations", wantErr: "migrate: invalid table name"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			db := testdb.SQLite(t)
			dialect, dir, table := query.SQLite, "m", "schema_migrations"
			if tt.dialect != 0 {
				dialect = tt.dialect
			}
			if tt.dir != "" {
				dir = tt.dir
			}
			if tt.table != "" {
				table = tt.table
			}
			applied, err := migrate.Apply(t.Context(), db, dialect, tt.fsys, dir, table)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
			assert.Nil(t, applied)
			assert.False(t, tableExists(t, db, "t"), "nothing is applied")
		})
	}
}

// TestMain runs the tests with testdb.Main, which says how many skipped for want of
// PostgreSQL or Redis.
func TestMain(m *testing.M) { testdb.Main(m) }

// TestApplyOnANewSQLiteFileAtOnce: processes that start at once on one new
// SQLite file all migrate it. Their first connections switch the file to
// WAL, a step SQLite takes without a busy handler, so some meet
// SQLITE_BUSY when they connect; Apply waits and connects again.
func TestApplyOnANewSQLiteFileAtOnce(t *testing.T) {
	t.Parallel()
	fsys := fstest.MapFS{"m/0001_init.sql": file("CREATE TABLE a (id integer)")}
	for round := range 10 {
		path := testdb.SQLitePath(t)
		var dbs []*sql.DB
		for range 6 {
			db, err := sql.Open("sqlite", path+sqlitePragmas) // no connection yet
			require.NoError(t, err)
			t.Cleanup(func() { _ = db.Close() })
			dbs = append(dbs, db)
		}
		errs := make([]error, len(dbs))
		var wg sync.WaitGroup
		start := make(chan struct{})
		for i, db := range dbs {
			wg.Go(func() {
				<-start
				_, errs[i] = migrate.Apply(t.Context(), db, query.SQLite, fsys, "m", "schema_migrations")
			})
		}
		close(start)
		wg.Wait()
		for i, err := range errs {
			require.NoError(t, err, "round %d, process %d", round, i)
		}
	}
}
