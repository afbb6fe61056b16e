package main

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"io"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/internal/testdb"
	"github.com/waybillhq/waybill/oauth"
)

// wait bounds every wait of these tests so that a broken server fails the
// test instead of hanging it. It is not a performance assertion.
const wait = 30 * time.Second

// syncBuffer is a bytes.Buffer safe for concurrent use: the server writes its
// logs while the test reads them.
type syncBuffer struct {
	mu  sync.Mutex
	buf bytes.Buffer
}

// Write appends p to the buffer.
func (b *syncBuffer) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.Write(p)
}

// String returns everything written so far.
func (b *syncBuffer) String() string {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.buf.String()
}

// env returns a getenv over m.
func env(m map[string]string) func(string) string {
	return func(k string) string { return m[k] }
}

// readURL reads the first line of r, "waybill listening on http://ADDR", and
// returns the URL in it. It keeps draining r afterwards so that the writer
// never blocks.
func readURL(t testing.TB, r io.Reader) string {
	t.Helper()
	lines := make(chan string, 1)
	go func() {
		br := bufio.NewReader(r)
		line, err := br.ReadString('\n')
		if err != nil {
			close(lines)
		} else {
			lines <- line
		}
		_, _ = io.Copy(io.Discard, br)
	}()
	select {
	case line, ok := <-lines:
		require.True(t, ok, "stdout closed before the address was printed")
		const prefix = "waybill listening on "
		require.True(t, strings.HasPrefix(line, prefix), "first line of stdout: %q", line)
		url := strings.TrimSpace(strings.TrimPrefix(line, prefix))
		require.True(t, strings.HasPrefix(url, "http://127.0.0.1:"), "url %q", url)
		require.NotEqual(t, "http://127.0.0.1:0", url, "the printed port must be the one picked")
		return url
	case <-time.After(wait):
		t.Fatal("no address printed on stdout")
		return ""
	}
}

// get sends a request to url and returns the response with its body read.
func get(t *testing.T, method, url string) (*http.Response, string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, method, url, nil)
	require.NoError(t, err)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return resp, string(body)
}

// startRun runs run in-process with args and getenv and returns the URL it
// listens on, its log, and a function that cancels its context and returns
// run's error.
func startRun(t testing.TB, args []string, getenv func(string) string) (url string, logs *syncBuffer, stop func() error) {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	t.Cleanup(cancel)
	stdoutR, stdoutW := io.Pipe()
	logs = &syncBuffer{}

	done := make(chan error, 1)
	go func() {
		err := run(ctx, args, getenv, stdoutW, logs)
		_ = stdoutW.Close() // ends readURL's reader, also when run fails early
		done <- err
	}()
	url = readURL(t, stdoutR)

	stop = func() error {
		cancel()
		select {
		case err := <-done:
			return err
		case <-time.After(wait):
			t.Fatal("run did not return after its context was cancelled")
			return nil
		}
	}
	return url, logs, stop
}

// logLines parses every line of logs as a JSON object.
func logLines(t *testing.T, logs string) []map[string]any {
	t.Helper()
	var out []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(logs), "\n") {
		if line == "" {
			continue
		}
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(line), &m), "log line %q is not JSON", line)
		out = append(out, m)
	}
	return out
}

// hasLog reports whether some entry of lines has message msg.
func hasLog(lines []map[string]any, msg string) bool {
	for _, l := range lines {
		if l["msg"] == msg {
			return true
		}
	}
	return false
}

