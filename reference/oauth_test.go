package main

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"
	"golang.org/x/oauth2/clientcredentials"
)

// adminJSON runs an admin command that must succeed and decodes its output.
func adminJSON(t testing.TB, args ...string) map[string]any {
	t.Helper()
	out, err := runCommand(t, nil, args...)
	require.NoError(t, err, "waybill %s", strings.Join(args, " "))
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	return got
}

// claimsOf decodes a JWT's payload without verifying it.
func claimsOf(t *testing.T, token string) map[string]any {
	t.Helper()
	parts := strings.Split(token, ".")
	require.Len(t, parts, 3)
	b, err := base64.RawURLEncoding.DecodeString(parts[1])
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}

func postForm(t *testing.T, target string, form url.Values, user, pass string) (*http.Response, map[string]any) {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, target, strings.NewReader(form.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	if user != "" {
		req.SetBasicAuth(url.QueryEscape(user), url.QueryEscape(pass))
	}
	return doJSON(t, req)
}

func postJSON(t *testing.T, target string, body any, bearer string) (*http.Response, map[string]any) {
	t.Helper()
	b, err := json.Marshal(body)
	require.NoError(t, err)
	req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, target, strings.NewReader(string(b)))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/json")
	if bearer != "" {
		req.Header.Set("Authorization", "Bearer "+bearer)
	}
	return doJSON(t, req)
}

func doJSON(t *testing.T, req *http.Request) (*http.Response, map[string]any) {
	t.Helper()
	res, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer res.Body.Close()
	var m map[string]any
	_ = json.NewDecoder(res.Body).Decode(&m)
	return res, m
}

// The token service of the reference binary, set up with its admin
// commands and driven by standard clients, on SQLite and on PostgreSQL.
func TestOAuthEndToEnd(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			db := b.url(t)
			org := createID(t, "admin", "org", "create", "--name", "Acme Transport", "--database-url", db)
			b1 := createID(t, "admin", "branch", "create", "--org", org, "--name", "North", "--database-url", db)
			b2 := createID(t, "admin", "branch", "create", "--org", org, "--name", "South", "--database-url", db)
			createID(t, "admin", "user", "create", "--email", "ops@acme.test", "--password", "s3cret-pass", "--org", org, "--admin", "--database-url", db)

			app := adminJSON(t, "admin", "app", "create", "--org", org, "--name", "Nightly Sync",
				"--scopes", "svc:orders:read svc:accounts:read", "--branches", b1, "--redirect-uri", "https://sync.test/cb", "--database-url", db)
			clientID, secret := app["client_id"].(string), app["client_secret"].(string)
			require.NotEmpty(t, clientID)
			require.Len(t, secret, 43)
			assert.NotEmpty(t, app["app_id"])
			assert.Equal(t, []any{b1}, app["branch_ids"])

			_, err := runCommand(t, nil, "admin", "app", "create", "--org", org, "--name", "X", "--scopes", "a", "--branches", "0b000000-0000-4000-8000-00000000dead", "--database-url", db)
			assert.ErrorContains(t, err, "not a branch of the organization")

			base, _, stop := startRun(t, []string{"serve", "--addr", "127.0.0.1:0", "--database-url", db}, env(nil))

			res, meta := doJSON(t, mustRequest(t, http.MethodGet, base+"/.well-known/oauth-authorization-server"))
			require.Equal(t, 200, res.StatusCode)
			assert.Equal(t, base, meta["issuer"], "the issuer defaults to the address listened on")

			for _, path := range []string{"/auth/v1/oauth/token", "/functions/v1/oauth-token", "/v1/oauth/token"} {
				for _, style := range []oauth2.AuthStyle{oauth2.AuthStyleInHeader, oauth2.AuthStyleInParams} {
					cc := clientcredentials.Config{ClientID: clientID, ClientSecret: secret, TokenURL: base + path, AuthStyle: style}
					tok, err := cc.Token(t.Context())
					require.NoError(t, err, path)
					c := claimsOf(t, tok.AccessToken)
					assert.Equal(t, org, c["organization_id"])
					assert.Equal(t, []any{b1}, c["oauth_branch_ids"])
					assert.Equal(t, "Nightly Sync", c["oauth_app_name"])
					assert.Equal(t, base, c["iss"])
				}
			}

			// A product user signs in and registers an app over HTTP.
			res, signIn := postJSON(t, base+"/auth/v1/token?grant_type=password", map[string]string{"email": "OPS@acme.test", "password": "s3cret-pass"}, "")
			require.Equal(t, 200, res.StatusCode, signIn)
			userToken := signIn["access_token"].(string)
			assert.NotContains(t, claimsOf(t, userToken), "oauth_client_id")
			res, reg := postJSON(t, base+"/auth/v1/oauth/apps", map[string]any{
				"organization_id": org, "name": "Fleet Board", "scopes": []string{"svc:vehicles:read"}, "branch_ids": []string{b2},
			}, userToken)
			require.Equal(t, 201, res.StatusCode, reg)
			assert.Len(t, reg["client_secret"], 43)

			// Rotation through the admin command: the old secret stops working.
			rotated := adminJSON(t, "admin", "app", "rotate-secret", "--client-id", clientID, "--database-url", db)
			assert.Equal(t, clientID, rotated["client_id"])
			newSecret := rotated["client_secret"].(string)
			res, body := postForm(t, base+"/auth/v1/oauth/token", url.Values{"grant_type": {"client_credentials"}}, clientID, secret)
			assert.Equal(t, 401, res.StatusCode)
			assert.Equal(t, "invalid_client", body["error"])
			assert.Equal(t, `Basic realm="waybill"`, res.Header.Get("WWW-Authenticate"))
			res, _ = postForm(t, base+"/auth/v1/oauth/token", url.Values{"grant_type": {"client_credentials"}}, clientID, newSecret)
			assert.Equal(t, 200, res.StatusCode)

			_, err = runCommand(t, nil, "admin", "app", "rotate-secret", "--client-id", "nope", "--database-url", db)
			assert.Error(t, err)

			// A second replica on the same database, under the same issuer,
			// shares the signing key kept in the database: it introspects the
			// first one's token as active.
			base2, _, stop2 := startRun(t, []string{"serve", "--addr", "127.0.0.1:0", "--database-url", db, "--issuer", base}, env(nil))
			res, tok := postForm(t, base+"/v1/oauth/token", url.Values{"grant_type": {"client_credentials"}}, clientID, newSecret)
			require.Equal(t, 200, res.StatusCode)
			res, intro := postForm(t, base2+"/auth/v1/oauth/introspect", url.Values{"token": {tok["access_token"].(string)}}, clientID, newSecret)
			require.Equal(t, 200, res.StatusCode)
			assert.Equal(t, true, intro["active"])
			require.NoError(t, stop2())
			require.NoError(t, stop())
		})
	}
}

