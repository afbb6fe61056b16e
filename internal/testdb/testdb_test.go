package testdb_test

import (
	"context"
	"database/sql"
	"flag"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/redis/go-redis/v9"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/internal/testdb"
)

// barrierTimeout bounds how long a parallel test waits for its sibling.
const barrierTimeout = 2 * time.Minute

// schemaOf returns the search_path parameter of a URL from testdb.PostgresURL.
func schemaOf(t *testing.T, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	require.NoError(t, err)
	schema := u.Query().Get("search_path")
	require.Regexp(t, `^t_[0-9a-f]{16}$`, schema)
	return schema
}

// createItems creates the table items in db's schema and inserts name into it.
func createItems(t *testing.T, db *sql.DB, name string) {
	t.Helper()
	_, err := db.ExecContext(t.Context(), `CREATE TABLE items (name text NOT NULL)`)
	require.NoError(t, err)
	_, err = db.ExecContext(t.Context(), `INSERT INTO items (name) VALUES ($1)`, name)
	require.NoError(t, err)
}

// itemNames returns the names in db's table items, sorted.
func itemNames(t *testing.T, db *sql.DB) []string {
	t.Helper()
	rows, err := db.QueryContext(t.Context(), `SELECT name FROM items ORDER BY name`)
	require.NoError(t, err)
	defer rows.Close()
	var names []string
	for rows.Next() {
		var name string
		require.NoError(t, rows.Scan(&name))
		names = append(names, name)
	}
	require.NoError(t, rows.Err())
	return names
}

// TestPostgresParallelSchemas runs two parallel tests that create a table of the same
// name; each sees only its own row. When -parallel allows, both have inserted before
// either reads, so the two schemas are alive at the same time.
func TestPostgresParallelSchemas(t *testing.T) {
	concurrent := true
	if f := flag.Lookup("test.parallel"); f != nil {
		if n, err := strconv.Atoi(f.Value.String()); err == nil && n < 2 {
			concurrent = false
		}
	}
	var inserted sync.WaitGroup
	inserted.Add(2)
	bothInserted := make(chan struct{})
	go func() { inserted.Wait(); close(bothInserted) }()

	for _, name := range []string{"alpha", "beta"} {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			var once sync.Once
			done := func() { once.Do(inserted.Done) }
			defer done() // also when this test skips or fails early

			db := testdb.Postgres(t)
			createItems(t, db, name)
			done()
			if concurrent {
				select {
				case <-bothInserted:
				case <-time.After(barrierTimeout):
					t.Fatal("the sibling test did not insert its row in time")
				}
			}
			assert.Equal(t, []string{name}, itemNames(t, db))
		})
	}
}

// TestPostgresSchemaLifecycle checks that the URL's search_path is a schema of its own,
// that a test nested in another gets a different one, and that cleanup drops it.
func TestPostgresSchemaLifecycle(t *testing.T) {
	outerURL := testdb.PostgresURL(t)
	outer, err := sql.Open("pgx", outerURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = outer.Close() })
	outerSchema := schemaOf(t, outerURL)

	var current string
	require.NoError(t, outer.QueryRowContext(t.Context(), `SELECT current_schema()`).Scan(&current))
	assert.Equal(t, outerSchema, current)
	createItems(t, outer, "outer")

	var innerSchema string
	t.Run("inner", func(t *testing.T) {
		db := testdb.Postgres(t)
		var current string
		require.NoError(t, db.QueryRowContext(t.Context(), `SELECT current_schema()`).Scan(&current))
		innerSchema = current
		assert.NotEqual(t, outerSchema, innerSchema)
		createItems(t, db, "inner")
		assert.Equal(t, []string{"inner"}, itemNames(t, db))
	})
	require.NotEmpty(t, innerSchema)

	var n int
	require.NoError(t, outer.QueryRowContext(t.Context(),
		`SELECT count(*) FROM pg_namespace WHERE nspname = $1`, innerSchema).Scan(&n))
	assert.Zero(t, n, "schema %s of the finished subtest still exists", innerSchema)
	assert.Equal(t, []string{"outer"}, itemNames(t, outer))
}

// databaseOf returns the database name of a URL from testdb.PostgresDatabaseURL.
func databaseOf(t *testing.T, rawURL string) string {
	t.Helper()
	u, err := url.Parse(rawURL)
	require.NoError(t, err)
	name := strings.TrimPrefix(u.Path, "/")
	require.Regexp(t, `^t_[0-9a-f]{16}$`, name)
	return name
}

// openPool opens a pool on rawURL, checks that it connects, and closes it in t.Cleanup.
func openPool(t *testing.T, rawURL string) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", rawURL)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	require.NoError(t, db.PingContext(t.Context()))
	return db
}