func TestRunServe(t *testing.T) {
	t.Parallel()
	dbPath := testdb.SQLitePath(t)
	url, logs, stop := startRun(t, []string{"serve", "--addr", "127.0.0.1:0", "--database-url", "sqlite://" + dbPath}, env(nil))
	assert.FileExists(t, dbPath, "serve opens the database before it prints its address")

	t.Run("healthz", func(t *testing.T) {
		resp, body := get(t, http.MethodGet, url+"/healthz")
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
		assert.JSONEq(t, `{"status":"ok"}`, body)
	})
	t.Run("healthz HEAD", func(t *testing.T) {
		resp, body := get(t, http.MethodHead, url+"/healthz")
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Empty(t, body)
	})
	t.Run("readyz", func(t *testing.T) {
		resp, body := get(t, http.MethodGet, url+"/readyz")
		assert.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
		assert.JSONEq(t, `{"status":"ready"}`, body)
	})
	t.Run("healthz POST", func(t *testing.T) {
		resp, body := get(t, http.MethodPost, url+"/healthz")
		assert.Equal(t, http.StatusMethodNotAllowed, resp.StatusCode)
		assert.Equal(t, "GET, HEAD", resp.Header.Get("Allow"))
		assert.JSONEq(t, `{"error":"method_not_allowed","error_description":"method not allowed; allowed: GET, HEAD"}`, body)
	})
	for _, tc := range []struct{ method, path string }{
		{http.MethodGet, "/nope"},
		{http.MethodGet, "/"},
		{http.MethodDelete, "/v1/x/no_such_resource/1"},
	} {
		t.Run("unknown route "+tc.method+" "+tc.path, func(t *testing.T) {
			resp, body := get(t, tc.method, url+tc.path)
			assert.Equal(t, http.StatusNotFound, resp.StatusCode)
			assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
			assert.JSONEq(t, `{"error":"not_found","error_description":"no route for `+tc.method+" "+tc.path+`"}`, body)
		})
	}

	require.NoError(t, stop(), "run returns nil after a clean shutdown")

	lines := logLines(t, logs.String())
	assert.True(t, hasLog(lines, "database ready"), "logs:\n%s", logs)
	assert.True(t, hasLog(lines, "listening"), "logs:\n%s", logs)
	assert.True(t, hasLog(lines, "stopped"), "logs:\n%s", logs)
	assert.False(t, hasLog(lines, "demo mode requested; seeding demo data is not implemented yet"))

	_, err := net.DialTimeout("tcp", strings.TrimPrefix(url, "http://"), time.Second)
	assert.Error(t, err, "the listener is closed after run returns")

	out, err := runCommand(t, nil, "migrate", "--database-url", "sqlite://"+dbPath)
	require.NoError(t, err)
	assert.JSONEq(t, `{"applied":[]}`, out, "serve migrated the database")
}

// TestRunServePostgres serves on PostgreSQL: serve migrates the database and
// /readyz answers.
func TestRunServePostgres(t *testing.T) {
	t.Parallel()
	dbURL := testdb.PostgresURL(t)
	url, _, stop := startRun(t, []string{"serve", "--addr", "127.0.0.1:0"}, env(map[string]string{"WAYBILL_DATABASE_URL": dbURL}))
	resp, body := get(t, http.MethodGet, url+"/readyz")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.JSONEq(t, `{"status":"ready"}`, body)
	require.NoError(t, stop())

	out, err := runCommand(t, nil, "migrate", "--database-url", dbURL)
	require.NoError(t, err)
	assert.JSONEq(t, `{"applied":[]}`, out, "serve migrated the database")
}

// TestRunNoArgs checks that "waybill" alone is "waybill serve --demo", with
// WAYBILL_ADDR supplying the address, and that flags without a command are
// the flags of "waybill serve --demo", as "go run ./reference --addr
// HOST:PORT" users type them.
func TestRunNoArgs(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args func(dbURL string) []string
		env  func(dbURL string) map[string]string
	}{
		{"no arguments", func(string) []string { return nil }, func(dbURL string) map[string]string {
			return map[string]string{"WAYBILL_ADDR": "127.0.0.1:0", "WAYBILL_DATABASE_URL": dbURL}
		}},
		{"flags only", func(dbURL string) []string { return []string{"--addr", "127.0.0.1:0", "--database-url", dbURL} },
			func(string) map[string]string { return nil }},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dbURL := "sqlite://" + testdb.SQLitePath(t)
			url, _, stop := startRun(t, tt.args(dbURL), env(tt.env(dbURL)))

			resp, _ := get(t, http.MethodGet, url+"/healthz")
			assert.Equal(t, http.StatusOK, resp.StatusCode)
			require.NoError(t, stop())

			db, _, err := openDB(t.Context(), dbURL, defaultDBMaxConns)
			require.NoError(t, err)
			defer db.Close()
			var demo int
			require.NoError(t, db.QueryRow("SELECT COUNT(*) FROM organizations WHERE name = 'Demo Transport'").Scan(&demo))
			assert.Equal(t, 1, demo, "--demo seeded its organization")
		})
	}
}

