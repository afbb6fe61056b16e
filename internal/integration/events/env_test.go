package events_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/events"
	"github.com/waybillhq/waybill/internal/apitest"
	"github.com/waybillhq/waybill/internal/eventstore"
	"github.com/waybillhq/waybill/internal/testdb"
	"github.com/waybillhq/waybill/oauth/bearer"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/resource"
	"github.com/waybillhq/waybill/tenancy"
)

func TestMain(m *testing.M) { testdb.Main(m) }

// Tenants of the tests: organization A with branches A1 and A2,
// organization B with branch B1.
const (
	orgA = "0a000000-0000-4000-8000-00000000000a"
	orgB = "0b000000-0000-4000-8000-00000000000b"
	a1   = "0a000000-0000-4000-8000-0000000000a1"
	a2   = "0a000000-0000-4000-8000-0000000000a2"
	b1   = "0b000000-0000-4000-8000-0000000000b1"
)

const postgresSchema = `
CREATE TABLE branches (id uuid PRIMARY KEY, organization_id uuid NOT NULL, name text NOT NULL);
CREATE TABLE accounts (
	id uuid PRIMARY KEY, organization_id uuid NOT NULL, branch_id uuid NOT NULL REFERENCES branches,
	created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL, name text NOT NULL, note text);
CREATE TABLE quotations (
	id uuid PRIMARY KEY, organization_id uuid NOT NULL, branch_id uuid NOT NULL REFERENCES branches,
	created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL, name text NOT NULL, status text NOT NULL);
CREATE TABLE vehicles (
	id uuid PRIMARY KEY, organization_id uuid NOT NULL,
	created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL, name text NOT NULL);
CREATE TABLE zones (
	id uuid PRIMARY KEY, organization_id uuid NOT NULL, branch_id uuid REFERENCES branches,
	created_at timestamptz NOT NULL, updated_at timestamptz NOT NULL, name text NOT NULL);
`

const sqliteSchema = `
CREATE TABLE branches (id TEXT PRIMARY KEY, organization_id TEXT NOT NULL, name TEXT NOT NULL) STRICT;
CREATE TABLE accounts (
	id TEXT PRIMARY KEY, organization_id TEXT NOT NULL, branch_id TEXT NOT NULL REFERENCES branches,
	created_at TEXT NOT NULL, updated_at TEXT NOT NULL, name TEXT NOT NULL, note TEXT) STRICT;
CREATE TABLE quotations (
	id TEXT PRIMARY KEY, organization_id TEXT NOT NULL, branch_id TEXT NOT NULL REFERENCES branches,
	created_at TEXT NOT NULL, updated_at TEXT NOT NULL, name TEXT NOT NULL, status TEXT NOT NULL) STRICT;
CREATE TABLE vehicles (
	id TEXT PRIMARY KEY, organization_id TEXT NOT NULL,
	created_at TEXT NOT NULL, updated_at TEXT NOT NULL, name TEXT NOT NULL) STRICT;
CREATE TABLE zones (
	id TEXT PRIMARY KEY, organization_id TEXT NOT NULL, branch_id TEXT REFERENCES branches,
	created_at TEXT NOT NULL, updated_at TEXT NOT NULL, name TEXT NOT NULL) STRICT;
`

// failName starts the names the hooks of the test resources refuse, so
// that a write rolls back before the outbox; failOutbox those that the
// outbox refuses after it appended, so that the write rolls back after its
// events took their numbers.
const (
	failName   = "fail-hook"
	failOutbox = "fail-outbox"
)

func refuseFailName(_ context.Context, _ *sql.Tx, w *resource.Write) error {
	if name, _ := w.Changes["name"].(string); strings.HasPrefix(name, failName) {
		return apierrors.InvalidUpdate("name: %s is refused", failName)
	}
	return nil
}

// testResources declares the resources of the tests, one of each scope
// type, one with a status flow.
func testResources() []*resource.Resource {
	name := resource.Field{Name: "name", Type: query.String, Create: true, Update: true, Required: true, Filterable: true, Sortable: true}
	refuse := resource.Hooks{BeforeCreate: refuseFailName, BeforeUpdate: refuseFailName}
	return []*resource.Resource{
		{Name: "accounts", ScopeType: tenancy.Branch, Hooks: refuse, Fields: []resource.Field{name,
			{Name: "note", Type: query.String, Create: true, Update: true, Nullable: true}}},
		{Name: "quotations", ScopeType: tenancy.Branch, Fields: []resource.Field{name,
			{Name: "status", Type: query.Enum, Values: []string{"draft", "sent", "accepted"}, Create: true, Update: true, Filterable: true}},
			Hooks: resource.Combine(refuse, resource.StatusFlow("status", "draft", map[string][]string{"draft": {"sent"}, "sent": {"accepted"}}))},
		{Name: "vehicles", ScopeType: tenancy.Organization, Hooks: refuse, Fields: []resource.Field{name}},
		{Name: "zones", ScopeType: tenancy.BranchOrNull, Hooks: refuse, Fields: []resource.Field{name}},
	}
}

// refusingOutbox is the events outbox, refusing (after appending) every
// change whose record's name starts with failOutbox.
type refusingOutbox struct{ events.Outbox }

