package main

import (
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/url"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"

	"github.com/waybillhq/waybill/oauth"
)

// The lifecycle of a user's authorization through the real server, on
// SQLite and on PostgreSQL: offboarding with the admin commands, the
// absolute lifetime of a refresh token family, codes checked before they
// are spent, introspection confined to the client's own tokens, and the
// grant named in every token.

const (
	lcPassword = "lifecycle-pass-1"
	lcRedirect = "https://lifecycle.example.test/cb"
	lcScope    = "svc:vehicles:read"
)

// lcApp is a registered app and its secret.
type lcApp struct{ id, secret string }

// lcWorld is what lcSetUp creates with the admin commands.
type lcWorld struct {
	db        string // the database URL
	org, org2 string
	branch    string // a branch of org
	// user belongs to org and org2; bystander to org.
	user, email               string
	bystander, bystanderEmail string
	app, other                lcApp
}

// lcSetUp creates two organizations, a user of both, a bystander of the
// first and two apps of the first with the admin commands.
func lcSetUp(t *testing.T, db string) lcWorld {
	t.Helper()
	w := lcWorld{db: db, email: "driver@lifecycle.test", bystanderEmail: "clerk@lifecycle.test"}
	w.org = createID(t, "admin", "org", "create", "--name", "Acme", "--database-url", db)
	w.org2 = createID(t, "admin", "org", "create", "--name", "Globex", "--database-url", db)
	w.branch = createID(t, "admin", "branch", "create", "--org", w.org, "--name", "North", "--database-url", db)
	w.user = createID(t, "admin", "user", "create", "--email", w.email, "--password", lcPassword, "--org", w.org, "--org", w.org2, "--database-url", db)
	w.bystander = createID(t, "admin", "user", "create", "--email", w.bystanderEmail, "--password", lcPassword, "--org", w.org, "--database-url", db)
	app := func(name string) lcApp {
		out := adminJSON(t, "admin", "app", "create", "--org", w.org, "--name", name, "--scopes", lcScope,
			"--branches", w.branch, "--redirect-uri", lcRedirect, "--database-url", db)
		return lcApp{out["client_id"].(string), out["client_secret"].(string)}
	}
	w.app, w.other = app("Fleet Board"), app("Yard App")
	return w
}

// lcServe starts the server on the world's database with args added; the
// token endpoint's rate limit is off, for the many grants of a test.
func lcServe(t *testing.T, w lcWorld, args ...string) string {
	t.Helper()
	base, _, stop := startRun(t, append([]string{"serve", "--addr", "127.0.0.1:0", "--database-url", w.db, "--rate-token", "0"}, args...), env(nil))
	t.Cleanup(func() { assert.NoError(t, stop()) })
	return base
}

// lcAdmin runs an admin command that must succeed and print one JSON
// object on one line, and decodes it.
func lcAdmin(t *testing.T, w lcWorld, args ...string) map[string]any {
	t.Helper()
	out, err := runCommand(t, nil, append(append([]string{"admin"}, args...), "--database-url", w.db)...)
	require.NoError(t, err, "waybill admin %s", strings.Join(args, " "))
	require.Equal(t, 1, strings.Count(out, "\n"), "one line of output: %q", out)
	var got map[string]any
	require.NoError(t, json.Unmarshal([]byte(out), &got))
	return got
}

var lcHiddenInput = regexp.MustCompile(`<input type="hidden" name="([^"]+)" value="([^"]*)">`)

// lcHidden returns the hidden inputs of a page's forms.
func lcHidden(page string) url.Values {
	v := url.Values{}
	for _, m := range lcHiddenInput.FindAllStringSubmatch(page, -1) {
		v.Set(m[1], html.UnescapeString(m[2]))
	}
	return v
}

// lcGrant is a code and the PKCE verifier it was requested with.
type lcGrant struct{ code, verifier string }

// lcConsent plays the user's part of the authorization-code flow of app
// through the real pages: sign in as email, approve for org. It returns
// the code the server redirects back with.
func lcConsent(t *testing.T, base string, app lcApp, email, org string) lcGrant {
	t.Helper()
	conf := &oauth2.Config{
		ClientID: app.id, ClientSecret: app.secret, RedirectURL: lcRedirect, Scopes: []string{lcScope},
		Endpoint: oauth2.Endpoint{AuthURL: base + oauth.PathAuthorize, TokenURL: base + oauth.PathToken},
	}
	verifier := oauth2.GenerateVerifier()
	back := lcBrowse(t, base, conf.AuthCodeURL("st", oauth2.S256ChallengeOption(verifier)), lcRedirect, email, lcPassword, org)
	require.NotEmpty(t, back.Query().Get("code"), "redirected to %s", back)
	return lcGrant{back.Query().Get("code"), verifier}
}

