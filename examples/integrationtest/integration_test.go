package integrationtest_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"github.com/testcontainers/testcontainers-go"
	tcpostgres "github.com/testcontainers/testcontainers-go/modules/postgres"

	"github.com/waybillhq/waybill/examples/integrationtest"
	"github.com/waybillhq/waybill/oauth/bearer"
)

// ---- PostgreSQL for tests: copy this part. ----

// container is the PostgreSQL container that postgresServer started, if it
// started one; TestMain removes it when the tests are done.
var container *tcpostgres.PostgresContainer

// postgresServer returns the URL of a PostgreSQL server, found or started
// once per test binary: the one WAYBILL_TEST_DATABASE_URL names
// (postgres://user@host:port/db?sslmode=disable), else a container that
// testcontainers-go starts (Docker needed). The error says why there is
// none.
var postgresServer = sync.OnceValues(func() (string, error) {
	if u := os.Getenv("WAYBILL_TEST_DATABASE_URL"); u != "" {
		return u, nil
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	ctr, err := tcpostgres.Run(ctx, "postgres:15-alpine", tcpostgres.BasicWaitStrategies())
	if err != nil {
		_ = testcontainers.TerminateContainer(ctr)
		return "", fmt.Errorf("no PostgreSQL: WAYBILL_TEST_DATABASE_URL is unset and testcontainers could not start a container: %w", err)
	}
	container = ctr
	return ctr.ConnectionString(ctx, "sslmode=disable")
})

// skipped counts the tests that skipped for want of PostgreSQL.
var skipped atomic.Int64

// TestMain runs the tests, then removes the container if one was started,
// and says how many tests skipped for want of PostgreSQL.
func TestMain(m *testing.M) {
	code := m.Run()
	if container != nil {
		_ = testcontainers.TerminateContainer(container)
	}
	if n := skipped.Load(); n == 1 {
		announce("examples/integrationtest: 1 test skipped for want of PostgreSQL; set WAYBILL_TEST_DATABASE_URL or start Docker to run it")
	} else if n > 1 {
		announce(fmt.Sprintf("examples/integrationtest: %d tests skipped for want of PostgreSQL; "+
			"set WAYBILL_TEST_DATABASE_URL or start Docker to run them", n))
	}
	os.Exit(code)
}

// announce writes line where the person who ran go test sees it, although go
// test shows the output of a passing package only with -v: to standard output
// under -v; otherwise to the terminal; without one (a CI log, a pipe), to the
// standard error of the go command that runs the test binary (its parent,
// found through Linux's /proc); else to standard output.
func announce(line string) {
	out := os.Stdout
	if !testing.Verbose() {
		parent := fmt.Sprintf("/proc/%d/", os.Getppid())
		if tty, err := os.OpenFile("/dev/tty", os.O_WRONLY, 0); err == nil {
			out = tty
		} else if exe, err := os.Readlink(parent + "exe"); err == nil && filepath.Base(exe) == "go" {
			if f, err := os.OpenFile(parent+"fd/2", os.O_WRONLY|os.O_APPEND, 0); err == nil {
				out = f
			}
		}
	}
	fmt.Fprintln(out, line)
	if out != os.Stdout {
		_ = out.Close()
	}
}

// postgres returns a database that belongs to t alone: a new schema on
// postgresServer, which every connection uses through the search_path
// parameter of the URL, dropped with everything in it when t ends. Without
// a server t is skipped with the reason, or fails when CI is set: in CI
// nothing may skip.
func postgres(t *testing.T) *sql.DB {
	t.Helper()
	server, err := postgresServer()
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatal(err)
		}
		skipped.Add(1)
		t.Skip(err)
	}
	u, err := url.Parse(server)
	require.NoError(t, err, "WAYBILL_TEST_DATABASE_URL must be a postgres:// URL")

	schema := "test_" + strings.ToLower(rand.Text())
	admin, err := sql.Open("pgx", server)
	require.NoError(t, err)
	_, err = admin.Exec("CREATE SCHEMA " + schema)
	require.NoError(t, err)
	t.Cleanup(func() {
		_, err := admin.Exec("DROP SCHEMA " + schema + " CASCADE")
		assert.NoError(t, err)
		admin.Close()
	})

	q := u.Query()
	q.Set("search_path", schema) // pgx sends unknown parameters as run-time settings
	u.RawQuery = q.Encode()
	db, err := sql.Open("pgx", u.String())
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() }) // runs before the DROP above: cleanups run last first
	return db
}

// ---- The API under test. ----

// Organization A with branches A1 and A2, organization B with branch B1.
const (
	orgA = "0a000000-0000-4000-8000-00000000000a"
	orgB = "0b000000-0000-4000-8000-00000000000b"
	a1   = "0a000000-0000-4000-8000-0000000000a1"
	a2   = "0a000000-0000-4000-8000-0000000000a2"
	b1   = "0b000000-0000-4000-8000-0000000000b1"
)

// issuer is the token service the tests pretend to be.
const issuer = "https://tokens.test"

