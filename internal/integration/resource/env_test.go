package resource_test

import (
	"context"
	"database/sql"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/internal/apitest"
	"github.com/waybillhq/waybill/internal/apitest/fixture"
	"github.com/waybillhq/waybill/internal/testdb"
	"github.com/waybillhq/waybill/oauth/bearer"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/resource"
)

// Tenants of the tests: organization A with branches A1 and A2,
// organization B with branch B1.
const (
	orgA = "0a000000-0000-4000-8000-00000000000a"
	orgB = "0b000000-0000-4000-8000-00000000000b"
	a1   = "0a000000-0000-4000-8000-0000000000a1"
	a2   = "0a000000-0000-4000-8000-0000000000a2"
	b1   = "0b000000-0000-4000-8000-0000000000b1"
)

var postgresSchema = `
CREATE TABLE branches (id uuid PRIMARY KEY, organization_id uuid NOT NULL, name text NOT NULL);
CREATE TABLE accounts (
	id uuid PRIMARY KEY, organization_id uuid NOT NULL, branch_id uuid NOT NULL REFERENCES branches,
	created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL,
	company_name text NOT NULL, email text, account_type text NOT NULL, status text NOT NULL, comment text,
	UNIQUE (organization_id, id), UNIQUE (branch_id, id));
CREATE TABLE quotations (
	id uuid PRIMARY KEY, organization_id uuid NOT NULL, branch_id uuid NOT NULL REFERENCES branches,
	created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL,
	quotation_number text NOT NULL, account_id uuid NOT NULL, quotation_date date NOT NULL, valid_until date NOT NULL,
	status text NOT NULL, total_weight_kg numeric(14,3), total_packages bigint,
	FOREIGN KEY (branch_id, account_id) REFERENCES accounts (branch_id, id),
	CHECK (valid_until >= quotation_date));
CREATE TABLE vehicles (
	id uuid PRIMARY KEY, organization_id uuid NOT NULL,
	created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL,
	plate text NOT NULL, active boolean NOT NULL, UNIQUE (organization_id, plate));
CREATE TABLE zones (
	id uuid PRIMARY KEY, organization_id uuid NOT NULL, branch_id uuid REFERENCES branches,
	created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL, name text NOT NULL);
CREATE VIEW api_branches AS SELECT id, organization_id, name, now() AS created_at, now() AS updated_at FROM branches;
` + externalIDs("text")

var sqliteSchema = `
CREATE TABLE branches (id TEXT PRIMARY KEY, organization_id TEXT NOT NULL, name TEXT NOT NULL) STRICT;
CREATE TABLE accounts (
	id TEXT PRIMARY KEY, organization_id TEXT NOT NULL, branch_id TEXT NOT NULL REFERENCES branches,
	created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
	company_name TEXT NOT NULL, email TEXT, account_type TEXT NOT NULL, status TEXT NOT NULL, comment TEXT,
	UNIQUE (organization_id, id), UNIQUE (branch_id, id)) STRICT;
CREATE TABLE quotations (
	id TEXT PRIMARY KEY, organization_id TEXT NOT NULL, branch_id TEXT NOT NULL REFERENCES branches,
	created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
	quotation_number TEXT NOT NULL, account_id TEXT NOT NULL, quotation_date TEXT NOT NULL, valid_until TEXT NOT NULL,
	status TEXT NOT NULL, total_weight_kg REAL, total_packages INTEGER,
	FOREIGN KEY (branch_id, account_id) REFERENCES accounts (branch_id, id),
	CHECK (valid_until >= quotation_date)) STRICT;
CREATE TABLE vehicles (
	id TEXT PRIMARY KEY, organization_id TEXT NOT NULL,
	created_at TEXT NOT NULL, updated_at TEXT NOT NULL,
	plate TEXT NOT NULL, active INTEGER NOT NULL, UNIQUE (organization_id, plate)) STRICT;
CREATE TABLE zones (
	id TEXT PRIMARY KEY, organization_id TEXT NOT NULL, branch_id TEXT REFERENCES branches,
	created_at TEXT NOT NULL, updated_at TEXT NOT NULL, name TEXT NOT NULL) STRICT;
CREATE VIEW api_branches AS SELECT id, organization_id, name,
	'2026-01-01T00:00:00.000000Z' AS created_at, '2026-01-01T00:00:00.000000Z' AS updated_at FROM branches;
` + externalIDs("TEXT")

// externalIDs adds the column external_id, of type typ, and its unique
// indexes (see resource.ExternalIDField) to the tables of the writable
// resources: the tests of batch writes and upserts declare them with
// ExternalID, the others leave the column alone.
func externalIDs(typ string) string {
	return `
ALTER TABLE accounts ADD COLUMN external_id ` + typ + `;
ALTER TABLE quotations ADD COLUMN external_id ` + typ + `;
ALTER TABLE vehicles ADD COLUMN external_id ` + typ + `;
ALTER TABLE zones ADD COLUMN external_id ` + typ + `;
CREATE UNIQUE INDEX accounts_external_id ON accounts (branch_id, external_id) WHERE external_id IS NOT NULL;
CREATE UNIQUE INDEX quotations_external_id ON quotations (branch_id, external_id) WHERE external_id IS NOT NULL;
CREATE UNIQUE INDEX vehicles_external_id ON vehicles (organization_id, external_id) WHERE external_id IS NOT NULL;
CREATE UNIQUE INDEX zones_external_id ON zones (branch_id, external_id) WHERE external_id IS NOT NULL AND branch_id IS NOT NULL;
CREATE UNIQUE INDEX zones_external_id_org ON zones (organization_id, external_id) WHERE external_id IS NOT NULL AND branch_id IS NULL;
`
}

