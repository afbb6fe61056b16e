package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/internal/testdb"
	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/oauth/bearer"
	"github.com/waybillhq/waybill/oauth/sqlstore"
	"github.com/waybillhq/waybill/query"
)

const (
	testSecret = "a-test-secret-of-at-least-32-bytes!"
	testIssuer = "http://tokens.test"
)

// service is the example served over HTTP on one database, with a token
// from -print-token's devToken, and the token service whose database it
// reads for revocations.
type service struct {
	url, token string
	tokens     *oauth.Server
}

// newService serves the example on the database dsn, reading the token
// service's revocations from the database waybillURL, as -db and
// -waybill-db say.
func newService(t *testing.T, dsn, waybillURL string) *service {
	t.Helper()
	db, dialect, err := openDB(context.Background(), dsn)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	// Opening again, as a restart does, migrates and seeds nothing more.
	again, _, err := openDB(context.Background(), dsn)
	require.NoError(t, err)
	require.NoError(t, again.Close())

	keys, err := keySet(testSecret)
	require.NoError(t, err)
	tokens := newTokenService(t, waybillURL, keys)
	families, closeFamilies, err := openFamilies(context.Background(), waybillURL)
	require.NoError(t, err)
	t.Cleanup(closeFamilies)
	h, err := newHandler(db, dialect, newVerifier(keys, testIssuer, families), testIssuer)
	require.NoError(t, err)
	srv := httptest.NewServer(h)
	t.Cleanup(srv.Close)
	token, err := devToken(keys, testIssuer)
	require.NoError(t, err)
	return &service{url: srv.URL, token: token, tokens: tokens}
}

// devUser is a user of the development organization.
const devUser = "5eed0000-0000-4000-8000-00000000a5e1"

// newTokenService returns a Waybill token service on the database
// waybillURL, migrated, that signs with keys as the reference server
// started with the same --jwt-secret does.
func newTokenService(t *testing.T, waybillURL string, keys *bearer.KeySet) *oauth.Server {
	t.Helper()
	driver, dsn, dialect := "pgx", waybillURL, query.Postgres
	if path, ok := strings.CutPrefix(waybillURL, "sqlite://"); ok {
		driver, dsn, dialect = "sqlite", path+"?_pragma=foreign_keys(1)&_pragma=busy_timeout(5000)&_pragma=journal_mode(WAL)", query.SQLite
	}
	db, err := sql.Open(driver, dsn)
	require.NoError(t, err)
	t.Cleanup(func() { db.Close() })
	store := sqlstore.New(db, dialect)
	require.NoError(t, store.Migrate(context.Background()))
	return &oauth.Server{Issuer: testIssuer, Keys: keys, Store: store, Directory: devDirectory{}}
}

// devDirectory is the token service's view of the host: devUser, a member
// of the development organization, and its branch.
type devDirectory struct{}

func (devDirectory) Authenticate(context.Context, string, string) (oauth.User, error) {
	return oauth.User{}, oauth.ErrBadCredentials
}
func (devDirectory) Memberships(_ context.Context, userID string) ([]oauth.Membership, error) {
	if userID == devUser {
		return []oauth.Membership{{OrganizationID: devOrganization, Name: "Development"}}, nil
	}
	return nil, nil
}
func (devDirectory) Branches(_ context.Context, org string) ([]string, error) {
	if org == devOrganization {
		return []string{devBranch}, nil
	}
	return []string{}, nil
}

// codeToken registers an app of the development organization and runs the
// authorization-code grant for devUser in Go. It returns the app and the
// access and refresh tokens.
func (s *service) codeToken(t *testing.T) (*oauth.App, *oauth.Token) {
	t.Helper()
	ctx := context.Background()
	const redirect, verifier = "https://inspections-app.test/callback", "a-pkce-verifier-of-at-least-forty-three-characters"
	r := inspections()
	app, _, err := s.tokens.RegisterApp(ctx, oauth.NewApp{
		OrganizationID: devOrganization, Name: "Inspections board", RedirectURIs: []string{redirect},
		Scopes: []string{r.ReadScope(), r.WriteScope()},
	})
	require.NoError(t, err)
	req := oauth.AuthorizationRequest{
		ClientID: app.ClientID, RedirectURI: redirect, ResponseType: "code", Scope: r.ReadScope(),
		CodeChallenge: oauth.S256Challenge(verifier), CodeChallengeMethod: "S256",
	}
	checked, scopes, err := s.tokens.CheckAuthorization(ctx, req)
	require.NoError(t, err)
	code, err := s.tokens.IssueCode(ctx, checked, req, scopes, devUser, devOrganization)
	require.NoError(t, err)
	tok, err := s.tokens.ExchangeCode(ctx, app, code, redirect, verifier, "")
	require.NoError(t, err)
	return app, tok
}

