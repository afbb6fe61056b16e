package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/internal/testdb"
)

// pgbExecMode is the pgx query execution mode that the server needs behind
// PgBouncer in transaction pooling mode (default_query_exec_mode in the
// URL). pgx's default, cache_statement, prepares named statements on the
// server connection it happens to be given, and the next client of that
// connection fails to prepare them again: prepared statement "stmtcache_…"
// already exists (SQLSTATE 42P05). exec sends every query in one round trip
// of the extended protocol with the unnamed statement, which PgBouncer
// keeps on one server connection.
const pgbExecMode = "exec"

// pgbPoolSize is PgBouncer's default_pool_size (and max_db_connections):
// the most PostgreSQL connections it opens for the test's database, far
// fewer than the clients of the two replicas.
const pgbPoolSize = 4

// Concurrent traffic: pgbWorkers goroutines, each sending pgbTurns times
// the requests of pgbSteps (see pgbWorker).
const (
	pgbWorkers = 16
	pgbTurns   = 5
)

// Two replicas of the built binary behind one PgBouncer in transaction
// pooling mode, with a pool far smaller than their clients: migrations,
// admin commands, tokens, and concurrent creates, lists, gets and patches
// all succeed, and generated numbers stay unique.
func TestPgBouncerTransactionPooling(t *testing.T) {
	t.Parallel()
	pgbouncer := pgbLookPath(t)
	// A database of its own, not testdb's schema: PgBouncer refuses the
	// search_path startup parameter that a schema's URL carries.
	direct := testdb.PostgresDatabaseURL(t)
	pgb := pgbStart(t, pgbouncer, direct)
	dbURL := pgb.clientURL(url.Values{"default_query_exec_mode": {pgbExecMode}})
	bin := buildBinary(t)

	// First start: two processes migrate the empty database at once. Each
	// migration runs in a transaction that takes pg_advisory_xact_lock, which
	// holds for the transaction, and so on one server connection.
	type migrated struct {
		applied []int
		err     error
	}
	results := make(chan migrated, 2)
	for range 2 {
		go func() {
			out, err := pgbCommand(t.Context(), bin, dbURL, "migrate")
			var m struct{ Applied []int }
			if err == nil {
				err = json.Unmarshal([]byte(out), &m)
			}
			results <- migrated{m.Applied, err}
		}()
	}
	var applied []int
	for range 2 {
		r := <-results
		require.NoError(t, r.err, "waybill migrate through PgBouncer")
		applied = append(applied, r.applied...)
	}
	require.NotEmpty(t, applied, "the first migrate applies the migrations")
	slices.Sort(applied)
	assert.Equal(t, slices.Compact(slices.Clone(applied)), applied, "each migration applied once by the two processes together")
	out, err := pgbCommand(t.Context(), bin, dbURL, "migrate")
	require.NoError(t, err)
	assert.JSONEq(t, `{"applied":[]}`, out)

	// The control: without the setting, pgx's statement cache collides with
	// what an earlier client left prepared on the same server connection.
	plainURL := pgb.clientURL(nil)
	var plainErrs []string
	for range 3 {
		if _, err := pgbCommand(t.Context(), bin, plainURL, "migrate"); err != nil {
			plainErrs = append(plainErrs, err.Error())
		}
	}
	require.NotEmpty(t, plainErrs, "pgx's default cache_statement mode should fail behind PgBouncer in transaction mode; is pool_mode = transaction in effect?")
	assert.Contains(t, plainErrs[0], "(SQLSTATE 42P05)", "prepared statement already exists")

	// Set-up with the admin commands of the binary, through PgBouncer.
	org := pgbCreateID(t, bin, dbURL, "admin", "org", "create", "--name", "Pooled Freight")
	branches := []string{
		pgbCreateID(t, bin, dbURL, "admin", "branch", "create", "--org", org, "--name", "North"),
		pgbCreateID(t, bin, dbURL, "admin", "branch", "create", "--org", org, "--name", "South"),
	}
	var scopes []string
	for _, r := range []string{"accounts", "quotations"} {
		scopes = append(scopes, "svc:"+r+":read", "svc:"+r+":write")
	}
	out, err = pgbCommand(t.Context(), bin, dbURL, "admin", "app", "create", "--org", org, "--name", "Pooled Sync",
		"--scopes", strings.Join(scopes, " "), "--branches", strings.Join(branches, ","))
	require.NoError(t, err)
	var app pgbApp
	require.NoError(t, json.Unmarshal([]byte(out), &app), out)
	require.NotEmpty(t, app.ClientID, out)
	require.NotEmpty(t, app.ClientSecret, out)

	// Two replicas on the one PgBouncer. Each holds up to --db-max-conns
	// client connections to PgBouncer, which shares pgbPoolSize server
	// connections among all of them.
	vars := map[string]string{
		"WAYBILL_DATABASE_URL": dbURL,
		"WAYBILL_ISSUER":       "https://waybill.test", // the replicas verify each other's tokens
		"WAYBILL_RATE_REST":    "0",
		"WAYBILL_RATE_TOKEN":   "0",
	}
	base1, logs1 := startProcess(t, bin, vars, "serve", "--addr", "127.0.0.1:0")
	base2, logs2 := startProcess(t, bin, vars, "serve", "--addr", "127.0.0.1:0")
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("log of replica 1:\n%s\nlog of replica 2:\n%s", logs1, logs2)
		}
	})
	c := &pgbClient{
		t:     t,
		http:  &http.Client{Timeout: wait, Transport: &http.Transport{MaxIdleConnsPerHost: pgbWorkers}},
		bases: []string{base1, base2},
		app:   app,
	}
	token, err := c.token(base1)
	require.NoError(t, err)
	// One account per branch that the quotations are made to.
	accounts := make([]string, len(branches))
	for i, b := range branches {
		rec, err := c.expect(base2, http.MethodPost, "/v1/"+b+"/accounts", token, `{"company_name":"Pooled Customer"}`, http.StatusCreated)
		require.NoError(t, err)
		accounts[i] = rec.Data["id"].(string)
	}

	// Concurrent traffic while the pools are watched.
	watch := pgbWatch(t, pgb, direct)
	var (
		wg      sync.WaitGroup
		mu      sync.Mutex
		errs    []string
		numbers = make([][]string, len(branches)) // quotation numbers created, by branch
		created = make([]int, len(branches))      // accounts created, by branch
	)
	start := time.Now()
	for g := range pgbWorkers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			branch := g % len(branches)
			w := pgbWorker{c: c, g: g, token: token, branch: branches[branch], account: accounts[branch]}
			nums, accs, err := w.run()
			mu.Lock()
			defer mu.Unlock()
			numbers[branch] = append(numbers[branch], nums...)
			created[branch] += accs
			if err != nil {
				errs = append(errs, fmt.Sprintf("worker %d: %v", g, err))
			}
		}()
	}
	wg.Wait()
	elapsed := time.Since(start)
	peak := watch()
	require.Empty(t, errs, "every request answers as expected through PgBouncer")
	requests := pgbWorkers * pgbTurns * len(pgbSteps)
	t.Logf("%d requests from %d goroutines to 2 replicas in %v", requests, pgbWorkers, elapsed.Round(time.Millisecond))

	// Every quotation number of a branch was handed out once, and the list
	// with its total agrees with what was created.
	for i, b := range branches {
		nums := numbers[i]
		assert.Len(t, nums, pgbWorkers/len(branches)*pgbTurns, "quotations of branch %d", i)
		sorted := slices.Clone(nums)
		slices.Sort(sorted)
		assert.Equal(t, slices.Compact(slices.Clone(sorted)), sorted, "quotation numbers of branch %d are unique", i)

		rec, err := c.expect(base1, http.MethodGet, "/v1/"+b+"/quotations?sort=quotation_number:asc&limit=1000", token, "", http.StatusOK)
		require.NoError(t, err)
		assert.Equal(t, float64(len(nums)), rec.Pagination["total"], "total of branch %d", i)
		var listed []string
		for _, r := range rec.List {
			listed = append(listed, r["quotation_number"].(string))
		}
		assert.Equal(t, sorted, listed, "the quotations of branch %d, once each", i)

		rec, err = c.expect(base2, http.MethodGet, "/v1/"+b+"/accounts?filter=company_name:like:Worker%25&limit=1", token, "", http.StatusOK)
		require.NoError(t, err)
		assert.Equal(t, float64(created[i]), rec.Pagination["total"], "accounts of branch %d", i)
	}

	// PgBouncer really pooled: many clients, never more server connections
	// than its pool, on either side.
	t.Logf("peak: %d PgBouncer clients (%d waiting), %d server connections by SHOW POOLS, %d PostgreSQL backends on the database",
		peak.clients, peak.waiting, peak.servers, peak.backends)
	assert.Greater(t, peak.clients, pgbPoolSize, "more clients than server connections at once (SHOW POOLS cl_active + cl_waiting)")
	assert.LessOrEqual(t, peak.servers, pgbPoolSize, "SHOW POOLS sv_*")
	assert.LessOrEqual(t, peak.backends, pgbPoolSize, "pg_stat_activity")
	assert.Positive(t, peak.backends, "pg_stat_activity")
	stats := pgb.show(t, "STATS")
	require.Contains(t, stats, "total_xact_count")
	xacts, err := strconv.Atoi(stats["total_xact_count"])
	require.NoError(t, err)
	assert.Greater(t, xacts, requests, "PgBouncer carried the transactions of every request (SHOW STATS)")
	t.Logf("SHOW STATS: %v", stats)
}

