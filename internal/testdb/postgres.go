package testdb

import (
	"context"
	"database/sql"
	"fmt"
	"net/url"
	"os"
	"testing"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	"github.com/testcontainers/testcontainers-go"
	tcpostgres "github.com/testcontainers/testcontainers-go/modules/postgres"
)

const (
	// adminMaxOpenConns bounds the process-wide pool that creates and drops schemas.
	adminMaxOpenConns = 4
	// testMaxOpenConns bounds the pool [Postgres] returns, so that many parallel tests
	// stay well under PostgreSQL's default max_connections of 100.
	testMaxOpenConns = 8
)

// pg is the PostgreSQL server of the process and a pool on it used to create and drop
// schemas.
var pg service[*sql.DB]

// PostgresURL returns a pgx connection URL whose search_path is a new schema that belongs
// to t alone and is dropped, with everything in it, in t.Cleanup. Connections the test
// opens on the URL must be closed by then.
//
// The server is the one WAYBILL_TEST_DATABASE_URL names, which must be a URL
// (postgres://user@host:port/db?sslmode=disable), not a key=value DSN; when that is
// unset, it is a container that testcontainers starts once per test process. Without
// either, t is skipped (or fails when CI is set). The schema is named "t_" followed by
// 16 random hexadecimal characters and is set with the runtime parameter search_path,
// which pgx sends for any query parameter it does not know.
func PostgresURL(t testing.TB) string {
	t.Helper()
	base, admin := pg.get(t, setupPostgres)

	schema := "t_" + randomHex(8)
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if _, err := admin.ExecContext(ctx, "CREATE SCHEMA "+schema); err != nil {
		t.Fatalf("testdb: create schema %s: %v", schema, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		if _, err := admin.ExecContext(ctx, "DROP SCHEMA IF EXISTS "+schema+" CASCADE"); err != nil {
			t.Errorf("testdb: drop schema %s: %v", schema, err)
		}
	})

	u, err := withSearchPath(base, schema)
	if err != nil {
		t.Fatal(err) // Unreachable: setupPostgres parsed base already.
	}
	return u
}

// PostgresDatabaseURL returns the URL of a new, empty PostgreSQL database that belongs to
// t alone, dropped in t.Cleanup with DROP DATABASE ... WITH (FORCE), which also ends any
// session still connected to it. It is for tests that count the connections or sessions
// of one database exactly (pg_stat_activity filtered by datname, pg_stat_database); a
// test that only needs tables of its own should take the cheaper [PostgresURL].
//
// The server is the one of [PostgresURL], with the same rules when there is none. The
// database is named "t_" followed by 16 random hexadecimal characters, created from
// template0 with encoding UTF8 and the C.UTF-8 collation and character classification.
// The URL is the server's with the database name in its path, keeping every query
// parameter.
func PostgresDatabaseURL(t testing.TB) string {
	t.Helper()
	base, admin := pg.get(t, setupPostgres)

	name := "t_" + randomHex(8)
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if _, err := admin.ExecContext(ctx, "CREATE DATABASE "+name+
		" TEMPLATE template0 ENCODING 'UTF8' LC_COLLATE 'C.UTF-8' LC_CTYPE 'C.UTF-8'"); err != nil {
		t.Fatalf("testdb: create database %s: %v", name, err)
	}
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
		defer cancel()
		if _, err := admin.ExecContext(ctx, "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)"); err != nil {
			t.Errorf("testdb: drop database %s: %v", name, err)
		}
	})

	u, err := url.Parse(base)
	if err != nil {
		t.Fatal(err) // Unreachable: setupPostgres parsed base already.
	}
	u.Path, u.RawPath = "/"+name, ""
	return u.String()
}

// Postgres returns a *sql.DB (driver "pgx" from github.com/jackc/pgx/v5/stdlib) on
// [PostgresURL](t), closed in t.Cleanup before the schema is dropped. The pool opens at
// most 8 connections.
func Postgres(t testing.TB) *sql.DB {
	t.Helper()
	db, err := sql.Open("pgx", PostgresURL(t))
	if err != nil {
		t.Fatalf("testdb: open postgres: %v", err)
	}
	t.Cleanup(func() { _ = db.Close() })
	db.SetMaxOpenConns(testMaxOpenConns)
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := db.PingContext(ctx); err != nil {
		t.Fatalf("testdb: ping postgres: %v", err)
	}
	return db
}

// setupPostgres finds or starts the process's PostgreSQL server and opens the admin pool
// on it.
func setupPostgres() (base string, admin *sql.DB, missing string, err error) {
	base = os.Getenv(envDatabaseURL)
	source := envDatabaseURL
	if base == "" {
		base, err = startContainer(runPostgres)
		if err != nil {
			return "", nil, fmt.Sprintf("testdb: no PostgreSQL: %s is unset and testcontainers could not start a container: %v", envDatabaseURL, err), nil
		}
		source = "the PostgreSQL container"
	}

	u, err := url.Parse(base)
	if err != nil || (u.Scheme != "postgres" && u.Scheme != "postgresql") {
		// The value is not shown: a key=value DSN may hold a password.
		return "", nil, "", fmt.Errorf("testdb: %s must be a postgres:// or postgresql:// URL; a key=value DSN is not supported", source)
	}
	admin, err = sql.Open("pgx", base)
	if err != nil {
		return "", nil, "", fmt.Errorf("testdb: open %s (%s): %w", source, u.Redacted(), err)
	}
	admin.SetMaxOpenConns(adminMaxOpenConns)
	ctx, cancel := context.WithTimeout(context.Background(), opTimeout)
	defer cancel()
	if err := admin.PingContext(ctx); err != nil {
		_ = admin.Close()
		return "", nil, "", fmt.Errorf("testdb: PostgreSQL from %s (%s) does not answer: %w", source, u.Redacted(), err)
	}
	return base, admin, "", nil
}

// runPostgres starts a PostgreSQL container and returns its URL.
func runPostgres(ctx context.Context) (string, error) {
	ctr, err := tcpostgres.Run(ctx, postgresImage,
		tcpostgres.BasicWaitStrategies(),
		// The module's own command plus room for many parallel test pools.
		testcontainers.WithCmd("postgres", "-c", "fsync=off", "-c", "max_connections=200"),
	)
	if err != nil {
		_ = testcontainers.TerminateContainer(ctr)
		return "", err
	}
	u, err := ctr.ConnectionString(ctx, "sslmode=disable")
	if err != nil {
		_ = testcontainers.TerminateContainer(ctr)
		return "", err
	}
	return u, nil
}

// withSearchPath returns the URL rawURL with its query parameter search_path set to
// schema, keeping every other parameter.
func withSearchPath(rawURL, schema string) (string, error) {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "", fmt.Errorf("testdb: parse database URL: %w", err)
	}
	q := u.Query()
	q.Set("search_path", schema)
	u.RawQuery = q.Encode()
	return u.String(), nil
}