// lcBrowse plays a browser through the authorization request authorizeURL
// of the server at base: it signs in as email with password, approves for
// org, and returns the URL the server then redirects to, which must start
// with redirectURI.
func lcBrowse(t *testing.T, base, authorizeURL, redirectURI, email, password, org string) *url.URL {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	browser := &http.Client{Jar: jar, CheckRedirect: func(req *http.Request, _ []*http.Request) error {
		if strings.HasPrefix(req.URL.String(), redirectURI) {
			return http.ErrUseLastResponse
		}
		return nil
	}}
	page := func(res *http.Response, err error) (*http.Response, string) {
		require.NoError(t, err)
		defer res.Body.Close()
		b, err := io.ReadAll(res.Body)
		require.NoError(t, err)
		return res, string(b)
	}
	res, body := page(browser.Get(authorizeURL))
	require.Equal(t, http.StatusOK, res.StatusCode, body)
	login := lcHidden(body)
	login.Set("email", email)
	login.Set("password", password)
	res, body = page(browser.PostForm(base+oauth.PathLogin, login))
	require.Equal(t, http.StatusOK, res.StatusCode, body)
	approve := lcHidden(body)
	approve.Set("organization_id", org)
	approve.Set("decision", "approve")
	res, body = page(browser.PostForm(base+oauth.PathConsent, approve))
	require.Equal(t, http.StatusSeeOther, res.StatusCode, body)
	back, err := url.Parse(res.Header.Get("Location"))
	require.NoError(t, err)
	require.True(t, strings.HasPrefix(back.String(), redirectURI), "redirected to %s", back)
	return back
}

// lcExchange redeems a code as app.
func lcExchange(t *testing.T, base string, app lcApp, g lcGrant) (int, map[string]any) {
	t.Helper()
	res, body := postForm(t, base+oauth.PathToken, url.Values{
		"grant_type": {"authorization_code"}, "code": {g.code}, "redirect_uri": {lcRedirect}, "code_verifier": {g.verifier},
	}, app.id, app.secret)
	return res.StatusCode, body
}

// lcTokens is an access token and the refresh token that came with it.
type lcTokens struct{ access, refresh string }

// lcAuthorize runs the whole flow for app, email and org, and returns the
// tokens.
func lcAuthorize(t *testing.T, base string, app lcApp, email, org string) lcTokens {
	t.Helper()
	status, body := lcExchange(t, base, app, lcConsent(t, base, app, email, org))
	require.Equal(t, http.StatusOK, status, body)
	return lcTokens{body["access_token"].(string), body["refresh_token"].(string)}
}

// lcRefresh runs the refresh grant; the token is bound to its client.
func lcRefresh(t *testing.T, base, refresh string) (int, map[string]any) {
	t.Helper()
	res, body := postForm(t, base+oauth.PathToken, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refresh}}, "", "")
	return res.StatusCode, body
}

// lcAPI returns the status of listing the vehicles of org with access.
func lcAPI(t *testing.T, base, org, access string) int {
	t.Helper()
	req := mustRequest(t, http.MethodGet, base+"/v1/"+org+"/vehicles")
	req.Header.Set("Authorization", "Bearer "+access)
	res, _ := doJSON(t, req)
	return res.StatusCode
}

// lcRefused asserts that the refresh token is refused with invalid_grant.
func lcRefused(t *testing.T, base, refresh, why string) {
	t.Helper()
	status, body := lcRefresh(t, base, refresh)
	assert.Equal(t, http.StatusBadRequest, status, "%s: %v", why, body)
	assert.Equal(t, "invalid_grant", body["error"], why)
}

