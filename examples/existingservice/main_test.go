package main

import (
	"bufio"
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"

	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/oauth/bearer"
	"github.com/waybillhq/waybill/oauth/sqlstore"
	"github.com/waybillhq/waybill/query"
)

// Organization A with branches A1 and A2, organization B with branch B1.
const (
	orgA = "0a000000-0000-4000-8000-00000000000a"
	orgB = "0b000000-0000-4000-8000-00000000000b"
	a1   = "0a000000-0000-4000-8000-0000000000a1"
	a2   = "0a000000-0000-4000-8000-0000000000a2"
	b1   = "0b000000-0000-4000-8000-0000000000b1"
	// user is a user of organization A.
	user = "0a000000-0000-4000-8000-00000000a5e1"
)

// secret is the token service's --jwt-secret, and this service's
// -jwt-secret.
const secret = "a secret of at least thirty-two bytes, for tests"

// routers are the two ways the service serves its routes.
var routers = []struct {
	name string
	new  func(*service) http.Handler
}{
	{"mux", (*service).newMux},
	{"chi", (*service).newChi},
}

// env is the fleet service on a fresh database, served by one router, and
// the Waybill token service that issues its tokens.
type env struct {
	fleet  string // base URL of the fleet service
	tokens *tokenService
}

// newEnv starts a token service and the fleet service, with a quota of
// perMinute requests of each organization, served by router.
func newEnv(t *testing.T, router func(*service) http.Handler, perMinute int) *env {
	t.Helper()
	ctx := context.Background()
	db, err := openDB(ctx, filepath.Join(t.TempDir(), "fleet.db"))
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	for _, b := range [][2]string{{orgA, a1}, {orgA, a2}, {orgB, b1}} {
		require.NoError(t, addBranch(ctx, db, b[0], b[1]))
	}
	tokens := newTokenService(t, directory{branches{db}})
	keys, err := keySet(secret) // what run makes of -jwt-secret
	require.NoError(t, err)
	families, closeFamilies, err := openFamilies(ctx, "sqlite://"+tokens.dbPath) // what run makes of -waybill-db
	require.NoError(t, err)
	t.Cleanup(closeFamilies)
	svc, err := newService(db, newVerifier(keys, tokens.url, families), perMinute)
	require.NoError(t, err)
	fleet := httptest.NewServer(router(svc))
	t.Cleanup(fleet.Close)
	return &env{fleet: fleet.URL, tokens: tokens}
}

// tokenService is a real Waybill token service: an oauth.Server on SQLite,
// signing with the key that `waybill serve --jwt-secret` makes of secret.
type tokenService struct {
	srv    *oauth.Server
	url    string // the issuer, and the base of the endpoints
	dbPath string // its SQLite database
}

func newTokenService(t *testing.T, dir oauth.Directory) *tokenService {
	t.Helper()
	ctx := context.Background()
	dbPath := filepath.Join(t.TempDir(), "waybill.db")
	db, err := sql.Open("sqlite", dbPath+"?_pragma=foreign_keys(1)&_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)")
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	store := sqlstore.New(db, query.SQLite)
	require.NoError(t, store.Migrate(ctx))
	keys, err := keySet(secret)
	require.NoError(t, err)
	srv := &oauth.Server{Keys: keys, Store: store, Directory: dir}
	ts := httptest.NewServer(srv.Handler())
	t.Cleanup(ts.Close)
	srv.Issuer = ts.URL
	return &tokenService{srv: srv, url: ts.URL, dbPath: dbPath}
}