// pgbSteps are the requests of one turn of a pgbWorker, in order: each turn
// creates one quotation.
var pgbSteps = []string{"create account", "create quotation", "list quotations", "get quotation", "patch quotation", "token", "list accounts"}

// pgbWorker sends requests of every kind to both replicas in turn, in one
// branch.
type pgbWorker struct {
	c                      *pgbClient
	g                      int // the worker's number
	token, branch, account string
}

// run sends pgbTurns turns of pgbSteps and returns the quotation numbers
// it was given and the number of accounts it created; it stops at the
// first unexpected answer.
func (w *pgbWorker) run() (numbers []string, accounts int, err error) {
	var quotation, number string
	path := "/v1/" + w.branch
	for i := range pgbTurns * len(pgbSteps) {
		base := w.c.bases[(w.g+i)%len(w.c.bases)]
		step := pgbSteps[i%len(pgbSteps)]
		var rec pgbRecord
		switch step {
		case "create account":
			body := fmt.Sprintf(`{"company_name":"Worker %d-%d","account_type":"carrier","email":"w%d@pooled.test"}`, w.g, i, w.g)
			if _, err = w.c.expect(base, http.MethodPost, path+"/accounts", w.token, body, http.StatusCreated); err == nil {
				accounts++
			}
		case "create quotation":
			body := fmt.Sprintf(`{"account_id":%q,"quotation_date":"2026-03-01","valid_until":"2026-03-31","total_weight_kg":%d.5,"total_packages":%d}`,
				w.account, w.g, i)
			rec, err = w.c.expect(base, http.MethodPost, path+"/quotations", w.token, body, http.StatusCreated)
			if err == nil {
				quotation, _ = rec.Data["id"].(string)
				number, _ = rec.Data["quotation_number"].(string)
				if quotation == "" || number == "" {
					err = fmt.Errorf("create quotation: no id or number in %v", rec.Data)
				}
				numbers = append(numbers, number)
			}
		case "list quotations":
			rec, err = w.c.expect(base, http.MethodGet, path+"/quotations?filter=status:in:draft,sent&filter=total_weight_kg:gte:0&sort=quotation_number:desc&limit=5", w.token, "", http.StatusOK)
			if err == nil {
				if total, _ := rec.Pagination["total"].(float64); total < 1 || len(rec.List) > 5 {
					err = fmt.Errorf("list quotations: total %v with %d records", rec.Pagination["total"], len(rec.List))
				}
			}
		case "get quotation":
			rec, err = w.c.expect(base, http.MethodGet, path+"/quotations/"+quotation, w.token, "", http.StatusOK)
			if err == nil && rec.Data["quotation_number"] != number {
				err = fmt.Errorf("get quotation %s: number %v, created as %s", quotation, rec.Data["quotation_number"], number)
			}
		case "patch quotation":
			rec, err = w.c.expect(base, http.MethodPatch, path+"/quotations/"+quotation, w.token, `{"status":"sent","total_packages":7}`, http.StatusOK)
			if err == nil && (rec.Data["status"] != "sent" || rec.Data["total_packages"] != 7.0) {
				err = fmt.Errorf("patch quotation %s: got %v", quotation, rec.Data)
			}
		case "token":
			_, err = w.c.token(base)
		case "list accounts":
			_, err = w.c.expect(base, http.MethodGet, path+"/accounts?filter=company_name:like:Worker%25&filter=account_type:eq:carrier&sort=company_name:asc&limit=10", w.token, "", http.StatusOK)
		}
		if err != nil {
			return numbers, accounts, fmt.Errorf("request %d (%s) to %s: %w", i+1, step, base, err)
		}
	}
	return numbers, accounts, nil
}

