// Package testdb gives each test its own PostgreSQL schema, SQLite file or Redis key prefix.
//
// Tests call [Postgres], [PostgresURL], [PostgresDatabaseURL], [SQLite], [SQLitePath] or [Redis] and get a
// database or key space that no other test sees and that is removed in t.Cleanup, so
// tests may call t.Parallel freely.
//
// PostgreSQL and Redis come from the environment when it names them:
//
//	WAYBILL_TEST_DATABASE_URL  a postgres:// URL, e.g. postgres://postgres@127.0.0.1:5432/waybill_test?sslmode=disable
//	WAYBILL_TEST_REDIS_URL     a redis:// URL, e.g. redis://127.0.0.1:6379/0
//
// When a variable is unset, the first test that needs the service starts one container
// for it with testcontainers-go; every later test of the same test binary reuses that
// container, and the testcontainers reaper removes it when the process exits. When the
// variable is unset and no container can be started (no Docker), the test is skipped
// with a message that says so, or fails when the environment variable CI is non-empty:
// in CI nothing may skip. A service that is configured but does not answer always fails
// the test.
//
// A skipped test shows only with go test -v, so every package whose tests use this
// package runs them with [Main], which tells the terminal how many tests skipped and how
// to run them.
package testdb

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"net/url"
	"os"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/testcontainers/testcontainers-go"
)

// Environment variables read by this package.
const (
	envDatabaseURL = "WAYBILL_TEST_DATABASE_URL"
	envRedisURL    = "WAYBILL_TEST_REDIS_URL"
	envCI          = "CI"
)

// Container images started when the environment names no service. PostgreSQL 15 is what
// the project's machines run.
const (
	postgresImage = "postgres:15-alpine"
	redisImage    = "redis:7-alpine"
)

const (
	// dockerCheckTimeout bounds the check that a container runtime answers at all, so
	// that a machine without Docker skips at once instead of waiting for retries.
	dockerCheckTimeout = 10 * time.Second
	// containerStartTimeout bounds pulling and starting a container once Docker answers.
	containerStartTimeout = 5 * time.Minute
	// opTimeout bounds each administrative statement (ping, CREATE/DROP SCHEMA, key
	// deletion).
	opTimeout = time.Minute
)

// service is one backing service shared by every test of the process, set up once, on
// first use.
type service[T any] struct {
	once    sync.Once
	conn    T            // valid when missing and err are empty
	url     string       // the service's URL; valid when missing and err are empty
	missing string       // why no service is available at all: skip, or fail under CI
	err     error        // the service is configured or started but does not work: fail
	skipped atomic.Int64 // tests skipped because the service is missing, for [Main]
}

// get sets the service up with setup on first use and returns its URL and connection.
// It skips or fails t when the service is not available. setup must not call methods of
// t: a Skip or Fatal inside once.Do would leave the service half set up for every test.
func (s *service[T]) get(t testing.TB, setup func() (url string, conn T, missing string, err error)) (string, T) {
	t.Helper()
	s.once.Do(func() { s.url, s.conn, s.missing, s.err = setup() })
	switch {
	case s.err != nil:
		t.Fatal(s.err)
	case s.missing != "":
		if os.Getenv(envCI) != "" {
			t.Fatal(s.missing)
		}
		s.skipped.Add(1)
		t.Skip(s.missing)
	}
	return s.url, s.conn
}

// startContainer starts a container with run after checking, within dockerCheckTimeout,
// that a container runtime answers. It returns the URL run returns.
func startContainer(run func(ctx context.Context) (string, error)) (url string, err error) {
	defer func() {
		// testcontainers panics on some broken setups; treat that as "cannot start".
		if r := recover(); r != nil {
			err = fmt.Errorf("panic: %v", r)
		}
	}()
	if err := checkDocker(); err != nil {
		return "", err
	}
	ctx, cancel := context.WithTimeout(context.Background(), containerStartTimeout)
	defer cancel()
	return run(ctx)
}

// checkDocker reports whether testcontainers' container runtime answers within
// dockerCheckTimeout. Host discovery in testcontainers does not take a context in every
// step, so the check runs in its own goroutine and is abandoned on timeout.
func checkDocker() error {
	ctx, cancel := context.WithTimeout(context.Background(), dockerCheckTimeout)
	defer cancel()
	done := make(chan error, 1)
	go func() {
		defer func() {
			if r := recover(); r != nil {
				done <- fmt.Errorf("panic: %v", r)
			}
		}()
		provider, err := testcontainers.ProviderDefault.GetProvider()
		if err != nil {
			done <- err
			return
		}
		done <- provider.Health(ctx) // Health closes the provider.
	}()
	select {
	case err := <-done:
		if err != nil {
			return fmt.Errorf("docker is not reachable: %w", err)
		}
		return nil
	case <-ctx.Done():
		return fmt.Errorf("docker did not answer within %v", dockerCheckTimeout)
	}
}

// randomHex returns 2n random lowercase hexadecimal characters.
func randomHex(n int) string {
	b := make([]byte, n)
	_, _ = rand.Read(b) // crypto/rand.Read never fails.
	return hex.EncodeToString(b)
}

// redact returns rawURL with any password replaced, or a placeholder when rawURL does not
// parse.
func redact(rawURL string) string {
	u, err := url.Parse(rawURL)
	if err != nil {
		return "<unparsable URL>"
	}
	return u.Redacted()
}