// api is the tickets API on a migrated database of its own, served over
// HTTP, and the key set that signs its tokens.
type api struct {
	url  string
	keys *bearer.KeySet
}

// newAPI migrates a new database, adds the branches, and serves the
// registry.
func newAPI(t *testing.T) *api {
	t.Helper()
	db := postgres(t)
	require.NoError(t, integrationtest.Migrate(context.Background(), db))
	for _, b := range [][2]string{{a1, orgA}, {a2, orgA}, {b1, orgB}} {
		_, err := db.Exec(`INSERT INTO branches (id, organization_id) VALUES ($1, $2)`, b[0], b[1])
		require.NoError(t, err)
	}
	keys, err := bearer.NewKeySet(bearer.Key{ID: "test", Secret: []byte(strings.Repeat("k", bearer.MinKeyLength))})
	require.NoError(t, err)
	reg, err := integrationtest.NewRegistry(db, &bearer.Verifier{Keys: keys, Issuer: issuer})
	require.NoError(t, err)
	mux := http.NewServeMux()
	reg.Mount(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &api{url: srv.URL, keys: keys}
}

// token signs a client-credentials token of org for branches with scopes,
// as the token service would issue it.
func (a *api) token(t *testing.T, org string, branches []string, scopes ...string) string {
	t.Helper()
	now := time.Now()
	tok, err := a.keys.Sign(&bearer.Claims{
		Issuer: issuer, Subject: "app-" + org[:2], Audience: bearer.Audience, Role: bearer.Role,
		IssuedAt: now.Unix(), ExpiresAt: now.Add(time.Hour).Unix(), ID: rand.Text(),
		OrganizationID: org, ClientID: "client-" + org[:2], Scopes: scopes, BranchIDs: branches, AppName: "Helpdesk",
	})
	require.NoError(t, err)
	return tok
}

// response is a decoded JSON response.
type response struct {
	Status     int
	Data       json.RawMessage `json:"data"`
	Error      string          `json:"error"`
	Pagination struct {
		Total int `json:"total"`
	} `json:"pagination"`
	raw string
}

// ticket is a ticket as the API returns it.
type ticket struct {
	ID            string  `json:"id"`
	Subject       string  `json:"subject"`
	Status        string  `json:"status"`
	Priority      int     `json:"priority"`
	CustomerEmail *string `json:"customer_email"`
}

// do sends a request with a bearer token and a JSON body (none when "").
func (a *api) do(t *testing.T, method, path, token, body string) response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, a.url+path, rd)
	require.NoError(t, err)
	req.Header.Set("Authorization", "Bearer "+token)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	r := response{Status: res.StatusCode, raw: string(raw)}
	require.NoError(t, json.Unmarshal(raw, &r), string(raw))
	return r
}

// create creates a ticket in branch and returns it.
func (a *api) create(t *testing.T, token, branch, body string) ticket {
	t.Helper()
	r := a.do(t, "POST", "/v1/"+branch+"/tickets", token, body)
	require.Equal(t, http.StatusCreated, r.Status, r.raw)
	var tk ticket
	require.NoError(t, json.Unmarshal(r.Data, &tk))
	return tk
}

// list lists the tickets of branch with the query string q.
func (a *api) list(t *testing.T, token, branch, q string) []ticket {
	t.Helper()
	r := a.do(t, "GET", "/v1/"+branch+"/tickets?"+q, token, "")
	require.Equal(t, http.StatusOK, r.Status, r.raw)
	var tks []ticket
	require.NoError(t, json.Unmarshal(r.Data, &tks))
	require.Len(t, tks, r.Pagination.Total, "one page holds them all")
	return tks
}

func subjects(tks []ticket) []string {
	s := make([]string, len(tks))
	for i, tk := range tks {
		s[i] = tk.Subject
	}
	return s
}

// ---- The tests. ----

var rw = []string{"svc:tickets:read", "svc:tickets:write"}

func TestCreate(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	tok := a.token(t, orgA, []string{a1}, rw...)

	tk := a.create(t, tok, a1, `{"subject":"Pallet damaged","customer_email":"ops@example.com"}`)
	assert.Equal(t, "open", tk.Status, "the status flow's initial state")
	assert.Equal(t, 3, tk.Priority, "the column's default")
	require.NotNil(t, tk.CustomerEmail)

	r := a.do(t, "GET", "/v1/"+a1+"/tickets/"+tk.ID, tok, "")
	require.Equal(t, http.StatusOK, r.Status, r.raw)

	for _, c := range []struct{ name, body, code string }{
		{"subject is required", `{"priority":1}`, "invalid_create"},
		{"priority is at most 5", `{"subject":"x","priority":9}`, "invalid_create"},
		{"the tenant columns are the server's", `{"subject":"x","branch_id":"` + a2 + `"}`, "invalid_create"},
		{"status is one of the enum's values", `{"subject":"x","status":"lost"}`, "invalid_create"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := a.do(t, "POST", "/v1/"+a1+"/tickets", tok, c.body)
			assert.Equal(t, http.StatusBadRequest, r.Status, r.raw)
			assert.Equal(t, c.code, r.Error, r.raw)
		})
	}
}

