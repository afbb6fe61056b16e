package main

import (
	"bytes"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"

	"github.com/waybillhq/waybill/oauth"
)

// rvRedirect is the redirect URI of the apps of these tests.
const rvRedirect = "https://app.rv.test/callback"

// rvTenant is an organization with an admin user and an app that may read
// its vehicles, by client credentials or for the user.
type rvTenant struct {
	rlTenant
	email, password string
}

// newRVTenant creates the tenant in the database dbURL with the admin
// commands.
func newRVTenant(t *testing.T, dbURL string) rvTenant {
	t.Helper()
	org := createID(t, "admin", "org", "create", "--name", "Revocation Freight", "--database-url", dbURL)
	c := rvTenant{rlTenant: rlTenant{org: org}, email: "ops@rv.test", password: "s3cret-pass"}
	createID(t, "admin", "user", "create", "--email", c.email, "--password", c.password, "--org", org, "--admin", "--database-url", dbURL)
	app := adminJSON(t, "admin", "app", "create", "--org", org, "--name", "Revocation Sync", "--scopes", "svc:vehicles:read",
		"--redirect-uri", rvRedirect, "--database-url", dbURL)
	c.clientID, c.secret = app["client_id"].(string), app["client_secret"].(string)
	return c
}

// rvServed creates an rvTenant in the database dbURL and serves it: a
// waybill server on a free port, which stops, and must stop cleanly, when
// the test ends. It returns the server's base URL and the tenant.
func rvServed(t *testing.T, dbURL string) (base string, c rvTenant) {
	t.Helper()
	c = newRVTenant(t, dbURL)
	base, _, stop := startRun(t, []string{"serve", "--addr", "127.0.0.1:0", "--database-url", dbURL}, env(nil))
	t.Cleanup(func() { require.NoError(t, stop()) })
	return base, c
}

// rvCodeTokens runs the authorization-code flow of c's app against the
// server at base, as a client and a browser do: the user signs in on the
// login page and approves on the consent page, and the client exchanges
// the code. It returns the token.
func rvCodeTokens(t *testing.T, base string, c rvTenant) *oauth2.Token {
	t.Helper()
	conf := &oauth2.Config{
		ClientID: c.clientID, ClientSecret: c.secret, RedirectURL: rvRedirect, Scopes: []string{"svc:vehicles:read"},
		Endpoint: oauth2.Endpoint{AuthURL: base + oauth.PathAuthorize, TokenURL: base + oauth.PathToken, AuthStyle: oauth2.AuthStyleInHeader},
	}
	pkce := oauth2.GenerateVerifier()
	code := rvConsent(t, base, conf.AuthCodeURL("rv-state", oauth2.S256ChallengeOption(pkce)), c)
	tok, err := conf.Exchange(t.Context(), code, oauth2.VerifierOption(pkce))
	require.NoError(t, err)
	require.NotEmpty(t, tok.RefreshToken)
	return tok
}

// rvHiddenInput matches the hidden inputs of the login and consent forms.
var rvHiddenInput = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)

// rvConsent plays the browser's part for authURL and returns the code that
// the redirect back to the app carries.
func rvConsent(t *testing.T, base, authURL string, c rvTenant) string {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	browser := &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if strings.HasPrefix(req.URL.String(), rvRedirect) {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	page := func(res *http.Response, err error) (*http.Response, url.Values) {
		t.Helper()
		require.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		fields := url.Values{}
		for _, m := range rvHiddenInput.FindAllStringSubmatch(string(b), -1) {
			fields.Set(m[1], html.UnescapeString(m[2]))
		}
		return res, fields
	}
	res, login := page(browser.Get(authURL))
	require.Equal(t, http.StatusOK, res.StatusCode)
	login.Set("email", c.email)
	login.Set("password", c.password)
	res, approve := page(browser.PostForm(base+oauth.PathLogin, login))
	require.Equal(t, http.StatusOK, res.StatusCode)
	approve.Set("organization_id", c.org)
	approve.Set("decision", "approve")
	res, _ = page(browser.PostForm(base+oauth.PathConsent, approve))
	require.Equal(t, http.StatusSeeOther, res.StatusCode)
	back, err := url.Parse(res.Header.Get("Location"))
	require.NoError(t, err)
	require.NotEmpty(t, back.Query().Get("code"), "redirect %s", back)
	return back.Query().Get("code")
}

// rvRevoke revokes token at base as c's app.
func rvRevoke(t *testing.T, base string, c rvTenant, token string) (*http.Response, map[string]any) {
	t.Helper()
	return postForm(t, base+oauth.PathRevoke, url.Values{"token": {token}}, c.clientID, c.secret)
}

// rvRefresh refreshes with refresh at base as c's app.
func rvRefresh(t *testing.T, base string, c rvTenant, refresh string) (*http.Response, map[string]any) {
	t.Helper()
	return postForm(t, base+oauth.PathToken, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}}, c.clientID, c.secret)
}