// pgbApp is what "waybill admin app create" prints.
type pgbApp struct {
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret"`
}

// pgbRecord is an answer of the API: one record or a page of them.
type pgbRecord struct {
	Data       map[string]any
	List       []map[string]any
	Pagination map[string]any
}

// pgbClient calls the replicas. Its methods return errors rather than fail
// the test, so that the workers' goroutines may call them.
type pgbClient struct {
	t     *testing.T
	http  *http.Client
	bases []string
	app   pgbApp
}

// expect sends a request and returns its decoded answer, or an error when
// the status is not want.
func (c *pgbClient) expect(base, method, path, token, body string, want int) (pgbRecord, error) {
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequestWithContext(c.t.Context(), method, base+path, rd)
	if err != nil {
		return pgbRecord{}, err
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Authorization", "Bearer "+token)
	raw, status, err := c.do(req)
	if err != nil {
		return pgbRecord{}, err
	}
	if status != want {
		return pgbRecord{}, fmt.Errorf("%s %s: status %d, want %d: %s", method, path, status, want, raw)
	}
	var env struct {
		Data       json.RawMessage
		Pagination map[string]any
	}
	if err := json.Unmarshal(raw, &env); err != nil {
		return pgbRecord{}, fmt.Errorf("%s %s: %w: %s", method, path, err, raw)
	}
	rec := pgbRecord{Pagination: env.Pagination}
	if bytes.HasPrefix(env.Data, []byte("[")) {
		err = json.Unmarshal(env.Data, &rec.List)
	} else {
		err = json.Unmarshal(env.Data, &rec.Data)
	}
	if err != nil {
		return pgbRecord{}, fmt.Errorf("%s %s: %w: %s", method, path, err, raw)
	}
	return rec, nil
}

// token gets a client credentials token of the app from base.
func (c *pgbClient) token(base string) (string, error) {
	form := url.Values{"grant_type": {"client_credentials"}}
	req, err := http.NewRequestWithContext(c.t.Context(), http.MethodPost, base+"/v1/oauth/token", strings.NewReader(form.Encode()))
	if err != nil {
		return "", err
	}
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(url.QueryEscape(c.app.ClientID), url.QueryEscape(c.app.ClientSecret))
	raw, status, err := c.do(req)
	if err != nil {
		return "", err
	}
	var m struct {
		AccessToken string `json:"access_token"`
	}
	if status != http.StatusOK || json.Unmarshal(raw, &m) != nil || m.AccessToken == "" {
		return "", fmt.Errorf("token: status %d: %s", status, raw)
	}
	return m.AccessToken, nil
}

// do sends req and reads the whole answer.
func (c *pgbClient) do(req *http.Request) ([]byte, int, error) {
	res, err := c.http.Do(req)
	if err != nil {
		return nil, 0, err
	}
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	return raw, res.StatusCode, err
}

// pgbCommand runs the binary with args and --database-url dbURL, in this
// process's environment without its WAYBILL_* variables, and returns its
// stdout; an error carries its stderr.
func pgbCommand(ctx context.Context, bin, dbURL string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, bin, append(args, "--database-url", dbURL)...)
	cmd.Env = slices.DeleteFunc(os.Environ(), func(e string) bool { return strings.HasPrefix(e, "WAYBILL_") })
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("waybill %s: %w: %s", strings.Join(args, " "), err, strings.TrimSpace(stderr.String()))
	}
	return stdout.String(), nil
}