func TestRunErrors(t *testing.T) {
	t.Parallel()
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	t.Cleanup(func() { _ = busy.Close() })

	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		wantErr string
	}{
		{"unknown command", []string{"bogus"}, nil, `unknown command "bogus"; commands: serve, migrate, admin, openapi, help`},
		{"flags without command are serve --demo's", []string{"--addr", "x"}, nil, "serve: listen tcp: address x: missing port in address; choose another address with --addr HOST:PORT or WAYBILL_ADDR"},
		{"unknown flag", []string{"serve", "--bogus"}, nil, "serve: flag provided but not defined: -bogus"},
		{"positional argument", []string{"serve", "extra"}, nil, `serve: unexpected argument "extra"`},
		{"bad environment value", []string{"serve"}, map[string]string{"WAYBILL_DEMO": "maybe"}, `invalid value "maybe" for WAYBILL_DEMO`},
		{"address in use", []string{"serve", "--addr", busy.Addr().String()}, nil, "serve: listen tcp " + busy.Addr().String() + ": bind: address already in use; choose another address with --addr HOST:PORT or WAYBILL_ADDR (port 0 picks a free port)"},
		{"bad database URL", []string{"serve", "--addr", "127.0.0.1:0", "--database-url", "mysql://x"}, nil, "serve: database URL must start with"},
		{"unreachable database", []string{"serve", "--addr", "127.0.0.1:0"}, map[string]string{"WAYBILL_DATABASE_URL": "postgres://u@127.0.0.1:1/x?connect_timeout=5"}, "serve: open database postgres://u@127.0.0.1:1/x"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			err := run(t.Context(), tt.args, env(tt.env), &stdout, &stderr)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tt.wantErr)
			assert.Empty(t, stdout.String())
		})
	}
}

func TestRunHelp(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{{"help"}, {"-h"}, {"--help"}} {
		t.Run(strings.Join(args, " "), func(t *testing.T) {
			t.Parallel()
			var stdout, stderr bytes.Buffer
			require.NoError(t, run(t.Context(), args, env(nil), &stdout, &stderr))
			assert.Contains(t, stdout.String(), "Usage: waybill <command>")
			assert.Contains(t, stdout.String(), "serve")
			assert.Empty(t, stderr.String())
		})
	}
	t.Run("serve -h", func(t *testing.T) {
		t.Parallel()
		var stdout, stderr bytes.Buffer
		require.NoError(t, run(t.Context(), []string{"serve", "-h"}, env(nil), &stdout, &stderr))
		assert.Contains(t, stdout.String(), "Usage: waybill serve [flags]")
		assert.Contains(t, stdout.String(), "--addr address")
		assert.Contains(t, stdout.String(), "env WAYBILL_ADDR, default 127.0.0.1:8080")
		assert.Contains(t, stdout.String(), "env WAYBILL_DEMO")
		assert.Contains(t, stdout.String(), "--database-url URL")
		assert.Contains(t, stdout.String(), "env WAYBILL_DATABASE_URL, default sqlite://waybill.db")
	})
}