// TestPostgresDatabaseLifecycle checks that PostgresDatabaseURL names a database of its
// own, created as the project's databases are, that a nested test gets another one
// whose tables the first does not see, and that cleanup drops it even while a session
// is still connected to it.
func TestPostgresDatabaseLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background() // t.Context is gone by the time cleanups have run.
	outerURL := testdb.PostgresDatabaseURL(t)
	outerName := databaseOf(t, outerURL)
	outer := openPool(t, outerURL)
	outer.SetMaxOpenConns(1)

	var current, encoding, collate, ctype string
	require.NoError(t, outer.QueryRowContext(ctx, `SELECT current_database(), pg_encoding_to_char(encoding), datcollate, datctype
		FROM pg_database WHERE datname = current_database()`).Scan(&current, &encoding, &collate, &ctype))
	assert.Equal(t, outerName, current)
	assert.Equal(t, []string{"UTF8", "C.UTF-8", "C.UTF-8"}, []string{encoding, collate, ctype})
	createItems(t, outer, "outer")

	// The pool's one connection is the only client session on the database.
	var sessions int
	require.NoError(t, outer.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity
		WHERE datname = $1 AND backend_type = 'client backend'`, outerName).Scan(&sessions))
	assert.Equal(t, 1, sessions)

	var innerName string
	var lingering *sql.DB // a pool on the inner database, closed only when this test ends
	t.Cleanup(func() {
		if lingering != nil {
			_ = lingering.Close()
		}
	})
	t.Run("inner", func(t *testing.T) {
		innerURL := testdb.PostgresDatabaseURL(t)
		innerName = databaseOf(t, innerURL)
		assert.NotEqual(t, outerName, innerName)
		db := openPool(t, innerURL)

		_, err := db.ExecContext(ctx, `SELECT name FROM items`)
		var pgErr *pgconn.PgError
		require.ErrorAs(t, err, &pgErr, "the outer test's table is visible")
		assert.Equal(t, "42P01", pgErr.Code, "undefined_table: %v", err)
		createItems(t, db, "inner")
		assert.Equal(t, []string{"inner"}, itemNames(t, db))

		// A session still open at cleanup does not keep the database alive.
		lingering, err = sql.Open("pgx", innerURL)
		require.NoError(t, err)
		require.NoError(t, lingering.PingContext(ctx))
	})
	require.NotEmpty(t, innerName)

	var n int
	require.NoError(t, outer.QueryRowContext(ctx, `SELECT count(*) FROM pg_database WHERE datname = $1`, innerName).Scan(&n))
	assert.Zero(t, n, "database %s of the finished subtest still exists", innerName)
	assert.Equal(t, []string{"outer"}, itemNames(t, outer))
}

func TestSQLitePragmasOnEveryConnection(t *testing.T) {
	t.Parallel()
	db := testdb.SQLite(t)

	// Hold several connections at once so that each is a distinct one.
	const n = 4
	conns := make([]*sql.Conn, n)
	for i := range conns {
		c, err := db.Conn(t.Context())
		require.NoError(t, err)
		defer c.Close()
		conns[i] = c
	}
	for i, c := range conns {
		var foreignKeys, busyTimeout int
		var journalMode string
		require.NoError(t, c.QueryRowContext(t.Context(), `PRAGMA foreign_keys`).Scan(&foreignKeys))
		require.NoError(t, c.QueryRowContext(t.Context(), `PRAGMA busy_timeout`).Scan(&busyTimeout))
		require.NoError(t, c.QueryRowContext(t.Context(), `PRAGMA journal_mode`).Scan(&journalMode))
		assert.Equal(t, 1, foreignKeys, "connection %d: foreign_keys", i)
		assert.Equal(t, 5000, busyTimeout, "connection %d: busy_timeout", i)
		assert.Equal(t, "wal", journalMode, "connection %d: journal_mode", i)
	}

	_, err := db.ExecContext(t.Context(), `CREATE TABLE parent (id INTEGER PRIMARY KEY)`)
	require.NoError(t, err)
	_, err = db.ExecContext(t.Context(), `CREATE TABLE child (parent_id INTEGER NOT NULL REFERENCES parent (id))`)
	require.NoError(t, err)
	_, err = db.ExecContext(t.Context(), `INSERT INTO child (parent_id) VALUES (42)`)
	assert.Error(t, err, "foreign key not enforced")
}

func TestSQLitePath(t *testing.T) {
	t.Parallel()
	a, b := testdb.SQLitePath(t), testdb.SQLitePath(t)
	assert.NotEqual(t, a, b)
	for _, p := range []string{a, b} {
		info, err := os.Stat(filepath.Dir(p))
		require.NoError(t, err)
		assert.True(t, info.IsDir())
		_, err = os.Stat(p)
		assert.ErrorIs(t, err, os.ErrNotExist, "the database file should be new")
	}
}

func redisClient(t *testing.T, rawURL string) *redis.Client {
	t.Helper()
	opts, err := redis.ParseURL(rawURL)
	require.NoError(t, err)
	client := redis.NewClient(opts)
	t.Cleanup(func() { _ = client.Close() })
	return client
}

// TestRedisPrefix stores a key under a subtest's prefix and checks that the subtest's
// cleanup deletes it and nothing outside the prefix.
func TestRedisPrefix(t *testing.T) {
	t.Parallel()
	ctx := context.Background() // t.Context is gone by the time cleanups have run.
	outerURL, outerPrefix := testdb.Redis(t)
	client := redisClient(t, outerURL)
	outerKey := outerPrefix + "kept"
	require.NoError(t, client.Set(ctx, outerKey, "outer", 0).Err())

	var innerKeys []string
	t.Run("inner", func(t *testing.T) {
		url, prefix := testdb.Redis(t)
		assert.Regexp(t, `^test:[0-9a-f]{16}:$`, prefix)
		assert.NotEqual(t, outerPrefix, prefix)
		client := redisClient(t, url)
		for _, name := range []string{"greeting", "nested:key"} {
			key := prefix + name
			require.NoError(t, client.Set(ctx, key, "hello", 0).Err())
			got, err := client.Get(ctx, key).Result()
			require.NoError(t, err)
			assert.Equal(t, "hello", got)
			innerKeys = append(innerKeys, key)
		}
	})
	require.Len(t, innerKeys, 2)

	n, err := client.Exists(ctx, innerKeys...).Result()
	require.NoError(t, err)
	assert.Zero(t, n, "keys under the finished subtest's prefix survive its cleanup")
	got, err := client.Get(ctx, outerKey).Result()
	require.NoError(t, err, "a key outside the subtest's prefix was deleted")
	assert.Equal(t, "outer", got)
	assert.True(t, strings.HasPrefix(outerKey, "test:"))
}