// pgbCreateID runs a create command of the binary that must succeed and
// returns the id it prints.
func pgbCreateID(t *testing.T, bin, dbURL string, args ...string) string {
	t.Helper()
	out, err := pgbCommand(t.Context(), bin, dbURL, args...)
	require.NoError(t, err)
	var m struct{ ID string }
	require.NoError(t, json.Unmarshal([]byte(out), &m), out)
	require.NotEmpty(t, m.ID, out)
	return m.ID
}

// pgbLookPath returns the path of the pgbouncer program. Without it the test
// is skipped, or fails when CI is set.
func pgbLookPath(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("pgbouncer")
	if err == nil {
		return path
	}
	// Debian installs it in /usr/sbin, which is not on every user's PATH.
	if _, serr := os.Stat("/usr/sbin/pgbouncer"); serr == nil {
		return "/usr/sbin/pgbouncer"
	}
	msg := "pgbouncer is not installed; install it to run this test: apt-get install pgbouncer (Debian, Ubuntu), brew install pgbouncer (macOS)"
	if os.Getenv("CI") != "" {
		t.Fatal(msg + " (.ci/run does)")
	}
	t.Skip(msg)
	return ""
}

// pgbBouncer is a PgBouncer process of the test's own.
type pgbBouncer struct {
	port           int
	user, password string
	database       string
}