func TestParseServeFlags(t *testing.T) {
	defaultLimits := limitsConfig{REST: defaultRateREST, Edge: defaultRateEdge, Token: defaultRateToken}
	t.Parallel()
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    serveConfig
		wantErr string
	}{
		{name: "defaults", want: serveConfig{Addr: "127.0.0.1:8080", DatabaseURL: defaultDatabaseURL, Limits: defaultLimits, DBMaxConns: defaultDBMaxConns, DBTimeout: defaultDBTimeout, RefreshMaxAge: oauth.DefaultRefreshMaxAge, PurgeInterval: defaultPurgeInterval}},
		{name: "flag", args: []string{"--addr", "127.0.0.1:9000"}, want: serveConfig{Addr: "127.0.0.1:9000", DatabaseURL: defaultDatabaseURL, Limits: defaultLimits, DBMaxConns: defaultDBMaxConns, DBTimeout: defaultDBTimeout, RefreshMaxAge: oauth.DefaultRefreshMaxAge, PurgeInterval: defaultPurgeInterval}},
		{name: "flag with =", args: []string{"-addr=:9001", "-demo"}, want: serveConfig{Addr: ":9001", DatabaseURL: defaultDatabaseURL, Demo: true, Limits: defaultLimits, DBMaxConns: defaultDBMaxConns, DBTimeout: defaultDBTimeout, RefreshMaxAge: oauth.DefaultRefreshMaxAge, PurgeInterval: defaultPurgeInterval}},
		{name: "environment", env: map[string]string{"WAYBILL_ADDR": "0.0.0.0:80", "WAYBILL_DEMO": "true"}, want: serveConfig{Addr: "0.0.0.0:80", DatabaseURL: defaultDatabaseURL, Demo: true, Limits: defaultLimits, DBMaxConns: defaultDBMaxConns, DBTimeout: defaultDBTimeout, RefreshMaxAge: oauth.DefaultRefreshMaxAge, PurgeInterval: defaultPurgeInterval}},
		{name: "empty environment is unset", env: map[string]string{"WAYBILL_ADDR": ""}, want: serveConfig{Addr: "127.0.0.1:8080", DatabaseURL: defaultDatabaseURL, Limits: defaultLimits, DBMaxConns: defaultDBMaxConns, DBTimeout: defaultDBTimeout, RefreshMaxAge: oauth.DefaultRefreshMaxAge, PurgeInterval: defaultPurgeInterval}},
		{name: "flag wins over environment", args: []string{"--addr", "127.0.0.1:1"}, env: map[string]string{"WAYBILL_ADDR": "127.0.0.1:2"}, want: serveConfig{Addr: "127.0.0.1:1", DatabaseURL: defaultDatabaseURL, Limits: defaultLimits, DBMaxConns: defaultDBMaxConns, DBTimeout: defaultDBTimeout, RefreshMaxAge: oauth.DefaultRefreshMaxAge, PurgeInterval: defaultPurgeInterval}},
		{name: "false flag wins over true environment", args: []string{"--demo=false"}, env: map[string]string{"WAYBILL_DEMO": "1"}, want: serveConfig{Addr: "127.0.0.1:8080", DatabaseURL: defaultDatabaseURL, Limits: defaultLimits, DBMaxConns: defaultDBMaxConns, DBTimeout: defaultDBTimeout, RefreshMaxAge: oauth.DefaultRefreshMaxAge, PurgeInterval: defaultPurgeInterval}},
		{name: "environment fills the flags not given", args: []string{"--demo"}, env: map[string]string{"WAYBILL_ADDR": "127.0.0.1:3"}, want: serveConfig{Addr: "127.0.0.1:3", DatabaseURL: defaultDatabaseURL, Demo: true, Limits: defaultLimits, DBMaxConns: defaultDBMaxConns, DBTimeout: defaultDBTimeout, RefreshMaxAge: oauth.DefaultRefreshMaxAge, PurgeInterval: defaultPurgeInterval}},
		{name: "other variables ignored", env: map[string]string{"ADDR": "x", "WAYBILL_ADDRESS": "y"}, want: serveConfig{Addr: "127.0.0.1:8080", DatabaseURL: defaultDatabaseURL, Limits: defaultLimits, DBMaxConns: defaultDBMaxConns, DBTimeout: defaultDBTimeout, RefreshMaxAge: oauth.DefaultRefreshMaxAge, PurgeInterval: defaultPurgeInterval}},
		{name: "database URL flag", args: []string{"--database-url", "postgres://db/w"}, want: serveConfig{Addr: "127.0.0.1:8080", DatabaseURL: "postgres://db/w", Limits: defaultLimits, DBMaxConns: defaultDBMaxConns, DBTimeout: defaultDBTimeout, RefreshMaxAge: oauth.DefaultRefreshMaxAge, PurgeInterval: defaultPurgeInterval}},
		{name: "database URL environment", env: map[string]string{"WAYBILL_DATABASE_URL": "sqlite:///var/lib/w.db"}, want: serveConfig{Addr: "127.0.0.1:8080", DatabaseURL: "sqlite:///var/lib/w.db", Limits: defaultLimits, DBMaxConns: defaultDBMaxConns, DBTimeout: defaultDBTimeout, RefreshMaxAge: oauth.DefaultRefreshMaxAge, PurgeInterval: defaultPurgeInterval}},
		{name: "database pool flags", args: []string{"--db-max-conns", "4", "--db-timeout", "750ms"}, want: serveConfig{Addr: "127.0.0.1:8080", DatabaseURL: defaultDatabaseURL, Limits: defaultLimits, DBMaxConns: 4, DBTimeout: 750 * time.Millisecond, RefreshMaxAge: oauth.DefaultRefreshMaxAge, PurgeInterval: defaultPurgeInterval}},
		{name: "database pool environment", env: map[string]string{"WAYBILL_DB_MAX_CONNS": "32", "WAYBILL_DB_TIMEOUT": "5s"}, want: serveConfig{Addr: "127.0.0.1:8080", DatabaseURL: defaultDatabaseURL, Limits: defaultLimits, DBMaxConns: 32, DBTimeout: 5 * time.Second, RefreshMaxAge: oauth.DefaultRefreshMaxAge, PurgeInterval: defaultPurgeInterval}},
		{name: "refresh max age flag", args: []string{"--refresh-max-age", "720h"}, want: serveConfig{Addr: "127.0.0.1:8080", DatabaseURL: defaultDatabaseURL, Limits: defaultLimits, DBMaxConns: defaultDBMaxConns, DBTimeout: defaultDBTimeout, RefreshMaxAge: 720 * time.Hour, PurgeInterval: defaultPurgeInterval}},
		{name: "refresh max age environment", env: map[string]string{"WAYBILL_REFRESH_MAX_AGE": "24h"}, want: serveConfig{Addr: "127.0.0.1:8080", DatabaseURL: defaultDatabaseURL, Limits: defaultLimits, DBMaxConns: defaultDBMaxConns, DBTimeout: defaultDBTimeout, RefreshMaxAge: 24 * time.Hour, PurgeInterval: defaultPurgeInterval}},
		{name: "purge interval flag", args: []string{"--purge-interval", "15m"}, want: serveConfig{Addr: "127.0.0.1:8080", DatabaseURL: defaultDatabaseURL, Limits: defaultLimits, DBMaxConns: defaultDBMaxConns, DBTimeout: defaultDBTimeout, RefreshMaxAge: oauth.DefaultRefreshMaxAge, PurgeInterval: 15 * time.Minute}},
		{name: "purge interval environment", env: map[string]string{"WAYBILL_PURGE_INTERVAL": "6h"}, want: serveConfig{Addr: "127.0.0.1:8080", DatabaseURL: defaultDatabaseURL, Limits: defaultLimits, DBMaxConns: defaultDBMaxConns, DBTimeout: defaultDBTimeout, RefreshMaxAge: oauth.DefaultRefreshMaxAge, PurgeInterval: 6 * time.Hour}},
		{name: "purge disabled", args: []string{"--purge-interval", "0"}, want: serveConfig{Addr: "127.0.0.1:8080", DatabaseURL: defaultDatabaseURL, Limits: defaultLimits, DBMaxConns: defaultDBMaxConns, DBTimeout: defaultDBTimeout, RefreshMaxAge: oauth.DefaultRefreshMaxAge}},
		{name: "negative purge interval", args: []string{"--purge-interval", "-1h"}, wantErr: "--purge-interval must not be negative"},
		{name: "bad purge interval", env: map[string]string{"WAYBILL_PURGE_INTERVAL": "hourly"}, wantErr: "WAYBILL_PURGE_INTERVAL"},
		{name: "no refresh max age", args: []string{"--refresh-max-age", "0s"}, wantErr: "--refresh-max-age must be positive"},
		{name: "bad refresh max age", env: map[string]string{"WAYBILL_REFRESH_MAX_AGE": "90d"}, wantErr: "WAYBILL_REFRESH_MAX_AGE"},
		{name: "no connections", args: []string{"--db-max-conns", "0"}, wantErr: "--db-max-conns must be at least 1"},
		{name: "issuer with a path", args: []string{"--issuer", "https://tms.example.com/waybill"}, want: serveConfig{Addr: "127.0.0.1:8080", DatabaseURL: defaultDatabaseURL, Issuer: "https://tms.example.com/waybill", Limits: defaultLimits, DBMaxConns: defaultDBMaxConns, DBTimeout: defaultDBTimeout, RefreshMaxAge: oauth.DefaultRefreshMaxAge, PurgeInterval: defaultPurgeInterval}},
		{name: "issuer not a URL", args: []string{"--issuer", "tms.example.com"}, wantErr: "must be an absolute http:// or https:// URL"},
		{name: "issuer of another scheme", args: []string{"--issuer", "ftp://tms.example.com"}, wantErr: "must be an absolute http:// or https:// URL"},
		{name: "issuer without host", args: []string{"--issuer", "https://"}, wantErr: "names no host"},
		{name: "issuer with a trailing slash", args: []string{"--issuer", "https://tms.example.com/"}, wantErr: `must not end with /: tokens carry it as it is, and clients compare it as a string (use "https://tms.example.com")`},
		{name: "issuer with a query", args: []string{"--issuer", "https://tms.example.com?x=1"}, wantErr: "no query or fragment"},
		{name: "short JWT secret", args: []string{"--jwt-secret", "too short"}, wantErr: "--jwt-secret must be at least 32 bytes, not 9"},
		{name: "short previous JWT secret", args: []string{"--jwt-secret", strings.Repeat("k", 32), "--jwt-previous-secret", "old"}, wantErr: "--jwt-previous-secret must be at least 32 bytes"},
		{name: "previous JWT secret alone", args: []string{"--jwt-previous-secret", strings.Repeat("k", 32)}, wantErr: "--jwt-previous-secret needs --jwt-secret"},
		{name: "no time", args: []string{"--db-timeout", "0s"}, wantErr: "--db-timeout must be positive"},
		{name: "event retention", args: []string{"--event-retention", "48h"}, want: serveConfig{Addr: "127.0.0.1:8080", DatabaseURL: defaultDatabaseURL, Limits: defaultLimits, DBMaxConns: defaultDBMaxConns, DBTimeout: defaultDBTimeout, RefreshMaxAge: oauth.DefaultRefreshMaxAge, PurgeInterval: defaultPurgeInterval, EventRetention: 48 * time.Hour}},
		{name: "webhooks", args: []string{"--webhook-allow-private", "--webhook-timeout", "2s"}, want: serveConfig{Addr: "127.0.0.1:8080", DatabaseURL: defaultDatabaseURL, Limits: defaultLimits, DBMaxConns: defaultDBMaxConns, DBTimeout: defaultDBTimeout, RefreshMaxAge: oauth.DefaultRefreshMaxAge, PurgeInterval: defaultPurgeInterval, WebhookAllowPrivate: true, WebhookTimeout: 2 * time.Second}},
		{name: "registration", args: []string{"--registration", "token"}, want: serveConfig{Addr: "127.0.0.1:8080", DatabaseURL: defaultDatabaseURL, Limits: defaultLimits, DBMaxConns: defaultDBMaxConns, DBTimeout: defaultDBTimeout, RefreshMaxAge: oauth.DefaultRefreshMaxAge, PurgeInterval: defaultPurgeInterval, Registration: "token"}},
		{name: "registration environment", env: map[string]string{"WAYBILL_REGISTRATION": "open"}, want: serveConfig{Addr: "127.0.0.1:8080", DatabaseURL: defaultDatabaseURL, Limits: defaultLimits, DBMaxConns: defaultDBMaxConns, DBTimeout: defaultDBTimeout, RefreshMaxAge: oauth.DefaultRefreshMaxAge, PurgeInterval: defaultPurgeInterval, Registration: "open"}},
		{name: "bad registration", args: []string{"--registration", "on"}, wantErr: `--registration must be off, token or open, not "on"`},
		{name: "client metadata documents", args: []string{"--client-metadata-documents"}, want: serveConfig{Addr: "127.0.0.1:8080", DatabaseURL: defaultDatabaseURL, Limits: defaultLimits, DBMaxConns: defaultDBMaxConns, DBTimeout: defaultDBTimeout, RefreshMaxAge: oauth.DefaultRefreshMaxAge, PurgeInterval: defaultPurgeInterval, ClientMetadataDocuments: true}},
		{name: "client metadata documents from the environment", env: map[string]string{"WAYBILL_CLIENT_METADATA_DOCUMENTS": "true"}, want: serveConfig{Addr: "127.0.0.1:8080", DatabaseURL: defaultDatabaseURL, Limits: defaultLimits, DBMaxConns: defaultDBMaxConns, DBTimeout: defaultDBTimeout, RefreshMaxAge: oauth.DefaultRefreshMaxAge, PurgeInterval: defaultPurgeInterval, ClientMetadataDocuments: true}},
		{name: "no webhook timeout", args: []string{"--webhook-timeout", "0s"}, wantErr: "--webhook-timeout must be positive"},
		{name: "webhook retry schedule", args: []string{"--webhook-max-attempts", "2", "--webhook-backoff", "100ms"}, want: serveConfig{Addr: "127.0.0.1:8080", DatabaseURL: defaultDatabaseURL, Limits: defaultLimits, DBMaxConns: defaultDBMaxConns, DBTimeout: defaultDBTimeout, RefreshMaxAge: oauth.DefaultRefreshMaxAge, PurgeInterval: defaultPurgeInterval, WebhookMaxAttempts: 2, WebhookBackoff: 100 * time.Millisecond}},
		{name: "webhook retry schedule environment", env: map[string]string{"WAYBILL_WEBHOOK_MAX_ATTEMPTS": "1", "WAYBILL_WEBHOOK_BACKOFF": "1m"}, want: serveConfig{Addr: "127.0.0.1:8080", DatabaseURL: defaultDatabaseURL, Limits: defaultLimits, DBMaxConns: defaultDBMaxConns, DBTimeout: defaultDBTimeout, RefreshMaxAge: oauth.DefaultRefreshMaxAge, PurgeInterval: defaultPurgeInterval, WebhookMaxAttempts: 1, WebhookBackoff: time.Minute}},
		{name: "no webhook attempts", args: []string{"--webhook-max-attempts", "0"}, wantErr: "--webhook-max-attempts must be at least 1, not 0"},
		{name: "negative webhook attempts", args: []string{"--webhook-max-attempts", "-3"}, wantErr: "--webhook-max-attempts must be at least 1, not -3"},
		{name: "no webhook backoff", args: []string{"--webhook-backoff", "0s"}, wantErr: "--webhook-backoff must be positive, not 0s"},
		{name: "negative webhook backoff", args: []string{"--webhook-backoff", "-5s"}, wantErr: "--webhook-backoff must be positive"},
		{name: "bad webhook backoff", env: map[string]string{"WAYBILL_WEBHOOK_BACKOFF": "soon"}, wantErr: "WAYBILL_WEBHOOK_BACKOFF"},
		{name: "no event retention", args: []string{"--event-retention", "0s"}, wantErr: "--event-retention must be positive"},
		{name: "audit retention", args: []string{"--audit-retention", "720h"}, want: serveConfig{Addr: "127.0.0.1:8080", DatabaseURL: defaultDatabaseURL, Limits: defaultLimits, DBMaxConns: defaultDBMaxConns, DBTimeout: defaultDBTimeout, RefreshMaxAge: oauth.DefaultRefreshMaxAge, PurgeInterval: defaultPurgeInterval, AuditRetention: 720 * time.Hour}},
		{name: "audit retention environment", env: map[string]string{"WAYBILL_AUDIT_RETENTION": "48h"}, want: serveConfig{Addr: "127.0.0.1:8080", DatabaseURL: defaultDatabaseURL, Limits: defaultLimits, DBMaxConns: defaultDBMaxConns, DBTimeout: defaultDBTimeout, RefreshMaxAge: oauth.DefaultRefreshMaxAge, PurgeInterval: defaultPurgeInterval, AuditRetention: 48 * time.Hour}},
		{name: "no audit retention", args: []string{"--audit-retention", "0s"}, wantErr: "--audit-retention must be positive"},
		{name: "bad boolean in environment", env: map[string]string{"WAYBILL_DEMO": "yes please"}, wantErr: "WAYBILL_DEMO"},
		{name: "unknown flag", args: []string{"--port", "1"}, wantErr: "flag provided but not defined: -port"},
		{name: "missing value", args: []string{"--addr"}, wantErr: "flag needs an argument: -addr"},
		{name: "positional argument", args: []string{"--demo", "now"}, wantErr: `unexpected argument "now"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var help bytes.Buffer
			got, err := parseServeFlags(tt.args, env(tt.env), &help)
			if tt.wantErr != "" {
				require.Error(t, err)
				assert.Contains(t, err.Error(), tt.wantErr)
				return
			}
			require.NoError(t, err)
			if tt.want.EventRetention == 0 {
				tt.want.EventRetention = defaultEventRetention // the cases below leave these to their defaults
			}
			if tt.want.AuditRetention == 0 {
				tt.want.AuditRetention = defaultAuditRetention
			}
			if tt.want.WebhookTimeout == 0 {
				tt.want.WebhookTimeout = defaultWebhookTimeout
			}
			if tt.want.WebhookMaxAttempts == 0 {
				tt.want.WebhookMaxAttempts = defaultWebhookMaxAttempts
			}
			if tt.want.WebhookBackoff == 0 {
				tt.want.WebhookBackoff = defaultWebhookBackoff
			}
			if tt.want.Registration == "" {
				tt.want.Registration = "off"
			}
			assert.Equal(t, tt.want, got)
			assert.Empty(t, help.String())
		})
	}

	t.Run("help", func(t *testing.T) {
		t.Parallel()
		var help bytes.Buffer
		_, err := parseServeFlags([]string{"-h"}, env(nil), &help)
		assert.ErrorIs(t, err, flag.ErrHelp)
		assert.Contains(t, help.String(), "--demo")
	})
}

func TestEnvName(t *testing.T) {
	t.Parallel()
	for flagName, want := range map[string]string{
		"addr":          "WAYBILL_ADDR",
		"demo":          "WAYBILL_DEMO",
		"database-url":  "WAYBILL_DATABASE_URL",
		"rate-rest":     "WAYBILL_RATE_REST",
		"rate-rest-app": "WAYBILL_RATE_REST_APP",
	} {
		assert.Equal(t, want, envName(flagName))
	}
}

// TestBinary builds the waybill binary and runs it as a separate process:
// it prints its address, serves /healthz, logs JSON lines and exits 0 on
// SIGTERM.
func TestBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skipf("building the binary needs the go command on PATH: %v", err)
	}
	t.Parallel()

	bin := filepath.Join(t.TempDir(), "waybill")
	build := exec.CommandContext(t.Context(), goTool, "build", "-o", bin, ".")
	out, err := build.CombinedOutput()
	require.NoError(t, err, "go build:\n%s", out)

	dbURL := "sqlite://" + testdb.SQLitePath(t)
	cmd := exec.Command(bin, "serve", "--addr", "127.0.0.1:0", "--database-url", dbURL)
	cmd.Env = append(os.Environ(), "WAYBILL_ADDR=127.0.0.1:1") // the flag must win
	stdoutR, stdoutW := io.Pipe()
	cmd.Stdout = stdoutW
	var stderr syncBuffer
	cmd.Stderr = &stderr
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() {
		err := cmd.Wait()
		_ = stdoutW.Close()
		exited <- err
	}()
	t.Cleanup(func() { _ = cmd.Process.Kill() })

	url := readURL(t, stdoutR)
	resp, body := get(t, http.MethodGet, url+"/healthz")
	assert.Equal(t, http.StatusOK, resp.StatusCode)
	assert.JSONEq(t, `{"status":"ok"}`, body)

	resp, body = get(t, http.MethodGet, url+"/nope")
	assert.Equal(t, http.StatusNotFound, resp.StatusCode)
	assert.JSONEq(t, `{"error":"not_found","error_description":"no route for GET /nope"}`, body)

	require.NoError(t, cmd.Process.Signal(syscall.SIGTERM))
	select {
	case err := <-exited:
		require.NoError(t, err, "exit after SIGTERM; stderr:\n%s", stderr.String())
		assert.Equal(t, 0, cmd.ProcessState.ExitCode())
	case <-time.After(wait):
		t.Fatalf("no exit after SIGTERM; stderr:\n%s", stderr.String())
	}

	lines := logLines(t, stderr.String())
	require.True(t, hasLog(lines, "listening"), "stderr:\n%s", stderr.String())
	assert.True(t, hasLog(lines, "shutting down"), "stderr:\n%s", stderr.String())
	assert.True(t, hasLog(lines, "stopped"), "stderr:\n%s", stderr.String())
	for _, l := range lines {
		assert.Contains(t, l, "time")
		assert.Contains(t, l, "level")
	}

	t.Run("admin command", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		admin := exec.CommandContext(t.Context(), bin, "admin", "org", "create", "--name", "Acme")
		admin.Env = append(os.Environ(), "WAYBILL_DATABASE_URL="+dbURL)
		admin.Stdout, admin.Stderr = &stdout, &stderr
		require.NoError(t, admin.Run(), "stderr:\n%s", stderr.String())
		var out map[string]string
		require.NoError(t, json.Unmarshal(stdout.Bytes(), &out), "stdout: %q", stdout.String())
		assert.NotEmpty(t, out["id"])
		assert.Empty(t, stderr.String())
	})
	t.Run("failing admin command", func(t *testing.T) {
		var stdout, stderr bytes.Buffer
		admin := exec.CommandContext(t.Context(), bin, "admin", "branch", "create", "--org", "00000000-0000-4000-8000-000000000000", "--name", "X", "--database-url", dbURL)
		admin.Stdout, admin.Stderr = &stdout, &stderr
		err := admin.Run()
		require.Error(t, err)
		assert.Equal(t, 1, admin.ProcessState.ExitCode())
		assert.Empty(t, stdout.String())
		assert.Equal(t, "waybill: admin branch create: organization 00000000-0000-4000-8000-000000000000 not found\n", stderr.String())
	})
}

// testLogger returns the logger of a server a test builds in process: its
// JSON lines go to the test's output, shown when the test fails or with -v.
func testLogger(tb testing.TB) *slog.Logger {
	return slog.New(slog.NewJSONHandler(tb.Output(), nil))
}