func TestOffboardingEndToEnd(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			w := lcSetUp(t, b.url(t))
			base := lcServe(t, w)

			inOrg := lcAuthorize(t, base, w.app, w.email, w.org)
			otherApp := lcAuthorize(t, base, w.other, w.email, w.org)
			inOrg2 := lcAuthorize(t, base, w.app, w.email, w.org2)
			bystander := lcAuthorize(t, base, w.app, w.bystanderEmail, w.org)
			for _, tok := range []lcTokens{inOrg, otherApp, bystander} {
				require.Equal(t, http.StatusOK, lcAPI(t, base, w.org, tok.access))
			}
			require.Equal(t, http.StatusOK, lcAPI(t, base, w.org2, inOrg2.access))

			t.Run("user remove", func(t *testing.T) {
				out := lcAdmin(t, w, "user", "remove", "--id", w.user, "--org", w.org)
				assert.Equal(t, map[string]any{"id": w.user, "organization_id": w.org, "revoked_families": 2.0}, out)
				for _, tok := range []lcTokens{inOrg, otherApp} {
					lcRefused(t, base, tok.refresh, "a refresh token of the organization left")
					assert.Equal(t, http.StatusUnauthorized, lcAPI(t, base, w.org, tok.access), "its access token, at once")
				}
				assert.Equal(t, http.StatusOK, lcAPI(t, base, w.org2, inOrg2.access), "the other organization's tokens stand")
				status, body := lcRefresh(t, base, inOrg2.refresh)
				require.Equal(t, http.StatusOK, status, body)
				inOrg2 = lcTokens{body["access_token"].(string), body["refresh_token"].(string)}
				assert.Equal(t, http.StatusOK, lcAPI(t, base, w.org, bystander.access), "another user's tokens stand")

				_, err := runCommand(t, nil, "admin", "user", "remove", "--id", w.user, "--org", w.org, "--database-url", w.db)
				assert.ErrorContains(t, err, "is not a member of organization")
			})
			t.Run("user delete", func(t *testing.T) {
				out := lcAdmin(t, w, "user", "delete", "--id", w.user)
				assert.Equal(t, map[string]any{"id": w.user, "organization_ids": []any{w.org2}, "revoked_families": 1.0}, out)
				lcRefused(t, base, inOrg2.refresh, "a refresh token of a deleted user")
				assert.Equal(t, http.StatusUnauthorized, lcAPI(t, base, w.org2, inOrg2.access))
				res, body := postJSON(t, base+"/auth/v1/token?grant_type=password", map[string]string{"email": w.email, "password": lcPassword}, "")
				assert.Equal(t, http.StatusBadRequest, res.StatusCode, "a deleted user cannot sign in: %v", body)

				_, err := runCommand(t, nil, "admin", "user", "delete", "--id", w.user, "--database-url", w.db)
				assert.ErrorContains(t, err, "not found")
				status, body := lcRefresh(t, base, bystander.refresh)
				assert.Equal(t, http.StatusOK, status, "another user's refresh token: %v", body)
			})
			t.Run("membership ended by the host", func(t *testing.T) {
				// The host removes a membership its own way: the next
				// refresh finds the user gone and revokes the family.
				tok := lcAuthorize(t, base, w.other, w.bystanderEmail, w.org)
				db, _, err := openDB(t.Context(), w.db, 1)
				require.NoError(t, err)
				defer db.Close()
				_, err = db.ExecContext(t.Context(), "DELETE FROM memberships WHERE user_id = $1", w.bystander)
				require.NoError(t, err)
				lcRefused(t, base, tok.refresh, "a refresh token of a former member")
				assert.Equal(t, http.StatusUnauthorized, lcAPI(t, base, w.org, tok.access), "the refused refresh revoked the family")
			})
			t.Run("bad flags", func(t *testing.T) {
				for _, tc := range []struct {
					args []string
					want string
				}{
					{[]string{"user", "remove", "--org", w.org}, "--id is required"},
					{[]string{"user", "remove", "--id", w.user}, "--org is required"},
					{[]string{"user", "remove", "--id", "nope", "--org", w.org}, "not a user id"},
					{[]string{"user", "delete", "--id", "nope"}, "not a user id"},
					{[]string{"user", "remove", "--id", w.bystander, "--org", "0b000000-0000-4000-8000-00000000dead"}, "not found"},
				} {
					_, err := runCommand(t, nil, append(append([]string{"admin"}, tc.args...), "--database-url", w.db)...)
					assert.ErrorContains(t, err, tc.want, "%v", tc.args)
				}
			})
		})
	}
}

