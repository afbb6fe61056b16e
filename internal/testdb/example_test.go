package testdb_test

import (
	"testing"

	"github.com/redis/go-redis/v9"

	"github.com/waybillhq/waybill/internal/testdb"
)

// A test that needs PostgreSQL gets a pool on a schema of its own; tables of the same
// name in parallel tests do not collide.
func ExamplePostgres() {
	_ = func(t *testing.T) {
		t.Parallel()
		db := testdb.Postgres(t)
		if _, err := db.ExecContext(t.Context(), `CREATE TABLE shipments (id bigint PRIMARY KEY)`); err != nil {
			t.Fatal(err)
		}
	}
}

// A test that needs SQLite gets a fresh file with foreign keys enforced.
func ExampleSQLite() {
	_ = func(t *testing.T) {
		t.Parallel()
		db := testdb.SQLite(t)
		if _, err := db.ExecContext(t.Context(), `CREATE TABLE shipments (id INTEGER PRIMARY KEY)`); err != nil {
			t.Fatal(err)
		}
	}
}

// A test that needs Redis keeps all of its keys under its prefix.
func ExampleRedis() {
	_ = func(t *testing.T) {
		t.Parallel()
		url, prefix := testdb.Redis(t)
		opts, err := redis.ParseURL(url)
		if err != nil {
			t.Fatal(err)
		}
		client := redis.NewClient(opts)
		defer client.Close()
		if err := client.Set(t.Context(), prefix+"rate:tenant-1", 1, 0).Err(); err != nil {
			t.Fatal(err)
		}
	}
}