// TestRevocation revokes tokens at the reference server, on SQLite and
// PostgreSQL: a client-credentials access token is refused with
// unsupported_token_type and keeps working; an authorization-code access
// token revokes its whole family, so that it fails at the API at once and
// its refresh token fails too.
func TestRevocation(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			db := b.url(t)
			base, c := rvServed(t, db)

			cc := rlToken(t, base, c.rlTenant)
			res, body := rvRevoke(t, base, c, cc)
			assert.Equal(t, http.StatusBadRequest, res.StatusCode, body)
			assert.Equal(t, "unsupported_token_type", body["error"])
			assert.Contains(t, body["error_description"], "cannot be revoked; it stays valid until it expires at")
			assert.Equal(t, http.StatusOK, rlVehicles(t, base, c.org, cc).status, "the token still works")

			tok := rvCodeTokens(t, base, c)
			require.Equal(t, http.StatusOK, rlVehicles(t, base, c.org, tok.AccessToken).status)
			res, body = rvRevoke(t, base, c, tok.AccessToken)
			require.Equal(t, http.StatusOK, res.StatusCode, body)
			api := rlVehicles(t, base, c.org, tok.AccessToken)
			assert.Equal(t, http.StatusUnauthorized, api.status, "the access token fails at once")
			assert.Equal(t, "invalid_token", api.body["error"])
			res, body = rvRefresh(t, base, c, tok.RefreshToken)
			assert.Equal(t, http.StatusBadRequest, res.StatusCode)
			assert.Equal(t, "invalid_grant", body["error"], "its refresh token is revoked with it")

			tok = rvCodeTokens(t, base, c)
			res, _ = rvRevoke(t, base, c, tok.RefreshToken)
			require.Equal(t, http.StatusOK, res.StatusCode)
			assert.Equal(t, http.StatusUnauthorized, rlVehicles(t, base, c.org, tok.AccessToken).status, "the refresh token's family")

			res, _ = rvRevoke(t, base, c, "not-a-token")
			assert.Equal(t, http.StatusOK, res.StatusCode, "an unknown token: nothing to revoke (RFC 7009 section 2.2)")
		})
	}
}

// TestRotateSecretRevokeTokens rotates an app's secret with
// --revoke-tokens (admin command) and revoke_tokens (HTTP), on SQLite and
// PostgreSQL: the app's authorization-code tokens fail at once, its
// client-credentials tokens live out their lifetime, and the answer says
// so.
func TestRotateSecretRevokeTokens(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			db := b.url(t)
			base, c := rvServed(t, db)

			cc := rlToken(t, base, c.rlTenant)
			kept := rvCodeTokens(t, base, c)
			rotated := adminJSON(t, "admin", "app", "rotate-secret", "--client-id", c.clientID, "--database-url", db)
			assert.Equal(t, false, rotated["tokens_revoked"], "without --revoke-tokens")
			assert.Contains(t, rotated["tokens"], "stay valid")
			assert.Equal(t, http.StatusOK, rlVehicles(t, base, c.org, kept.AccessToken).status)
			c.secret = rotated["client_secret"].(string)

			tok := rvCodeTokens(t, base, c)
			before := time.Now()
			rotated = adminJSON(t, "admin", "app", "rotate-secret", "--client-id", c.clientID, "--revoke-tokens", "--database-url", db)
			assert.Equal(t, true, rotated["tokens_revoked"])
			assert.EqualValues(t, 2, rotated["revoked_families"])
			assert.Contains(t, rotated["tokens"], "client-credentials access tokens cannot be revoked and stay valid until they expire")
			until, err := time.Parse(time.RFC3339, rotated["access_tokens_valid_until"].(string))
			require.NoError(t, err)
			assert.WithinDuration(t, before.Add(oauth.DefaultAccessTokenTTL), until, time.Minute)
			old := c
			c.secret = rotated["client_secret"].(string)

			for _, access := range []string{kept.AccessToken, tok.AccessToken} {
				assert.Equal(t, http.StatusUnauthorized, rlVehicles(t, base, c.org, access).status, "an authorization-code token fails at once")
			}
			res, body := rvRefresh(t, base, c, tok.RefreshToken)
			assert.Equal(t, "invalid_grant", body["error"], "and so does its refresh token: %d", res.StatusCode)
			assert.Equal(t, http.StatusOK, rlVehicles(t, base, c.org, cc).status, "a client-credentials token lives out its lifetime")
			res, body = postForm(t, base+oauth.PathToken, url.Values{"grant_type": {"client_credentials"}}, old.clientID, old.secret)
			assert.Equal(t, http.StatusUnauthorized, res.StatusCode, "the old secret is refused: %v", body)

			// Over HTTP, by an admin of the organization.
			tok = rvCodeTokens(t, base, c)
			res, signIn := postJSON(t, base+"/auth/v1/token?grant_type=password", map[string]string{"email": c.email, "password": c.password}, "")
			require.Equal(t, http.StatusOK, res.StatusCode, signIn)
			res, rotation := postJSON(t, base+oauth.PathApps+"/"+c.clientID+"/rotate-secret", map[string]any{"revoke_tokens": true}, signIn["access_token"].(string))
			require.Equal(t, http.StatusOK, res.StatusCode, rotation)
			assert.Equal(t, true, rotation["tokens_revoked"])
			assert.EqualValues(t, 1, rotation["revoked_families"])
			assert.Equal(t, http.StatusUnauthorized, rlVehicles(t, base, c.org, tok.AccessToken).status)
			assert.Equal(t, http.StatusOK, rlVehicles(t, base, c.org, cc).status)

			_, err = runCommand(t, nil, "admin", "app", "rotate-secret", "--client-id", "no-such-app", "--revoke-tokens", "--database-url", db)
			assert.ErrorContains(t, err, "no app with client_id")
		})
	}
}

