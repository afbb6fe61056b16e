package webhook_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/internal/apitest"
	"github.com/waybillhq/waybill/internal/testdb"
	"github.com/waybillhq/waybill/oauth/bearer"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/resource"
	"github.com/waybillhq/waybill/tenancy"
	"github.com/waybillhq/waybill/webhook"
)

// Tenants of the API tests: organization A with branches A1 and A2,
// organization B with branch B1.
const (
	orgA = "0a000000-0000-4000-8000-00000000000a"
	orgB = "0b000000-0000-4000-8000-00000000000b"
	a1   = "0a000000-0000-4000-8000-0000000000a1"
	a2   = "0a000000-0000-4000-8000-0000000000a2"
	b1   = "0b000000-0000-4000-8000-0000000000b1"
)

// publicURL is an endpoint URL the default Guard accepts without a DNS
// lookup.
const publicURL = "https://1.1.1.1/hooks/waybill"

// branchTable is the branches of the tests, for tenancy.Branches.
const branchTable = "CREATE TABLE test_branches (id text PRIMARY KEY, organization_id text NOT NULL)"

// testResources are the resources whose events the endpoints subscribe
// to; the API needs their names and scopes only.
func testResources() []*resource.Resource {
	return []*resource.Resource{
		{Name: "accounts", ScopeType: tenancy.Branch, Fields: []resource.Field{{Name: "company_name", Type: query.String, Create: true}}},
		{Name: "quotations", ScopeType: tenancy.Branch, Fields: []resource.Field{{Name: "status", Type: query.String, Create: true}}},
		{Name: "vehicles", ScopeType: tenancy.Organization, Fields: []resource.Field{{Name: "plate", Type: query.String, Create: true}}},
	}
}

type backend struct {
	name    string
	dialect query.Dialect
	open    func(testing.TB) *sql.DB
}

var backends = []backend{
	{"postgres", query.Postgres, testdb.Postgres},
	{"sqlite", query.SQLite, testdb.SQLite},
}

// env is an API on a real database, served over HTTP.
type env struct {
	db      *sql.DB
	dialect query.Dialect
	api     *webhook.API
	http    *httptest.Server
	keys    *bearer.KeySet
}

// eachBackend runs f, in parallel, on each database, with an API that
// configure (when not nil) may change before it is mounted.
func eachBackend(t *testing.T, configure func(*webhook.API), f func(t *testing.T, e *env)) {
	t.Helper()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			f(t, newEnv(t, b, configure))
		})
	}
}

const issuer = "https://issuer.test"

func newEnv(t testing.TB, b backend, configure func(*webhook.API)) *env {
	t.Helper()
	ctx := context.Background()
	db := b.open(t)
	if b.dialect == query.SQLite {
		db.SetMaxOpenConns(1)
	}
	_, err := db.Exec(branchTable)
	require.NoError(t, err)
	for _, br := range [][2]string{{a1, orgA}, {a2, orgA}, {b1, orgB}} {
		_, err := db.Exec("INSERT INTO test_branches (id, organization_id) VALUES ($1, $2)", br[0], br[1])
		require.NoError(t, err)
	}
	keys, err := bearer.NewKeySet(bearer.Key{ID: "k1", Secret: []byte(strings.Repeat("s", 32))})
	require.NoError(t, err)
	reg := &resource.Registry{DB: db, Dialect: b.dialect, Verifier: &bearer.Verifier{Keys: keys, Issuer: issuer},
		Branches: apitest.Branches{DB: db, Table: "test_branches"}}
	require.NoError(t, reg.Register(testResources()...))
	api := &webhook.API{Registry: reg}
	require.NoError(t, api.Migrate(ctx))
	if configure != nil {
		configure(api)
	}
	mux := http.NewServeMux()
	api.Mount(mux)
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return &env{db: db, dialect: b.dialect, api: api, http: srv, keys: keys}
}

// The scopes of the tests.
const (
	read  = webhook.ScopeRead
	write = webhook.ScopeWrite
)

// readAll are the webhook scopes and the read scopes of every test
// resource.
var readAll = []string{read, write, "svc:accounts:read", "svc:quotations:read", "svc:vehicles:read"}

// codeToken is an authorization-code token of org: it sees every branch.
func (e *env) codeToken(t testing.TB, org string, scopes ...string) string {
	return e.sign(t, &bearer.Claims{Subject: "user-1", OrganizationID: org, ClientID: "client-1", Scopes: scopes})
}

// ccToken is a client-credentials token of org limited to branches.
func (e *env) ccToken(t testing.TB, org string, branches []string, scopes ...string) string {
	return e.sign(t, &bearer.Claims{Subject: "app-1", OrganizationID: org, ClientID: "client-2", Scopes: scopes,
		BranchIDs: branches, Grant: bearer.GrantClientCredentials, AppName: "Sync"})
}