// codeToken registers an app of organization A with a redirect URI, and
// runs the authorization-code grant for user, a member of A: the consent
// step in Go, the code exchange over HTTP. It returns the access and
// refresh tokens and the app's credentials.
func (s *tokenService) codeToken(t *testing.T) (access, refresh string, client [2]string) {
	t.Helper()
	ctx := context.Background()
	const redirect, verifier = "https://fleet-app.test/callback", "a-pkce-verifier-of-at-least-forty-three-characters"
	app, clientSecret, err := s.srv.RegisterApp(ctx, oauth.NewApp{
		OrganizationID: orgA, Name: "Fleet board", RedirectURIs: []string{redirect},
		Scopes: []string{"svc:drivers:read", "svc:drivers:write"},
	})
	require.NoError(t, err)
	req := oauth.AuthorizationRequest{
		ClientID: app.ClientID, RedirectURI: redirect, ResponseType: "code", Scope: "svc:drivers:read",
		CodeChallenge: oauth.S256Challenge(verifier), CodeChallengeMethod: "S256",
	}
	checked, scopes, err := s.srv.CheckAuthorization(ctx, req)
	require.NoError(t, err)
	code, err := s.srv.IssueCode(ctx, checked, req, scopes, user, orgA)
	require.NoError(t, err)
	conf := oauth2.Config{ClientID: app.ClientID, ClientSecret: clientSecret, RedirectURL: redirect,
		Endpoint: oauth2.Endpoint{TokenURL: s.url + oauth.PathToken, AuthStyle: oauth2.AuthStyleInHeader}}
	tok, err := conf.Exchange(ctx, code, oauth2.VerifierOption(verifier))
	require.NoError(t, err)
	return tok.AccessToken, tok.RefreshToken, [2]string{app.ClientID, clientSecret}
}

// token registers an app of org for branches with the drivers scopes, as
// `waybill admin app create` does, and gets a client-credentials token for
// scopes (empty: all of the app's) over HTTP, as any OAuth client does.
func (s *tokenService) token(t *testing.T, org string, branches []string, scopes ...string) (token, clientID string) {
	t.Helper()
	ctx := context.Background()
	app, clientSecret, err := s.srv.RegisterApp(ctx, oauth.NewApp{
		OrganizationID: org, Name: "Fleet sync", BranchIDs: branches,
		Scopes: []string{"svc:drivers:read", "svc:drivers:write"},
	})
	require.NoError(t, err)
	cc := clientcredentials.Config{
		ClientID: app.ClientID, ClientSecret: clientSecret, TokenURL: s.url + oauth.PathToken, Scopes: scopes,
	}
	tok, err := cc.Token(ctx)
	require.NoError(t, err)
	return tok.AccessToken, app.ClientID
}

// directory is the token service's view of the host: one user, a member of
// organization A, and the branches of the fleet service's table, so that
// apps are registered with branches the fleet service knows.
type directory struct{ branches branches }

func (directory) Authenticate(context.Context, string, string) (oauth.User, error) {
	return oauth.User{}, oauth.ErrBadCredentials
}
func (directory) Memberships(_ context.Context, userID string) ([]oauth.Membership, error) {
	if userID == user {
		return []oauth.Membership{{OrganizationID: orgA, Name: "A"}}, nil
	}
	return nil, nil
}
func (d directory) Branches(ctx context.Context, org string) ([]string, error) {
	return d.branches.List(ctx, org)
}

// response is a decoded response.
type response struct {
	status int
	header http.Header
	body   map[string]any
	raw    string
}

func (r response) code() string         { s, _ := r.body["error"].(string); return s }
func (r response) data() map[string]any { m, _ := r.body["data"].(map[string]any); return m }
func (r response) list() []any          { l, _ := r.body["data"].([]any); return l }
func (r response) total() float64 {
	p, _ := r.body["pagination"].(map[string]any)
	n, _ := p["total"].(float64)
	return n
}
func (r response) field(name string) any  { return r.data()[name] }
func (r response) str(name string) string { s, _ := r.field(name).(string); return s }

// do sends a request to the fleet service with a bearer token (none when
// token is "") and a JSON body (none when body is "").
func (e *env) do(t *testing.T, method, path, token, body string) response {
	t.Helper()
	var rd io.Reader
	if body != "" {
		rd = strings.NewReader(body)
	}
	req, err := http.NewRequest(method, e.fleet+path, rd)
	require.NoError(t, err)
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	r := response{status: res.StatusCode, header: res.Header, raw: string(raw)}
	if strings.HasPrefix(res.Header.Get("Content-Type"), "application/json") {
		require.NoError(t, json.Unmarshal(raw, &r.body), string(raw))
	}
	return r
}

