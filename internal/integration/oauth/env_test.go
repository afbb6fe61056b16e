package oauth_test

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/internal/testdb"
	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/oauth/bearer"
	"github.com/waybillhq/waybill/oauth/sqlstore"
	"github.com/waybillhq/waybill/query"
)

// directory is the host's user directory for these tests: a plain map
// behind the oauth.Directory interface (the host owns users; the token
// service only asks).
type directory struct {
	mu       sync.Mutex
	users    map[string]directoryUser // by email
	branches map[string][]string      // by organization
}

type directoryUser struct {
	oauth.User
	password    string
	memberships []oauth.Membership
}

func (d *directory) Authenticate(_ context.Context, email, password string) (oauth.User, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	u, ok := d.users[strings.ToLower(email)]
	if !ok || u.password != password {
		return oauth.User{}, fmt.Errorf("directory: %w", oauth.ErrBadCredentials)
	}
	return u.User, nil
}

func (d *directory) Memberships(_ context.Context, userID string) ([]oauth.Membership, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	for _, u := range d.users {
		if u.ID == userID {
			return u.memberships, nil
		}
	}
	return nil, nil
}

func (d *directory) Branches(_ context.Context, org string) ([]string, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	return d.branches[org], nil
}

// clock is a settable test clock.
type clock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *clock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// env is a token service on a real database, served over HTTP, with one
// organization (two branches), an admin, a plain member and an app.
type env struct {
	srv      *oauth.Server
	db       *sql.DB
	store    *sqlstore.Store
	http     *httptest.Server
	clock    *clock
	verifier *bearer.Verifier
	app      *oauth.App
	secret   string
	other    *oauth.App // a second app of the same organization
	otherSec string
}

const (
	orgID     = "0b000000-0000-4000-8000-000000000001"
	branch1   = "0b000000-0000-4000-8000-0000000000b1"
	branch2   = "0b000000-0000-4000-8000-0000000000b2"
	adminID   = "0b000000-0000-4000-8000-0000000000a1"
	memberID  = "0b000000-0000-4000-8000-0000000000a2"
	redirect  = "https://client.test/callback"
	appScopes = "svc:orders:read svc:orders:write svc:accounts:read"
	// edgeTokenPath and v1TokenPath are where the test server mounts
	// ClientCredentialsHandler, as the reference server does.
	edgeTokenPath = "/functions/v1/oauth-token"
	v1TokenPath   = "/v1/oauth/token"
)

type backend struct {
	name    string
	dialect query.Dialect
	open    func(testing.TB) *sql.DB
}

var backends = []backend{
	{"postgres", query.Postgres, testdb.Postgres},
	{"sqlite", query.SQLite, testdb.SQLite},
}

// eachBackend runs f on PostgreSQL and on SQLite, in parallel.
func eachBackend(t *testing.T, f func(t *testing.T, e *env)) {
	t.Helper()
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			f(t, newEnv(t, b))
		})
	}
}

// newBenchEnv is the environment of the benchmarks, on PostgreSQL.
func newBenchEnv(b *testing.B) *env { return newEnv(b, backends[0]) }

func newEnv(t testing.TB, b backend) *env {
	t.Helper()
	ctx := context.Background()
	db := b.open(t)
	store := sqlstore.New(db, b.dialect)
	require.NoError(t, store.Migrate(ctx))
	key, err := store.SigningKey(ctx)
	require.NoError(t, err)
	keys := mustKeySet(t, key)
	clk := &clock{now: time.Now().Truncate(time.Second)}
	dir := &directory{
		users: map[string]directoryUser{
			"admin@example.com": {User: oauth.User{ID: adminID, Email: "admin@example.com"}, password: "correct horse",
				memberships: []oauth.Membership{{OrganizationID: orgID, Name: "Acme", Admin: true}}},
			"member@example.com": {User: oauth.User{ID: memberID, Email: "member@example.com"}, password: "battery staple",
				memberships: []oauth.Membership{{OrganizationID: orgID, Name: "Acme"}}},
		},
		branches: map[string][]string{orgID: {branch1, branch2}},
	}
	srv := &oauth.Server{Issuer: testIssuer, Keys: keys, Store: store, Directory: dir, Now: clk.Now}
	e := &env{srv: srv, db: db, store: store, clock: clk}
	e.app, e.secret, err = srv.RegisterApp(ctx, oauth.NewApp{
		OrganizationID: orgID, Name: "Route Planner", Scopes: oauth.ParseScope(appScopes),
		BranchIDs: []string{branch1}, RedirectURIs: []string{redirect},
	})
	require.NoError(t, err)
	e.other, e.otherSec, err = srv.RegisterApp(ctx, oauth.NewApp{
		OrganizationID: orgID, Name: "Other", Scopes: []string{"svc:orders:read"}, RedirectURIs: []string{redirect},
	})
	require.NoError(t, err)
	mux := http.NewServeMux()
	srv.Mount(mux)
	mux.Handle("POST "+edgeTokenPath, srv.ClientCredentialsHandler())
	mux.Handle("POST "+v1TokenPath, srv.ClientCredentialsHandler())
	e.http = httptest.NewServer(mux)
	t.Cleanup(e.http.Close)
	e.verifier = &bearer.Verifier{Keys: keys, Issuer: testIssuer, Families: store, Now: clk.Now}
	return e
}

// response is a decoded HTTP response.
type response struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

func (r response) str(key string) string {
	s, _ := r.body[key].(string)
	return s
}

// post sends form values (or, with asJSON, a JSON object) to path, with
// HTTP Basic credentials when basic is not nil.
func (e *env) post(t *testing.T, path string, form url.Values, basic *[2]string, asJSON bool) response {
	t.Helper()
	var body io.Reader
	ct := "application/x-www-form-urlencoded"
	if asJSON {
		m := map[string]string{}
		for k := range form {
			m[k] = form.Get(k)
		}
		b, err := json.Marshal(m)
		require.NoError(t, err)
		body, ct = strings.NewReader(string(b)), "application/json"
	} else {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequest(http.MethodPost, e.http.URL+path, body)
	require.NoError(t, err)
	req.Header.Set("Content-Type", ct)
	if basic != nil {
		req.SetBasicAuth(url.QueryEscape(basic[0]), url.QueryEscape(basic[1]))
	}
	return do(t, req)
}

func do(t *testing.T, req *http.Request) response {
	t.Helper()
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	r := response{status: res.StatusCode, header: res.Header, raw: string(raw)}
	if len(raw) > 0 && strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		require.NoError(t, json.Unmarshal(raw, &r.body), string(raw))
	}
	return r
}

// issueCode runs the consent step in Go: the request is checked and a code
// issued for the admin in the organization.
func (e *env) issueCode(t testing.TB, app *oauth.App, challenge, scope string) string {
	t.Helper()
	req := oauth.AuthorizationRequest{
		ClientID: app.ClientID, RedirectURI: redirect, ResponseType: "code",
		CodeChallenge: challenge, CodeChallengeMethod: "S256", Scope: scope, State: "st",
	}
	checked, scopes, err := e.srv.CheckAuthorization(context.Background(), req)
	require.NoError(t, err)
	code, err := e.srv.IssueCode(context.Background(), checked, req, scopes, adminID, orgID)
	require.NoError(t, err)
	return code
}

// TestMain runs the tests with testdb.Main, which says how many skipped for want of
// PostgreSQL or Redis.
func TestMain(m *testing.M) { testdb.Main(m) }