// testResources declares the resources of the tests, the same that the
// tests beside package resource describe in OpenAPI documents.
func testResources() []*resource.Resource { return fixture.Resources() }

// env is a registry of the test resources on a real database, served over
// HTTP, with tokens of every kind.
type env struct {
	db      *sql.DB
	dialect query.Dialect
	http    *httptest.Server
	keys    *bearer.KeySet
	// registry is the env's registry, mounted on http.
	registry *resource.Registry
}

type backend struct {
	name    string
	dialect query.Dialect
	open    func(testing.TB) *sql.DB
	schema  string
}

var backends = []backend{
	{"postgres", query.Postgres, testdb.Postgres, postgresSchema},
	{"sqlite", query.SQLite, testdb.SQLite, sqliteSchema},
}

func eachBackend(t *testing.T, f func(t *testing.T, e *env)) {
	t.Helper()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			f(t, newEnv(t, b))
		})
	}
}

const issuer = "https://issuer.test"

func newEnv(t testing.TB, b backend) *env {
	t.Helper()
	return newEnvWith(t, b, nil)
}

// newEnvWith is newEnv with configure, when not nil, called on the registry
// and the test resources before they are registered.
func newEnvWith(t testing.TB, b backend, configure func(*resource.Registry, []*resource.Resource)) *env {
	t.Helper()
	db := b.open(t)
	if b.dialect == query.SQLite {
		db.SetMaxOpenConns(1) // as Registry.DB asks
	}
	_, err := db.Exec(b.schema)
	require.NoError(t, err)
	for _, br := range [][2]string{{a1, orgA}, {a2, orgA}, {b1, orgB}} {
		_, err := db.Exec("INSERT INTO branches (id, organization_id, name) VALUES ($1, $2, $3)", br[0], br[1], "branch "+br[0][len(br[0])-2:])
		require.NoError(t, err)
	}
	keys, err := bearer.NewKeySet(bearer.Key{ID: "k1", Secret: []byte(strings.Repeat("s", 32))})
	require.NoError(t, err)
	reg := &resource.Registry{DB: db, Dialect: b.dialect, Verifier: &bearer.Verifier{Keys: keys, Issuer: issuer}, Branches: apitest.Branches{DB: db, Table: "branches"}}
	rs := testResources()
	if configure != nil {
		configure(reg, rs)
	}
	require.NoError(t, reg.Register(rs...))
	require.NoError(t, reg.Migrate(context.Background()))
	mux := http.NewServeMux()
	reg.Mount(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &env{db: db, dialect: b.dialect, http: srv, keys: keys, registry: reg}
}

// allScopes are the read and write scopes of every test resource.
var allScopes = func() []string {
	var s []string
	for _, r := range testResources() {
		s = append(s, r.ReadScope(), r.WriteScope())
	}
	return s
}()

// codeToken is an authorization-code token of org with scopes: it sees
// every branch.
func (e *env) codeToken(t testing.TB, org string, scopes ...string) string {
	return e.sign(t, &bearer.Claims{Subject: "user-1", OrganizationID: org, ClientID: "client-1", Scopes: scopes})
}

// ccToken is a client-credentials token of org limited to branches.
func (e *env) ccToken(t testing.TB, org string, branches []string, scopes ...string) string {
	return e.sign(t, &bearer.Claims{Subject: "app-1", OrganizationID: org, ClientID: "client-2", Scopes: scopes, BranchIDs: branches, AppName: "Sync"})
}

// userToken is a product user token: no oauth_client_id.
func (e *env) userToken(t testing.TB) string {
	return e.sign(t, &bearer.Claims{Subject: "user-1"})
}

func (e *env) sign(t testing.TB, c *bearer.Claims) string {
	t.Helper()
	return apitest.Sign(t, e.keys, issuer, c)
}

// response is a decoded response.
type response struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

func (r response) code() string { s, _ := r.body["error"].(string); return s }

func (r response) data() map[string]any { m, _ := r.body["data"].(map[string]any); return m }

func (r response) list() []any { l, _ := r.body["data"].([]any); return l }

// do sends a request with a bearer token (none when token is "") and a
// JSON body (none when body is "").
func (e *env) do(t testing.TB, method, path, token, body string) response {
	t.Helper()
	return e.doWith(t, method, path, token, body, nil)
}

// doWith is do with more request headers.
func (e *env) doWith(t testing.TB, method, path, token, body string, header map[string]string) response {
	t.Helper()
	r, err := apitest.DoWith(method, e.http.URL+path, token, body, header)
	require.NoError(t, err)
	return responseOf(r)
}

func send(t testing.TB, req *http.Request) response {
	t.Helper()
	r, err := apitest.Send(req)
	require.NoError(t, err)
	return responseOf(r)
}

func responseOf(r apitest.Response) response {
	return response{status: r.Status, header: r.Header, body: r.Body, raw: r.Raw}
}

// mustCreate creates a record and returns it.
func (e *env) mustCreate(t testing.TB, token, path, body string) map[string]any {
	t.Helper()
	r := e.do(t, http.MethodPost, path, token, body)
	require.Equal(t, http.StatusCreated, r.status, r.raw)
	return r.data()
}

// fixedTime is a timestamp for rows the tests insert by hand.
var fixedTime = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// TestMain runs the tests with testdb.Main, which says how many skipped for want of
// PostgreSQL or Redis.
func TestMain(m *testing.M) { testdb.Main(m) }