// TestService runs the service's routes, on each router, with tokens that
// the token service issued.
func TestService(t *testing.T) {
	for _, router := range routers {
		t.Run(router.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, router.new, 1000)
			tokenA, clientA := e.tokens.token(t, orgA, []string{a1, a2})
			tokenB, _ := e.tokens.token(t, orgB, []string{b1})
			writeOnly, _ := e.tokens.token(t, orgA, nil, "svc:drivers:write")

			r := e.do(t, "GET", "/health", "", "")
			require.Equal(t, http.StatusOK, r.status)
			assert.Equal(t, "ok\n", r.raw)

			// The resource creates and lists, under both prefixes.
			r = e.do(t, "POST", "/v1/"+orgA+"/drivers", tokenA, `{"name":"Ada Lovelace","license_class":"CE"}`)
			require.Equal(t, http.StatusCreated, r.status, r.raw)
			assert.Equal(t, true, r.field("active"))
			ada := r.str("id")
			r = e.do(t, "POST", "/v1/"+orgA+"/drivers", tokenA, `{"name":"Ben Okri","license_class":"B","active":false}`)
			require.Equal(t, http.StatusCreated, r.status, r.raw)
			r = e.do(t, "GET", "/v1/"+orgA+"/drivers?sort=name:asc", tokenA, "")
			require.Equal(t, http.StatusOK, r.status, r.raw)
			assert.Equal(t, 2.0, r.total())
			r = e.do(t, "GET", "/api/v1/"+orgA+"/drivers?filter=license_class:eq:CE", tokenA, "")
			require.Equal(t, http.StatusOK, r.status, r.raw)
			require.Len(t, r.list(), 1)
			assert.Equal(t, ada, r.list()[0].(map[string]any)["id"])
			r = e.do(t, "GET", "/v1/"+orgA+"/drivers/"+ada, tokenA, "")
			require.Equal(t, http.StatusOK, r.status, r.raw)
			assert.Equal(t, "Ada Lovelace", r.str("name"))

			// The hand-written route sees the tenant.
			r = e.do(t, "GET", "/v1/"+orgA+"/fleet-report", tokenA, "")
			require.Equal(t, http.StatusOK, r.status, r.raw)
			assert.Equal(t, map[string]any{
				"organization_id": orgA, "client_id": clientA, "branches": []any{a1, a2},
				"drivers": 2.0, "active_drivers": 1.0,
			}, r.data())
			r = e.do(t, "GET", "/v1/"+orgB+"/fleet-report", tokenB, "")
			require.Equal(t, http.StatusOK, r.status, r.raw)
			assert.Equal(t, []any{b1}, r.field("branches"))
			assert.Equal(t, 0.0, r.field("drivers"))

			// Another organization sees nothing of A, not even that it exists.
			for _, path := range []string{"/v1/" + orgA + "/drivers", "/v1/" + orgA + "/drivers/" + ada, "/v1/" + orgA + "/fleet-report"} {
				r = e.do(t, "GET", path, tokenB, "")
				assert.Equal(t, http.StatusNotFound, r.status, path)
				assert.Equal(t, "not_found", r.code(), path)
			}
			r = e.do(t, "GET", "/v1/"+orgB+"/drivers", tokenB, "")
			require.Equal(t, http.StatusOK, r.status, r.raw)
			assert.Equal(t, 0.0, r.total())

			// No token, a bad token, a token without the read scope.
			for _, path := range []string{"/v1/" + orgA + "/drivers", "/v1/" + orgA + "/fleet-report"} {
				r = e.do(t, "GET", path, "", "")
				assert.Equal(t, http.StatusUnauthorized, r.status, path)
				assert.Equal(t, "unauthorized", r.code(), path)
				assert.Contains(t, r.header.Get("WWW-Authenticate"), "Bearer", path)
				r = e.do(t, "GET", path, "not-a-token", "")
				assert.Equal(t, http.StatusUnauthorized, r.status, path)
				assert.Equal(t, "invalid_token", r.code(), path)
				r = e.do(t, "GET", path, writeOnly, "")
				assert.Equal(t, http.StatusForbidden, r.status, path)
				assert.Equal(t, "insufficient_scope", r.code(), path)
			}
		})
	}
}