// With --issuer and --jwt-secret, every replica signs and verifies alike.
func TestOAuthSharedIssuerAndSecret(t *testing.T) {
	t.Parallel()
	db := "sqlite://" + t.TempDir() + "/w.db"
	org := createID(t, "admin", "org", "create", "--name", "Acme", "--database-url", db)
	app := adminJSON(t, "admin", "app", "create", "--org", org, "--name", "Sync", "--scopes", "svc:orders:read", "--database-url", db)
	clientID, secret := app["client_id"].(string), app["client_secret"].(string)

	getenv := env(map[string]string{"WAYBILL_ISSUER": "https://tms.example.test", "WAYBILL_JWT_SECRET": strings.Repeat("k", 32)})
	base1, _, stop1 := startRun(t, []string{"serve", "--addr", "127.0.0.1:0", "--database-url", db}, getenv)
	base2, _, stop2 := startRun(t, []string{"serve", "--addr", "127.0.0.1:0", "--database-url", db}, getenv)

	res, tok := postForm(t, base1+"/v1/oauth/token", url.Values{"grant_type": {"client_credentials"}}, clientID, secret)
	require.Equal(t, 200, res.StatusCode, tok)
	access := tok["access_token"].(string)
	assert.Equal(t, "https://tms.example.test", claimsOf(t, access)["iss"])
	res, intro := postForm(t, base2+"/auth/v1/oauth/introspect", url.Values{"token": {access}}, clientID, secret)
	require.Equal(t, 200, res.StatusCode)
	assert.Equal(t, true, intro["active"])
	assert.Equal(t, []any{}, claimsOf(t, access)["oauth_branch_ids"], "an app without --branches may use none")
	require.NoError(t, stop1())
	require.NoError(t, stop2())

	_, err := runCommand(t, map[string]string{"WAYBILL_JWT_SECRET": "short"}, "serve", "--addr", "127.0.0.1:0", "--database-url", db)
	assert.ErrorContains(t, err, "at least 32 bytes")
}

func mustRequest(t *testing.T, method, target string) *http.Request {
	t.Helper()
	req, err := http.NewRequestWithContext(t.Context(), method, target, nil)
	require.NoError(t, err)
	return req
}