// pgbStart starts pgbouncer in front of the database that dbURL names, in
// transaction pooling mode with a pool of pgbPoolSize server connections,
// on a free port of 127.0.0.1, and stops it in t.Cleanup. Its config and
// auth file are in a temporary directory; as root it runs as nobody, since
// pgbouncer refuses to run as root.
func pgbStart(t *testing.T, pgbouncer, dbURL string) *pgbBouncer {
	t.Helper()
	u, err := url.Parse(dbURL)
	require.NoError(t, err)
	host, port := u.Hostname(), u.Port()
	if host == "" {
		host = "localhost"
	}
	if port == "" {
		port = "5432"
	}
	password, _ := u.User.Password()
	p := &pgbBouncer{port: pgbFreePort(t), user: u.User.Username(), password: password, database: strings.TrimPrefix(u.Path, "/")}

	dir := t.TempDir()
	// The auth file lists the user; with auth_type trust its password is the
	// one PgBouncer logs in to PostgreSQL with, if that asks for one.
	userlist := filepath.Join(dir, "userlist.txt")
	require.NoError(t, os.WriteFile(userlist, []byte(pgbQuote(p.user)+" "+pgbQuote(p.password)+"\n"), 0o644))
	config := filepath.Join(dir, "pgbouncer.ini")
	ini := fmt.Sprintf(`[databases]
%s = host=%s port=%s dbname=%s

[pgbouncer]
listen_addr = 127.0.0.1
listen_port = %d
unix_socket_dir =
auth_type = trust
auth_file = %s
admin_users = %s
pool_mode = transaction
default_pool_size = %d
max_db_connections = %d
min_pool_size = 0
reserve_pool_size = 0
max_client_conn = 200
log_connections = 0
log_disconnections = 0
`, p.database, host, port, p.database, p.port, userlist, p.user, pgbPoolSize, pgbPoolSize)
	if pgbSupportsPreparedStatements(t, pgbouncer) {
		// 1.21 and later can track protocol-level prepared statements in
		// transaction mode (on by default since 1.22); off, like Debian's
		// 1.18, so that the test shows what the server needs without it.
		ini += "max_prepared_statements = 0\n"
	}
	require.NoError(t, os.WriteFile(config, []byte(ini), 0o644))

	var args []string
	if os.Geteuid() == 0 {
		// pgbouncer reads both files before it switches user; a RELOAD reads
		// them again as nobody, through the test's directories.
		args = append(args, "-u", "nobody")
		require.NoError(t, os.Chmod(dir, 0o755))
		require.NoError(t, os.Chmod(filepath.Dir(dir), 0o755))
	}
	cmd := exec.Command(pgbouncer, append(args, config)...)
	logs := &syncBuffer{}
	cmd.Stdout, cmd.Stderr = logs, logs
	require.NoError(t, cmd.Start())
	exited := make(chan error, 1)
	go func() { exited <- cmd.Wait() }()
	t.Cleanup(func() {
		_ = cmd.Process.Signal(syscall.SIGTERM) // "fast exit": the replicas stopped first
		select {
		case <-exited:
			if t.Failed() {
				t.Logf("log of pgbouncer:\n%s", logs)
			}
		case <-time.After(wait):
			_ = cmd.Process.Kill()
			t.Errorf("pgbouncer did not exit after SIGTERM; its log:\n%s", logs)
		}
	})

	// Ready once it accepts connections.
	deadline := time.Now().Add(wait)
	for {
		conn, err := net.DialTimeout("tcp", net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port)), time.Second)
		if err == nil {
			_ = conn.Close()
			break
		}
		select {
		case err := <-exited:
			t.Fatalf("pgbouncer exited (%v); its log:\n%s", err, logs)
		case <-time.After(50 * time.Millisecond):
		}
		if time.Now().After(deadline) {
			t.Fatalf("pgbouncer does not accept connections on port %d; its log:\n%s", p.port, logs)
		}
	}
	return p
}