// backends are the databases of the tests: the service's own, and the
// token service's (-waybill-db), which on PostgreSQL is the same database.
var backends = map[string]func(t *testing.T) (dsn, waybillURL string){
	"sqlite": func(t *testing.T) (string, string) {
		dir := t.TempDir()
		return filepath.Join(dir, "inspections.db"), "sqlite://" + filepath.Join(dir, "waybill.db")
	},
	"postgres": func(t *testing.T) (string, string) {
		url := testdb.PostgresURL(t)
		return url, url
	},
}

// response is a decoded JSON answer.
type response struct {
	status int
	header http.Header
	body   map[string]any
}

func (r response) data() map[string]any { m, _ := r.body["data"].(map[string]any); return m }
func (r response) list() []any          { l, _ := r.body["data"].([]any); return l }

func (s *service) do(t *testing.T, method, path, body string) response {
	t.Helper()
	req, err := http.NewRequest(method, s.url+path, strings.NewReader(body))
	require.NoError(t, err)
	if s.token != "" {
		req.Header.Set("Authorization", "Bearer "+s.token)
	}
	if body != "" {
		req.Header.Set("Content-Type", "application/json")
	}
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	raw, err := io.ReadAll(res.Body)
	require.NoError(t, err)
	r := response{status: res.StatusCode, header: res.Header}
	require.NoError(t, json.Unmarshal(raw, &r.body), string(raw))
	return r
}

func TestInspections(t *testing.T) {
	for name, dbs := range backends {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dsn, waybillURL := dbs(t)
			testInspections(t, newService(t, dsn, waybillURL))
		})
	}
}

// TestRevokedTokenRefused revokes a user's authorization at the token
// service: the service refuses its access token at once, as the waybill
// binary does, because its verifier reads the token service's revocations
// (-waybill-db).
func TestRevokedTokenRefused(t *testing.T) {
	const path = "/v1/" + devBranch + "/inspections"
	for name, dbs := range backends {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dsn, waybillURL := dbs(t)
			s := newService(t, dsn, waybillURL)
			app, tok := s.codeToken(t)
			_, kept := s.codeToken(t)
			for _, token := range []string{tok.AccessToken, kept.AccessToken} {
				r := (&service{url: s.url, token: token}).do(t, "GET", path, "")
				require.Equal(t, http.StatusOK, r.status, r.body)
			}

			require.NoError(t, s.tokens.RevokeToken(context.Background(), app, tok.RefreshToken))
			r := (&service{url: s.url, token: tok.AccessToken}).do(t, "GET", path, "")
			assert.Equal(t, http.StatusUnauthorized, r.status, "a revoked family's access token")
			assert.Equal(t, "invalid_token", r.body["error"])
			assert.Contains(t, r.body["error_description"], "revoked")
			r = (&service{url: s.url, token: kept.AccessToken}).do(t, "GET", path, "")
			assert.Equal(t, http.StatusOK, r.status, "another authorization stands: %v", r.body)
			r = s.do(t, "GET", path, "")
			assert.Equal(t, http.StatusOK, r.status, "a client-credentials token has no family: %v", r.body)
		})
	}
}

// TestOpenFamilies checks that the service refuses a -waybill-db that is
// not a token service's database: it could not see revocations.
func TestOpenFamilies(t *testing.T) {
	for _, tc := range []struct{ name, url, says string }{
		{"missing file", "sqlite://" + filepath.Join(t.TempDir(), "nope.db"), "is not the database of a Waybill token service"},
		{"not a database URL", "waybill.db", "want the token service's --database-url"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, _, err := openFamilies(context.Background(), tc.url)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.says)
		})
	}
}