func TestListAndFilter(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	tok := a.token(t, orgA, []string{a1}, rw...)
	a.create(t, tok, a1, `{"subject":"Late delivery","priority":1}`)
	a.create(t, tok, a1, `{"subject":"Invoice question","priority":4,"customer_email":"ap@example.com"}`)
	a.create(t, tok, a1, `{"subject":"Late pickup","priority":2}`)

	for _, c := range []struct {
		query string
		want  []string
	}{
		{"sort=priority:asc", []string{"Late delivery", "Late pickup", "Invoice question"}},
		{"filter=priority:lte:2&sort=subject:asc", []string{"Late delivery", "Late pickup"}},
		{"filter=subject:ilike:late%25&sort=priority:desc", []string{"Late pickup", "Late delivery"}},
		{"filter=customer_email:isnull:false", []string{"Invoice question"}},
		{"filter=status:eq:closed", []string{}},
	} {
		t.Run(c.query, func(t *testing.T) {
			assert.Equal(t, c.want, subjects(a.list(t, tok, a1, c.query)))
		})
	}

	r := a.do(t, "GET", "/v1/"+a1+"/tickets?filter=organization_id:eq:"+orgA, tok, "")
	assert.Equal(t, http.StatusBadRequest, r.Status, "the tenant columns cannot be filtered")
	assert.Equal(t, "invalid_request", r.Error)
}

func TestStatusFlow(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	tok := a.token(t, orgA, []string{a1}, rw...)
	tk := a.create(t, tok, a1, `{"subject":"Pallet damaged"}`)
	path := "/v1/" + a1 + "/tickets/" + tk.ID

	for _, c := range []struct {
		to     string
		status int
	}{
		{"pending", http.StatusOK},
		{"closed", http.StatusOK},
		{"open", http.StatusBadRequest}, // closed is final
	} {
		r := a.do(t, "PATCH", path, tok, `{"status":"`+c.to+`"}`)
		require.Equal(t, c.status, r.Status, "to %s: %s", c.to, r.raw)
	}
}

func TestTenantIsolation(t *testing.T) {
	t.Parallel()
	a := newAPI(t)
	allOfA := a.token(t, orgA, []string{a1, a2}, rw...)
	onlyA1 := a.token(t, orgA, []string{a1}, rw...)
	ofB := a.token(t, orgB, []string{b1}, rw...)
	readOnly := a.token(t, orgA, []string{a1}, "svc:tickets:read")

	inA1 := a.create(t, allOfA, a1, `{"subject":"In A1"}`)
	a.create(t, allOfA, a2, `{"subject":"In A2"}`)
	a.create(t, ofB, b1, `{"subject":"In B1"}`)

	// Each branch lists its own tickets only.
	assert.Equal(t, []string{"In A1"}, subjects(a.list(t, allOfA, a1, "")))
	assert.Equal(t, []string{"In A2"}, subjects(a.list(t, allOfA, a2, "")))
	assert.Equal(t, []string{"In B1"}, subjects(a.list(t, ofB, b1, "")))

	for _, c := range []struct {
		name, method, path, token, body string
		status                          int
		code                            string
	}{
		{"a record of A1 through A2 is not found", "GET", "/v1/" + a2 + "/tickets/" + inA1.ID, allOfA, "", 404, "not_found"},
		{"another organization's branch is not found", "GET", "/v1/" + a1 + "/tickets", ofB, "", 404, "not_found"},
		{"another organization's record is not found", "PATCH", "/v1/" + b1 + "/tickets/" + inA1.ID, ofB, `{"subject":"x"}`, 404, "not_found"},
		{"a branch the app may not use is forbidden", "GET", "/v1/" + a2 + "/tickets", onlyA1, "", 403, "insufficient_scope"},
		{"write needs the write scope", "POST", "/v1/" + a1 + "/tickets", readOnly, `{"subject":"x"}`, 403, "insufficient_scope"},
		{"no such branch is not found", "GET", "/v1/" + "0c000000-0000-4000-8000-0000000000c1" + "/tickets", allOfA, "", 404, "not_found"},
		{"a bad token is refused", "GET", "/v1/" + a1 + "/tickets", "not-a-token", "", 401, "invalid_token"},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := a.do(t, c.method, c.path, c.token, c.body)
			assert.Equal(t, c.status, r.Status, r.raw)
			assert.Equal(t, c.code, r.Error, r.raw)
		})
	}
	assert.Equal(t, "In A1", a.list(t, allOfA, a1, "")[0].Subject, "B's PATCH changed nothing")
}

// TestMigrateTwice: the migration runs at every start of the service.
func TestMigrateTwice(t *testing.T) {
	t.Parallel()
	db := postgres(t)
	for range 2 {
		require.NoError(t, integrationtest.Migrate(context.Background(), db))
	}
	var n int
	require.NoError(t, db.QueryRow(`SELECT COUNT(*) FROM schema_migrations`).Scan(&n))
	assert.Equal(t, 1, n)
	_, err := db.Exec(`SELECT 1 FROM tickets`)
	require.NoError(t, err)
}