// TestRedirectURIRules registers apps with redirect URIs through the admin
// command and over HTTP, on SQLite and PostgreSQL: what OAuth 2.1 and RFC
// 8252 allow is registered, anything else refused with a message that
// says why.
func TestRedirectURIRules(t *testing.T) {
	t.Parallel()
	refused := []struct{ uri, says string }{
		{"javascript://app.rv.test/%0aalert(1)", `scheme "javascript"`},
		{"data:text/html,<script>alert(1)</script>", `scheme "data"`},
		{"http://app.rv.test/callback", "not a loopback address"},
		{"https://app.rv.test/callback#frag", "fragment"},
		{"/callback", "is relative"},
		{"https://*.rv.test/callback", "wildcards"},
		{"https://user@app.rv.test/callback", "user information"},
	}
	allowed := []string{"https://app.rv.test/callback", "http://127.0.0.1:8765/cb", "http://[::1]:8765/cb", "http://localhost:8765/cb", "com.example.app:/callback"}
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			db := b.url(t)
			c := newRVTenant(t, db)
			for _, r := range refused {
				_, err := runCommand(t, nil, "admin", "app", "create", "--org", c.org, "--name", "Bad", "--scopes", "svc:vehicles:read",
					"--redirect-uri", "https://app.rv.test/ok", "--redirect-uri", r.uri, "--database-url", db)
				if assert.Error(t, err, r.uri) {
					assert.Contains(t, err.Error(), "admin app create: --redirect-uri: redirect URI ", r.uri)
					assert.Contains(t, err.Error(), r.says, r.uri)
				}
			}
			args := []string{"admin", "app", "create", "--org", c.org, "--name", "Native", "--scopes", "svc:vehicles:read", "--database-url", db}
			for _, u := range allowed {
				args = append(args, "--redirect-uri", u)
			}
			app := adminJSON(t, args...)
			assert.Len(t, app["redirect_uris"], len(allowed))

			base, _, stop := startRun(t, []string{"serve", "--addr", "127.0.0.1:0", "--database-url", db}, env(nil))
			defer func() { require.NoError(t, stop()) }()
			res, signIn := postJSON(t, base+"/auth/v1/token?grant_type=password", map[string]string{"email": c.email, "password": c.password}, "")
			require.Equal(t, http.StatusOK, res.StatusCode, signIn)
			user := signIn["access_token"].(string)
			register := func(uris ...string) (*http.Response, map[string]any) {
				return postJSON(t, base+oauth.PathApps, map[string]any{
					"organization_id": c.org, "name": "Over HTTP", "scopes": []string{"svc:vehicles:read"}, "redirect_uris": uris,
				}, user)
			}
			for _, r := range refused {
				res, body := register("https://app.rv.test/ok", r.uri)
				assert.Equal(t, http.StatusBadRequest, res.StatusCode, r.uri)
				assert.Equal(t, "invalid_request", body["error"], r.uri)
				assert.Contains(t, body["error_description"], r.says, r.uri)
			}
			res, body := register(allowed...)
			assert.Equal(t, http.StatusCreated, res.StatusCode, body)
		})
	}
}

// TestRedirectURIRefusedByBinary runs the built binary's admin command with
// a javascript: redirect URI: it exits 1, prints why on stderr, and
// nothing on stdout.
func TestRedirectURIRefusedByBinary(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the binary; skipped with -short")
	}
	t.Parallel()
	bin := buildBinary(t)
	db := "sqlite://" + t.TempDir() + "/w.db"
	org := createID(t, "admin", "org", "create", "--name", "Binary Freight", "--database-url", db)
	var stdout, stderr bytes.Buffer
	cmd := exec.CommandContext(t.Context(), bin, "admin", "app", "create", "--org", org, "--name", "X", "--scopes", "svc:vehicles:read",
		"--redirect-uri", "javascript://x.rv.test/%0aalert(1)", "--database-url", db)
	cmd.Env = binaryEnv(nil)
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	require.Error(t, err)
	assert.Equal(t, 1, cmd.ProcessState.ExitCode())
	assert.Empty(t, stdout.String())
	assert.Equal(t, `waybill: admin app create: --redirect-uri: redirect URI "javascript://x.rv.test/%0aalert(1)" has the scheme "javascript"; `+
		"a redirect URI must use https, http on a loopback host, or a private-use scheme in reverse-domain form such as com.example.app\n", stderr.String())
}