func testInspections(t *testing.T, s *service) {
	const path = "/v1/" + devBranch + "/inspections"

	r := s.do(t, "POST", path, `{"vehicle_plate": "B-TR 1042", "inspected_on": "2025-02-10"}`)
	require.Equal(t, http.StatusCreated, r.status, r.body)
	created := r.data()
	assert.Equal(t, "scheduled", created["status"], "the status flow's initial state")
	assert.Equal(t, "pending", created["result"], "the domain hook's default")
	assert.Equal(t, devBranch, created["branch_id"])
	assert.Equal(t, path+"/"+created["id"].(string), r.header.Get("Location"))
	item := path + "/" + created["id"].(string)

	t.Run("status flow", func(t *testing.T) {
		r := s.do(t, "PATCH", item, `{"status": "done", "result": "pass"}`)
		require.Equal(t, http.StatusOK, r.status, r.body)
		assert.Equal(t, "done", r.data()["status"])

		r = s.do(t, "PATCH", item, `{"status": "scheduled"}`)
		assert.Equal(t, http.StatusBadRequest, r.status)
		assert.Equal(t, "invalid_update", r.body["error"])
		assert.Contains(t, r.body["error_description"], "final")

		r = s.do(t, "POST", path, `{"vehicle_plate": "B-TR 7", "inspected_on": "2025-02-11", "status": "done"}`)
		require.Equal(t, http.StatusCreated, r.status, "a new inspection may start as done: %v", r.body)
		r = s.do(t, "POST", path, `{"vehicle_plate": "B-TR 7", "inspected_on": "2025-02-11", "status": "archived"}`)
		assert.Equal(t, http.StatusBadRequest, r.status)
		assert.Equal(t, "invalid_create", r.body["error"], "not one of the enum's values")
	})

	t.Run("a future inspection cannot pass", func(t *testing.T) {
		r := s.do(t, "POST", path, `{"vehicle_plate": "M-AB 12", "inspected_on": "2999-01-01", "result": "pass"}`)
		assert.Equal(t, http.StatusBadRequest, r.status)
		assert.Equal(t, "invalid_create", r.body["error"])
		assert.Contains(t, r.body["error_description"], "has not taken place yet")

		r = s.do(t, "POST", path, `{"vehicle_plate": "M-AB 12", "inspected_on": "2999-01-01"}`)
		require.Equal(t, http.StatusCreated, r.status, r.body)
		future := path + "/" + r.data()["id"].(string)
		r = s.do(t, "PATCH", future, `{"result": "pass"}`)
		assert.Equal(t, http.StatusBadRequest, r.status)
		assert.Equal(t, "invalid_update", r.body["error"])
		r = s.do(t, "PATCH", future, `{"result": "pass", "inspected_on": "2025-01-05"}`)
		assert.Equal(t, http.StatusOK, r.status, "the hook sees the record as the write leaves it: %v", r.body)
	})

	t.Run("list with filters", func(t *testing.T) {
		r := s.do(t, "GET", path+"?filter=result:eq:pass&filter=vehicle_plate:like:B-%25&sort=inspected_on:asc", "")
		require.Equal(t, http.StatusOK, r.status, r.body)
		require.Len(t, r.list(), 1)
		assert.Equal(t, "B-TR 1042", r.list()[0].(map[string]any)["vehicle_plate"])
		assert.EqualValues(t, 1, r.body["pagination"].(map[string]any)["total"])

		r = s.do(t, "GET", path+"?filter=inspected_on:gte:2025-01-01&sort=vehicle_plate:desc&limit=2", "")
		require.Equal(t, http.StatusOK, r.status, r.body)
		assert.Len(t, r.list(), 2)
		assert.EqualValues(t, 3, r.body["pagination"].(map[string]any)["total"])

		r = s.do(t, "GET", path+"?filter=branch_id:eq:"+devBranch, "")
		assert.Equal(t, http.StatusBadRequest, r.status, "the tenant columns are the server's")
		assert.Equal(t, "invalid_request", r.body["error"])
	})

	t.Run("tenancy", func(t *testing.T) {
		r := s.do(t, "GET", "/v1/5eed0000-0000-4000-8000-0000000000b2/inspections", "")
		assert.Equal(t, http.StatusNotFound, r.status, "an unknown branch")
		anonymous := &service{url: s.url}
		r = anonymous.do(t, "GET", path, "")
		assert.Equal(t, http.StatusUnauthorized, r.status)
		assert.Equal(t, "unauthorized", r.body["error"])
	})

	t.Run("openapi", func(t *testing.T) {
		r := s.do(t, "GET", "/openapi.json", "")
		require.Equal(t, http.StatusOK, r.status)
		paths, _ := r.body["paths"].(map[string]any)
		assert.Contains(t, paths, "/v1/{scopeId}/inspections")
		assert.Contains(t, paths, "/v1/{scopeId}/inspections/{id}")
		schemas, _ := r.body["components"].(map[string]any)["schemas"].(map[string]any)
		require.Contains(t, schemas, "Inspection")
		props, _ := schemas["Inspection"].(map[string]any)["properties"].(map[string]any)
		for _, f := range []string{"vehicle_plate", "inspected_on", "result", "status", "notes", "branch_id"} {
			assert.Contains(t, props, f)
		}
	})
}

// A token the reference server signs with the same --jwt-secret carries
// the kid "s-" and the first 48 bits of the secret's SHA-256 in hex.
func TestKeySet(t *testing.T) {
	_, err := keySet("")
	assert.ErrorContains(t, err, "WAYBILL_JWT_SECRET")
	_, err = keySet("short")
	assert.Error(t, err)

	keys, err := keySet(testSecret)
	require.NoError(t, err)
	token, err := devToken(keys, testIssuer)
	require.NoError(t, err)
	c, err := (&bearer.Verifier{Keys: keys, Issuer: testIssuer}).Verify(context.Background(), token)
	require.NoError(t, err)
	assert.True(t, c.ClientCredentials())
	assert.Equal(t, []string{devBranch}, c.BranchIDs)
	assert.Equal(t, devOrganization, c.OrganizationID)
}

// TestMain runs the tests with testdb.Main, which says how many skipped for want of
// PostgreSQL or Redis.
func TestMain(m *testing.M) { testdb.Main(m) }