func (o *refusingOutbox) Append(ctx context.Context, tx *sql.Tx, c *resource.Change) error {
	if err := o.Outbox.Append(ctx, tx, c); err != nil {
		return err
	}
	if strings.Contains(string(c.Record), `"name":"`+failOutbox) {
		return errors.New("refused by the test")
	}
	return nil
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

// env is a registry of the test resources with the events outbox and the
// feed, on a real database, served over HTTP.
type env struct {
	db       *sql.DB
	dialect  query.Dialect
	http     *httptest.Server
	keys     *bearer.KeySet
	registry *resource.Registry
	feed     *events.Feed
}

const issuer = "https://issuer.test"

func newEnv(t testing.TB, b backend) *env {
	t.Helper()
	db := b.open(t)
	if b.dialect == query.SQLite {
		db.SetMaxOpenConns(1)
	} else {
		db.SetMaxOpenConns(40)
	}
	ctx := context.Background()
	_, err := db.Exec(b.schema)
	require.NoError(t, err)
	for _, br := range [][2]string{{a1, orgA}, {a2, orgA}, {b1, orgB}} {
		_, err := db.Exec("INSERT INTO branches (id, organization_id, name) VALUES ($1, $2, $3)", br[0], br[1], "branch")
		require.NoError(t, err)
	}
	require.NoError(t, eventstore.Migrate(ctx, db, b.dialect))
	keys, err := bearer.NewKeySet(bearer.Key{ID: "k1", Secret: []byte(strings.Repeat("s", 32))})
	require.NoError(t, err)
	verifier := &bearer.Verifier{Keys: keys, Issuer: issuer}
	reg := &resource.Registry{DB: db, Dialect: b.dialect, Verifier: verifier, Branches: apitest.Branches{DB: db, Table: "branches"},
		Outbox: &refusingOutbox{events.Outbox{Dialect: b.dialect}}}
	require.NoError(t, reg.Register(testResources()...))
	require.NoError(t, reg.Migrate(ctx))
	feed := &events.Feed{Registry: reg}
	mux := http.NewServeMux()
	reg.Mount(mux)
	feed.Mount(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &env{db: db, dialect: b.dialect, http: srv, keys: keys, registry: reg, feed: feed}
}

// allScopes are the scopes of the feed and of every test resource.
var allScopes = func() []string {
	s := []string{events.ReadScope}
	for _, r := range testResources() {
		s = append(s, r.ReadScope(), r.WriteScope())
	}
	return s
}()

// codeToken is an authorization-code token of org (every branch) for user.
func (e *env) codeToken(t testing.TB, org, user string, scopes ...string) string {
	return e.sign(t, &bearer.Claims{Subject: user, OrganizationID: org, ClientID: "client-1", Scopes: scopes})
}

// ccToken is a client-credentials token of org limited to branches.
func (e *env) ccToken(t testing.TB, org string, branches []string, scopes ...string) string {
	return e.sign(t, &bearer.Claims{Subject: "client-2", OrganizationID: org, ClientID: "client-2", Scopes: scopes, BranchIDs: branches, AppName: "Sync"})
}

func (e *env) sign(t testing.TB, c *bearer.Claims) string {
	t.Helper()
	return apitest.Sign(t, e.keys, issuer, c)
}

// response is a decoded response.
type response struct {
	status int
	body   map[string]any
	raw    string
}

func (r response) code() string { s, _ := r.body["error"].(string); return s }

func (r response) data() map[string]any { m, _ := r.body["data"].(map[string]any); return m }

// do sends a request with a bearer token and a JSON body ("" for none).
// It may run on any goroutine: it reports failures as errors.
func (e *env) do(method, path, token, body string) (response, error) {
	r, err := apitest.Do(method, e.http.URL+path, token, body)
	return response{status: r.Status, body: r.Body, raw: r.Raw}, err
}

func (e *env) must(t testing.TB, method, path, token, body string) response {
	t.Helper()
	r, err := e.do(method, path, token, body)
	require.NoError(t, err)
	return r
}

// page is one page of the feed.
type page struct {
	Data       []json.RawMessage `json:"data"`
	NextCursor *string           `json:"next_cursor"`
	Version    string            `json:"version"`
}

// feedPage reads one page of the feed at path (with its query).
func (e *env) feedPage(path, token string) (page, response, error) {
	r, err := e.do(http.MethodGet, path, token, "")
	if err != nil || r.status != http.StatusOK {
		return page{}, r, err
	}
	var p page
	err = json.Unmarshal([]byte(r.raw), &p)
	return p, r, err
}

// follow reads the feed of scope from after to its end and returns the
// events and the cursor after them.
func (e *env) follow(t testing.TB, scope, token, after, params string) ([]map[string]any, string) {
	t.Helper()
	var out []map[string]any
	for {
		p, r, err := e.feedPage("/v1/"+scope+"/events?after="+after+params, token)
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, r.status, r.raw)
		require.NotNil(t, p.NextCursor, r.raw)
		for _, raw := range p.Data {
			var ev map[string]any
			require.NoError(t, json.Unmarshal(raw, &ev))
			out = append(out, ev)
		}
		if len(p.Data) == 0 && *p.NextCursor == after {
			return out, after
		}
		after = *p.NextCursor
	}
}

func jsonUnmarshal(raw []byte, v any) error { return json.Unmarshal(raw, v) }