// TestRateLimit spends the quota of 3 of organization A on both kinds of
// route: the 4th call is 429, while organization B still passes.
func TestRateLimit(t *testing.T) {
	for _, router := range routers {
		t.Run(router.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, router.new, 3)
			// Every branch of A: drivers are organization-wide, and only a
			// token that covers every branch may create them.
			tokenA, _ := e.tokens.token(t, orgA, []string{a1, a2})
			tokenB, _ := e.tokens.token(t, orgB, nil)

			// Refused by tenancy: not counted, and no RateLimit header.
			r := e.do(t, "GET", "/v1/"+orgA+"/drivers", "", "")
			require.Equal(t, http.StatusUnauthorized, r.status)
			assert.Empty(t, r.header.Get("RateLimit"))

			calls := []struct{ method, path, body string }{
				{"GET", "/v1/" + orgA + "/drivers", ""},
				{"GET", "/v1/" + orgA + "/fleet-report", ""},
				{"POST", "/v1/" + orgA + "/drivers", `{"name":"Ada Lovelace","license_class":"CE"}`},
			}
			for i, c := range calls {
				r = e.do(t, c.method, c.path, tokenA, c.body)
				require.Less(t, r.status, 300, r.raw)
				assert.Equal(t, `"fleet";q=3;w=60`, r.header.Get("RateLimit-Policy"))
				assert.True(t, strings.HasPrefix(r.header.Get("RateLimit"), `"fleet";r=`+strconv.Itoa(2-i)+`;t=`), r.header.Get("RateLimit"))
			}
			r = e.do(t, "GET", "/v1/"+orgA+"/drivers", tokenA, "")
			require.Equal(t, http.StatusTooManyRequests, r.status, r.raw)
			assert.Equal(t, "rate_limited", r.code())
			assert.Equal(t, `"fleet";q=3;w=60`, r.header.Get("RateLimit-Policy"))
			assert.True(t, strings.HasPrefix(r.header.Get("RateLimit"), `"fleet";r=0;t=`), r.header.Get("RateLimit"))
			retry, err := strconv.Atoi(r.header.Get("Retry-After"))
			require.NoError(t, err)
			assert.Positive(t, retry)

			r = e.do(t, "GET", "/v1/"+orgB+"/fleet-report", tokenB, "")
			assert.Equal(t, http.StatusOK, r.status, r.raw)
		})
	}
}