// pgbSupportsPreparedStatements reports whether the pgbouncer program knows
// the setting max_prepared_statements (version 1.21 and later); older ones
// refuse to start on a setting they do not know.
func pgbSupportsPreparedStatements(t *testing.T, pgbouncer string) bool {
	t.Helper()
	out, err := exec.CommandContext(t.Context(), pgbouncer, "--version").Output()
	require.NoError(t, err, "pgbouncer --version")
	first, _, _ := strings.Cut(string(out), "\n")
	var major, minor int
	_, err = fmt.Sscanf(first, "PgBouncer %d.%d", &major, &minor)
	require.NoError(t, err, "pgbouncer --version printed %q", first)
	return major > 1 || major == 1 && minor >= 21
}

// clientURL returns the URL of the test's database through PgBouncer, with
// the query parameters params.
func (p *pgbBouncer) clientURL(params url.Values) string {
	q := url.Values{"sslmode": {"disable"}}
	for k, v := range params {
		q[k] = v
	}
	u := url.URL{Scheme: "postgres", User: url.User(p.user), Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port)), Path: "/" + p.database, RawQuery: q.Encode()}
	return u.String()
}

// show runs SHOW what on PgBouncer's admin console and returns the row of
// the test's database, column by column.
func (p *pgbBouncer) show(t *testing.T, what string) map[string]string {
	t.Helper()
	conn := p.console(t)
	defer func() { _ = conn.Close(context.Background()) }()
	row, err := pgbShow(t.Context(), conn, what, p.database)
	require.NoError(t, err)
	return row
}