// appToken is a client-credentials token of the app clientID in org,
// limited to branches.
func (e *env) appToken(t testing.TB, org, clientID string, branches []string, scopes ...string) string {
	return e.sign(t, &bearer.Claims{Subject: "app-" + clientID, OrganizationID: org, ClientID: clientID, Scopes: scopes,
		BranchIDs: branches, Grant: bearer.GrantClientCredentials, AppName: clientID})
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
	return response{status: r.Status, header: r.Header, body: r.Body, raw: r.Raw}
}

// endpoints returns the path of the endpoints of org.
func endpoints(org string) string { return "/v1/" + org + "/webhook_endpoints" }

// create creates an endpoint and returns it.
func (e *env) create(t testing.TB, token, org, body string) map[string]any {
	t.Helper()
	r := e.do(t, http.MethodPost, endpoints(org), token, body)
	require.Equal(t, http.StatusCreated, r.status, r.raw)
	return r.data()
}

// body returns the JSON of v.
func body(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		panic(err)
	}
	return string(b)
}

// row is the stored row of an endpoint, as the dispatcher reads it.
type row struct {
	eventTypes, grantResources string
	branchIDs, grantBranches   sql.NullString
	secret                     []byte
	keyID, status, reason      string
	afterSeq                   int64
	url, clientID              string
	cutOff                     bool // cut_off_at is set
}

func (e *env) row(t testing.TB, id string) row {
	t.Helper()
	var r row
	err := e.db.QueryRow(`SELECT event_types, branch_ids, grant_resources, grant_branches, secret, secret_key_id, status, disabled_reason, after_seq,
		url, client_id, cut_off_at IS NOT NULL
		FROM waybill_webhook_endpoints WHERE id = $1`, id).
		Scan(&r.eventTypes, &r.branchIDs, &r.grantResources, &r.grantBranches, &r.secret, &r.keyID, &r.status, &r.reason, &r.afterSeq,
			&r.url, &r.clientID, &r.cutOff)
	require.NoError(t, err)
	return r
}

// ts returns t as the database stores timestamps.
func (e *env) ts(t time.Time) any { return e.dialect.Timestamp(t) }

// addEvent stores an event of org with seq and raises the organization's
// head to it, as the outbox does.
func (e *env) addEvent(t testing.TB, org string, seq int64, id, typ string) {
	t.Helper()
	_, err := e.db.Exec(`INSERT INTO waybill_events (organization_id, seq, id, type, resource, branch_id, record_id, time, body)
		VALUES ($1, $2, $3, $4, 'quotations', $5, $6, $7, '{}')`, org, seq, id, typ, a1, "0c000000-0000-4000-8000-000000000001", e.ts(time.Now()))
	require.NoError(t, err)
	e.setHead(t, org, seq)
}

func (e *env) setHead(t testing.TB, org string, seq int64) {
	t.Helper()
	_, err := e.db.Exec(`INSERT INTO waybill_event_heads (organization_id, seq) VALUES ($1, $2)
		ON CONFLICT (organization_id) DO UPDATE SET seq = excluded.seq`, org, seq)
	require.NoError(t, err)
}

// addDelivery stores a delivery of the event seq (whose id is eventID) to
// the endpoint, as the dispatcher does, and returns its id.
func (e *env) addDelivery(t testing.TB, endpoint, org string, seq int64, eventID, status string, attempts int, created, next time.Time, lease *time.Time) string {
	t.Helper()
	id := uuid.Must(uuid.NewV7()).String()
	var leaseUntil any
	if lease != nil {
		leaseUntil = e.ts(*lease)
	}
	_, err := e.db.Exec(`INSERT INTO waybill_webhook_deliveries (id, endpoint_id, organization_id, event_seq, event_id, record_id, status, attempts,
		next_attempt_at, lease_until, created_at, updated_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
		id, endpoint, org, seq, eventID, "0c000000-0000-4000-8000-000000000001", status, attempts, e.ts(next), leaseUntil, e.ts(created), e.ts(created))
	require.NoError(t, err)
	return id
}

// addAttempt stores the attempt n of a delivery; code 0 is no answer.
func (e *env) addAttempt(t testing.TB, delivery string, n int, at time.Time, code int, msg string, ms int) {
	t.Helper()
	var status any
	if code != 0 {
		status = code
	}
	_, err := e.db.Exec(`INSERT INTO waybill_webhook_attempts (delivery_id, n, at, status_code, error, duration_ms) VALUES ($1, $2, $3, $4, $5, $6)`,
		delivery, n, e.ts(at), status, msg, ms)
	require.NoError(t, err)
}