// TestRun runs the program as its README does: flags in, address out,
// served until the context ends.
func TestRun(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	out, stdout := io.Pipe()
	dbPath := filepath.Join(t.TempDir(), "fleet.db")
	tokens := newTokenService(t, directory{})
	done := make(chan error, 1)
	go func() {
		done <- run(ctx, []string{
			"-addr", "127.0.0.1:0", "-db", dbPath, "-router", "chi", "-waybill-db", "sqlite://" + tokens.dbPath,
			"-jwt-secret", secret, "-issuer", "http://127.0.0.1:8080", "-branch", orgA + ":" + a1,
		}, stdout)
		stdout.Close()
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	require.NoError(t, err)
	go func() { _, _ = io.Copy(io.Discard, out) }()
	_, url, ok := strings.Cut(strings.TrimSpace(line), "listening on ")
	require.True(t, ok, line)

	// A token as `waybill serve --jwt-secret ... --issuer http://127.0.0.1:8080` signs it.
	keys, err := keySet(secret)
	require.NoError(t, err)
	now := time.Now()
	token, err := keys.Sign(&bearer.Claims{
		Issuer: "http://127.0.0.1:8080", Subject: "app-1", Audience: bearer.Audience, Role: bearer.Role,
		IssuedAt: now.Unix(), ExpiresAt: now.Add(time.Hour).Unix(), ID: "jti-1",
		OrganizationID: orgA, ClientID: "client-1", Scopes: []string{"svc:drivers:read"},
		BranchIDs: []string{a1}, AppName: "Fleet sync",
	})
	require.NoError(t, err)
	e := &env{fleet: url}
	r := e.do(t, "GET", "/v1/"+orgA+"/fleet-report", token, "")
	require.Equal(t, http.StatusOK, r.status, r.raw)
	assert.Equal(t, []any{a1}, r.field("branches"))

	cancel()
	require.NoError(t, <-done)

	// A second start finds the schema migrated and the branch recorded.
	db, err := openDB(context.Background(), dbPath)
	require.NoError(t, err)
	defer db.Close()
	ids, err := branches{db}.List(context.Background(), orgA)
	require.NoError(t, err)
	assert.Equal(t, []string{a1}, ids)
}

// TestRevokedTokenRefused revokes a user's authorization at the token
// service: the fleet service refuses its access token at once, on both
// routers, as the waybill binary does, because its verifier reads the token
// service's revocations (-waybill-db).
func TestRevokedTokenRefused(t *testing.T) {
	for _, router := range routers {
		t.Run(router.name, func(t *testing.T) {
			t.Parallel()
			e := newEnv(t, router.new, 1000)
			access, refresh, client := e.tokens.codeToken(t)
			kept, _, _ := e.tokens.codeToken(t)
			for _, token := range []string{access, kept} {
				r := e.do(t, "GET", "/v1/"+orgA+"/drivers", token, "")
				require.Equal(t, http.StatusOK, r.status, r.raw)
			}

			req, err := http.NewRequest(http.MethodPost, e.tokens.url+oauth.PathRevoke, strings.NewReader("token="+refresh))
			require.NoError(t, err)
			req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
			req.SetBasicAuth(client[0], client[1])
			res, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			res.Body.Close()
			require.Equal(t, http.StatusOK, res.StatusCode)

			for _, path := range []string{"/v1/" + orgA + "/drivers", "/v1/" + orgA + "/fleet-report"} {
				r := e.do(t, "GET", path, access, "")
				assert.Equal(t, http.StatusUnauthorized, r.status, path)
				assert.Equal(t, "invalid_token", r.code(), path)
				assert.Contains(t, r.body["error_description"], "revoked", path)
			}
			r := e.do(t, "GET", "/v1/"+orgA+"/drivers", kept, "")
			assert.Equal(t, http.StatusOK, r.status, "another authorization stands: %s", r.raw)
		})
	}
}

// TestWaybillDB checks that the service does not start without the token
// service's database, which it needs to refuse revoked tokens.
func TestWaybillDB(t *testing.T) {
	for _, tc := range []struct {
		name, url, says string
		exists          bool // the file at url is a database, of another service
	}{
		{"missing file", "sqlite://" + filepath.Join(t.TempDir(), "nope.db"), "is not the database of a Waybill token service", false},
		{"not a token service's", "sqlite://" + filepath.Join(t.TempDir(), "fleet.db"), "is not the database of a Waybill token service", true},
		{"not a database URL", "waybill.db", "want the token service's --database-url", false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if tc.exists {
				db, err := openDB(context.Background(), strings.TrimPrefix(tc.url, "sqlite://"))
				require.NoError(t, err)
				require.NoError(t, db.Close())
			}
			err := run(context.Background(), []string{"-addr", "127.0.0.1:0", "-db", filepath.Join(t.TempDir(), "fleet.db"),
				"-jwt-secret", secret, "-waybill-db", tc.url}, io.Discard)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.says)
		})
	}
}