// console connects to PgBouncer's admin console, which speaks only the
// simple query protocol.
func (p *pgbBouncer) console(t *testing.T) *pgx.Conn {
	t.Helper()
	u := url.URL{Scheme: "postgres", User: url.User(p.user), Host: net.JoinHostPort("127.0.0.1", strconv.Itoa(p.port)), Path: "/pgbouncer",
		RawQuery: "sslmode=disable&default_query_exec_mode=simple_protocol"}
	ctx, cancel := context.WithTimeout(t.Context(), wait)
	defer cancel()
	conn, err := pgx.Connect(ctx, u.String())
	require.NoError(t, err, "PgBouncer's admin console")
	return conn
}

// pgbShow runs SHOW what on the admin console conn and returns the row of
// database, or an error when there is none.
func pgbShow(ctx context.Context, conn *pgx.Conn, what, database string) (map[string]string, error) {
	rows, err := conn.Query(ctx, "SHOW "+what)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var found map[string]string
	for rows.Next() {
		// Every value in the text format of the simple protocol.
		values := rows.RawValues()
		row := map[string]string{}
		for i, f := range rows.FieldDescriptions() {
			row[f.Name] = string(values[i])
		}
		if row["database"] == database {
			found = row
		}
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	if found == nil {
		return nil, fmt.Errorf("SHOW %s: no row of database %s", what, database)
	}
	return found, nil
}

// pgbPeak is the most connections seen at once while the pools were
// watched.
type pgbPeak struct {
	clients  int // PgBouncer's clients of the database, active or waiting
	waiting  int // of which waiting for a server connection
	servers  int // PgBouncer's server connections of the database, in any state
	backends int // PostgreSQL's client backends on the database, seen from PostgreSQL
}

// pgbWatch samples SHOW POOLS on PgBouncer's admin console and
// pg_stat_activity on PostgreSQL (through dbURL, not PgBouncer) until the
// function it returns is called, which returns the peaks.
func pgbWatch(t *testing.T, p *pgbBouncer, dbURL string) func() pgbPeak {
	t.Helper()
	conn := p.console(t)
	direct, err := sql.Open("pgx", dbURL)
	require.NoError(t, err)
	direct.SetMaxOpenConns(1)
	ctx, cancel := context.WithCancel(t.Context())
	done := make(chan struct{})
	var (
		peak   pgbPeak
		errSum error
	)
	go func() {
		defer close(done)
		for ctx.Err() == nil {
			row, err := pgbShow(ctx, conn, "POOLS", p.database)
			if err != nil {
				if ctx.Err() == nil {
					errSum = errors.Join(errSum, err)
				}
				return
			}
			n := func(col string) int { v, _ := strconv.Atoi(row[col]); return v }
			servers := 0
			for col := range row {
				if strings.HasPrefix(col, "sv_") {
					servers += n(col)
				}
			}
			peak.clients = max(peak.clients, n("cl_active")+n("cl_waiting"))
			peak.waiting = max(peak.waiting, n("cl_waiting"))
			peak.servers = max(peak.servers, servers)
			var backends int
			err = direct.QueryRowContext(ctx, `SELECT count(*) FROM pg_stat_activity
				WHERE datname = current_database() AND backend_type = 'client backend' AND pid <> pg_backend_pid()`).Scan(&backends)
			if err != nil {
				if ctx.Err() == nil {
					errSum = errors.Join(errSum, err)
				}
				return
			}
			peak.backends = max(peak.backends, backends)
			select {
			case <-ctx.Done():
			case <-time.After(20 * time.Millisecond):
			}
		}
	}()
	return func() pgbPeak {
		cancel()
		<-done
		_ = conn.Close(context.Background())
		_ = direct.Close()
		require.NoError(t, errSum, "watching the pools")
		return peak
	}
}

// pgbFreePort returns a TCP port of 127.0.0.1 that nothing listened on a
// moment ago.
func pgbFreePort(t *testing.T) int {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	require.NoError(t, err)
	port := ln.Addr().(*net.TCPAddr).Port
	require.NoError(t, ln.Close())
	return port
}

// pgbQuote quotes s for PgBouncer's auth file: in double quotes, a double
// quote doubled.
func pgbQuote(s string) string {
	return `"` + strings.ReplaceAll(s, `"`, `""`) + `"`
}