// A family lives --refresh-max-age from its code exchange, however often
// it is refreshed.
func TestRefreshMaxAgeEndToEnd(t *testing.T) {
	t.Parallel()
	const maxAge = 3 * time.Second
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			w := lcSetUp(t, b.url(t))
			base := lcServe(t, w, "--refresh-max-age", maxAge.String())
			started := time.Now()
			status, body := lcExchange(t, base, w.app, lcConsent(t, base, w.app, w.email, w.org))
			require.Equal(t, http.StatusOK, status, body)
			assert.LessOrEqual(t, body["expires_in"], 3.0, "the access token ends with its family")
			status, body = lcRefresh(t, base, body["refresh_token"].(string))
			require.Equal(t, http.StatusOK, status, body)
			refresh := body["refresh_token"].(string)
			time.Sleep(time.Until(started.Add(maxAge + time.Second)))
			status, body = lcRefresh(t, base, refresh)
			assert.Equal(t, http.StatusBadRequest, status, body)
			assert.Equal(t, "invalid_grant", body["error"])
			assert.Contains(t, body["error_description"], "maximum age")
		})
	}
}

// Codes are checked before they are spent, introspection answers a client
// about its own tokens only, and every token names its grant.
func TestCodesIntrospectionAndGrantsEndToEnd(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			w := lcSetUp(t, b.url(t))
			base := lcServe(t, w)

			t.Run("another client can neither spend nor revoke a user's code", func(t *testing.T) {
				g := lcConsent(t, base, w.app, w.email, w.org)
				status, body := lcExchange(t, base, w.other, g)
				assert.Equal(t, http.StatusBadRequest, status, body)
				assert.Equal(t, "invalid_grant", body["error"])
				status, body = lcExchange(t, base, w.app, g)
				require.Equal(t, http.StatusOK, status, "the code is still good for its own client: %v", body)
				tok := lcTokens{body["access_token"].(string), body["refresh_token"].(string)}

				status, body = lcExchange(t, base, w.other, g)
				assert.Equal(t, "invalid_grant", body["error"], status)
				assert.Equal(t, http.StatusOK, lcAPI(t, base, w.org, tok.access), "another client's replay revoked nothing")
				status, body = lcExchange(t, base, w.app, g)
				assert.Equal(t, "invalid_grant", body["error"], status)
				assert.Equal(t, http.StatusUnauthorized, lcAPI(t, base, w.org, tok.access), "its own client's replay revokes")
			})
			t.Run("concurrent exchanges of one code: exactly one wins", func(t *testing.T) {
				g := lcConsent(t, base, w.app, w.email, w.org)
				statuses := make([]int, 10)
				var wg sync.WaitGroup
				for i := range statuses {
					wg.Go(func() { statuses[i], _ = lcExchange(t, base, w.app, g) })
				}
				wg.Wait()
				won := 0
				for _, s := range statuses {
					if s == http.StatusOK {
						won++
					} else {
						assert.Equal(t, http.StatusBadRequest, s)
					}
				}
				assert.Equal(t, 1, won, "%v", statuses)
			})
			t.Run("introspection is confined to the client's tokens", func(t *testing.T) {
				tok := lcAuthorize(t, base, w.app, w.email, w.org)
				introspect := func(app lcApp, token string) map[string]any {
					res, body := postForm(t, base+oauth.PathIntrospect, url.Values{"token": {token}}, app.id, app.secret)
					require.Equal(t, http.StatusOK, res.StatusCode, body)
					return body
				}
				for _, token := range []string{tok.access, tok.refresh} {
					assert.Equal(t, true, introspect(w.app, token)["active"])
					assert.Equal(t, map[string]any{"active": false}, introspect(w.other, token))
				}
			})
			t.Run("every token names its grant", func(t *testing.T) {
				tok := lcAuthorize(t, base, w.app, w.email, w.org)
				code := claimsOf(t, tok.access)
				assert.Equal(t, "authorization_code", code["oauth_grant_type"])
				assert.NotContains(t, code, "oauth_branch_ids")
				res, body := postForm(t, base+oauth.PathToken, url.Values{"grant_type": {"client_credentials"}}, w.app.id, w.app.secret)
				require.Equal(t, http.StatusOK, res.StatusCode, body)
				cc := claimsOf(t, body["access_token"].(string))
				assert.Equal(t, "client_credentials", cc["oauth_grant_type"])
				assert.Equal(t, []any{w.branch}, cc["oauth_branch_ids"])
				assert.Equal(t, "Fleet Board", cc["oauth_app_name"])
			})
		})
	}
}
