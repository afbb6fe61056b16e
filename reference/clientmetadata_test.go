package main

import (
	"crypto/x509"
	"encoding/json"
	"html"
	"io"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"

	"github.com/waybillhq/waybill/oauth"
)

// cimdTimeout is the fetch timeout of the client metadata documents in
// these tests: short, so that the slow document fails fast.
const cimdTimeout = time.Second

// cimdHookOnce sets clientMetadataTestHook once for the package.
var cimdHookOnce sync.Once

// cimdDocServer is an httptest TLS server on loopback that serves the
// client metadata documents of these tests and counts their requests.
type cimdDocServer struct {
	*httptest.Server
	mu   sync.Mutex
	hits map[string]int
}

// newCIMDDocServer starts the document server. Its documents:
//
//	/agent.json      valid: "Acme Agent", rvRedirect, svc:vehicles:read
//	/huge.json       valid but for 1 MiB of padding
//	/slow.json       no answer within cimdTimeout
//	/redirect.json   a 302 to /agent.json
//	/not-json.json   HTML
//	/mismatch.json   the document of /agent.json
//	/secret.json     token_endpoint_auth_method client_secret_basic
//
// The reference server trusts its certificate through
// clientMetadataTestHook (every httptest TLS server has the same one).
func newCIMDDocServer(t *testing.T) *cimdDocServer {
	t.Helper()
	s := &cimdDocServer{hits: map[string]int{}}
	stop := make(chan struct{})
	s.Server = httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.mu.Lock()
		s.hits[r.URL.Path]++
		s.mu.Unlock()
		doc := map[string]any{
			"client_id": s.URL + r.URL.Path, "client_name": "Acme Agent", "redirect_uris": []string{rvRedirect},
			"token_endpoint_auth_method": "none", "grant_types": []string{"authorization_code", "refresh_token"},
			"response_types": []string{"code"}, "scope": "svc:vehicles:read",
		}
		switch r.URL.Path {
		case "/agent.json":
		case "/huge.json":
			doc["padding"] = strings.Repeat("x", 1<<20)
		case "/slow.json":
			select {
			case <-stop:
			case <-r.Context().Done():
			}
			return
		case "/redirect.json":
			http.Redirect(w, r, "/agent.json", http.StatusFound)
			return
		case "/not-json.json":
			w.Header().Set("Content-Type", "text/html")
			_, _ = io.WriteString(w, "<html><body>Acme Agent</body></html>")
			return
		case "/mismatch.json":
			doc["client_id"] = s.URL + "/agent.json"
		case "/secret.json":
			doc["token_endpoint_auth_method"] = "client_secret_basic"
		default:
			http.NotFound(w, r)
			return
		}
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "max-age=3600")
		_ = json.NewEncoder(w).Encode(doc)
	}))
	t.Cleanup(func() { close(stop); s.Close() })
	cimdHookOnce.Do(func() {
		roots := x509.NewCertPool()
		roots.AddCert(s.Certificate())
		clientMetadataTestHook = func(d *oauth.ClientMetadataDocuments) {
			d.RootCAs, d.Timeout = roots, cimdTimeout
		}
	})
	return s
}

func (s *cimdDocServer) count(path string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.hits[path]
}

// cimdConsentPage signs c's user in for authURL in a new browser and
// returns the consent page it ends on.
func cimdConsentPage(t *testing.T, base, authURL string, c rvTenant) string {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	browser := &http.Client{Jar: jar}
	res, err := browser.Get(authURL)
	require.NoError(t, err)
	b, err := io.ReadAll(res.Body)
	res.Body.Close()
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode, string(b))
	login := url.Values{}
	for _, m := range rvHiddenInput.FindAllStringSubmatch(string(b), -1) {
		login.Set(m[1], html.UnescapeString(m[2]))
	}
	login.Set("email", c.email)
	login.Set("password", c.password)
	res, err = browser.PostForm(base+oauth.PathLogin, login)
	require.NoError(t, err)
	defer res.Body.Close()
	b, err = io.ReadAll(res.Body)
	require.NoError(t, err)
	require.Equal(t, http.StatusOK, res.StatusCode, string(b))
	return string(b)
}

// cimdStored counts what the token service stored for clientID: codes,
// consents, refresh tokens.
func cimdStored(t *testing.T, dbURL, clientID string) int {
	t.Helper()
	db, _, err := openDB(t.Context(), dbURL, 1)
	require.NoError(t, err)
	defer db.Close()
	n := 0
	for _, table := range []string{"oauth_codes", "oauth_grants", "oauth_refresh_tokens"} {
		n += count(t, db, "SELECT count(*) FROM "+table+" WHERE client_id = $1", clientID)
	}
	return n
}

// TestClientMetadataDocuments drives a client that nobody registered,
// whose client_id is the URL of its metadata document on an httptest TLS
// server on loopback, through the server on SQLite and PostgreSQL with
// golang.org/x/oauth2: the metadata announces the feature; the consent
// page names the client and its host; the code flow with PKCE, refresh
// with rotation, the API, revocation by client_id and the connected apps
// all know it by its URL; it may not introspect. Documents that are huge,
// slow, a redirect, not JSON, for another client_id, or for a client with
// a secret, and an http:// client_id, are each an error page at the
// authorization endpoint and invalid_client at the token endpoint, and
// nothing is stored. Without --webhook-allow-private the loopback document
// is refused without being fetched.
func TestClientMetadataDocuments(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			db := b.url(t)
			c := newRVTenant(t, db)
			docs := newCIMDDocServer(t)
			clientID := docs.URL + "/agent.json"
			host := strings.TrimPrefix(docs.URL, "https://")

			base, _, stop := startRun(t, []string{"serve", "--addr", "127.0.0.1:0", "--database-url", db,
				"--client-metadata-documents", "--webhook-allow-private"}, env(nil))
			defer func() { require.NoError(t, stop()) }()
			res, meta := doJSON(t, mustRequest(t, http.MethodGet, base+oauth.PathMetadata))
			require.Equal(t, http.StatusOK, res.StatusCode)
			assert.Equal(t, true, meta["client_id_metadata_document_supported"])

			conf := &oauth2.Config{
				ClientID: clientID, RedirectURL: rvRedirect, Scopes: []string{"svc:vehicles:read"},
				Endpoint: oauth2.Endpoint{AuthURL: base + oauth.PathAuthorize, TokenURL: base + oauth.PathToken, AuthStyle: oauth2.AuthStyleInParams},
			}
			pkce := oauth2.GenerateVerifier()
			authURL := conf.AuthCodeURL("cimd-state", oauth2.S256ChallengeOption(pkce))
			consent := cimdConsentPage(t, base, authURL, c)
			assert.Contains(t, consent, "<strong>Acme Agent</strong> ("+host+") wants to use Waybill")
			assert.Contains(t, consent, "is the name this application gives itself; Waybill has not checked it")

			agent := c
			agent.clientID, agent.secret = clientID, ""
			tok, err := conf.Exchange(t.Context(), rvConsent(t, base, authURL, agent), oauth2.VerifierOption(pkce))
			require.NoError(t, err)
			require.NotEmpty(t, tok.RefreshToken)
			assert.Equal(t, clientID, claimsOf(t, tok.AccessToken)["oauth_client_id"])
			assert.Equal(t, http.StatusOK, rlVehicles(t, base, c.org, tok.AccessToken).status)
			assert.Equal(t, 1, docs.count("/agent.json"), "fetched once, then cached")

			refreshed, err := conf.TokenSource(t.Context(), &oauth2.Token{RefreshToken: tok.RefreshToken}).Token()
			require.NoError(t, err)
			require.NotEqual(t, tok.RefreshToken, refreshed.RefreshToken, "rotated")
			assert.Equal(t, http.StatusOK, rlVehicles(t, base, c.org, refreshed.AccessToken).status)

			res, body := postForm(t, base+oauth.PathIntrospect, url.Values{"token": {refreshed.AccessToken}, "client_id": {clientID}}, "", "")
			assert.Equal(t, http.StatusUnauthorized, res.StatusCode, body)
			assert.Equal(t, "invalid_client", body["error"], "a public client may not introspect")
			res, body = postForm(t, base+oauth.PathIntrospect, url.Values{"token": {refreshed.AccessToken}}, c.clientID, c.secret)
			require.Equal(t, http.StatusOK, res.StatusCode, body)
			assert.Equal(t, false, body["active"], "another client's token")
			res, body = postForm(t, base+oauth.PathToken, url.Values{"grant_type": {"client_credentials"}, "client_id": {clientID}}, "", "")
			assert.Equal(t, "unauthorized_client", body["error"], "%d", res.StatusCode)
			res, body = postForm(t, base+oauth.PathToken, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {refreshed.RefreshToken}}, clientID, "guess")
			assert.Equal(t, http.StatusUnauthorized, res.StatusCode, body)
			assert.Equal(t, "invalid_client", body["error"], "a secret sent with a public client")

			res, body = postJSON(t, base+oauth.PathUserToken+"?grant_type=password", map[string]any{"email": c.email, "password": c.password}, "")
			require.Equal(t, http.StatusOK, res.StatusCode, body)
			admin := body["access_token"].(string)
			res, body = caCall(t, http.MethodGet, base+caPath(c.org), admin)
			require.Equal(t, http.StatusOK, res.StatusCode, body)
			entry := caEntries(t, body["data"].([]any))[[2]string{clientID, "authorization_code"}]
			require.NotNil(t, entry, "connected apps list the client by its URL: %v", body)
			assert.Equal(t, "Acme Agent", entry["name"])

			res, body = postForm(t, base+oauth.PathRevoke, url.Values{"token": {refreshed.RefreshToken}, "client_id": {clientID}}, "", "")
			require.Equal(t, http.StatusOK, res.StatusCode, body)
			assert.Equal(t, http.StatusUnauthorized, rlVehicles(t, base, c.org, refreshed.AccessToken).status, "revoked by client_id")

			fresh, err := conf.Exchange(t.Context(), rvConsent(t, base, authURL, agent), oauth2.VerifierOption(pkce))
			require.NoError(t, err)
			res, body = caCall(t, http.MethodDelete, base+caPath(c.org)+"/"+url.PathEscape(clientID), admin)
			require.Equal(t, http.StatusOK, res.StatusCode, body)
			assert.Equal(t, clientID, body["data"].(map[string]any)["client_id"])
			res, body = postForm(t, base+oauth.PathToken, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {fresh.RefreshToken}, "client_id": {clientID}}, "", "")
			assert.Equal(t, "invalid_grant", body["error"], "disconnected: %d", res.StatusCode)

			t.Run("bad documents", func(t *testing.T) {
				browser := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
				tests := []struct {
					name, clientID, says string
				}{
					{"huge", docs.URL + "/huge.json", "larger than 5120 bytes"},
					{"slow", docs.URL + "/slow.json", "not served within " + cimdTimeout.String()},
					{"redirect", docs.URL + "/redirect.json", "answered 302, a redirect, which is not followed"},
					{"not JSON", docs.URL + "/not-json.json", "not as JSON"},
					{"mismatched client_id", docs.URL + "/mismatch.json", "is not the URL it is served at"},
					{"auth method other than none", docs.URL + "/secret.json", "must be &#34;none&#34;, not &#34;client_secret_basic&#34;"},
					{"missing document", docs.URL + "/gone.json", "answered 404 instead of 200"},
					{"http client_id", "http://" + host + "/agent.json", "unknown client_id"},
				}
				for _, tt := range tests {
					t.Run(tt.name, func(t *testing.T) {
						bad := *conf
						bad.ClientID = tt.clientID
						res, err := browser.Get(bad.AuthCodeURL("cimd-state", oauth2.S256ChallengeOption(pkce)))
						require.NoError(t, err)
						page, err := io.ReadAll(res.Body)
						res.Body.Close()
						require.NoError(t, err)
						assert.Equal(t, http.StatusBadRequest, res.StatusCode)
						assert.Empty(t, res.Header.Get("Location"), "never a redirect")
						assert.Contains(t, string(page), "This authorization link is not valid")
						assert.Contains(t, string(page), tt.says)

						res, body := postForm(t, base+oauth.PathToken, url.Values{"grant_type": {"authorization_code"}, "client_id": {tt.clientID},
							"code": {"some-code"}, "redirect_uri": {rvRedirect}, "code_verifier": {pkce}}, "", "")
						assert.Equal(t, http.StatusUnauthorized, res.StatusCode, body)
						assert.Equal(t, "invalid_client", body["error"])
						if tt.name != "http client_id" {
							assert.Contains(t, body["error_description"], strings.ReplaceAll(tt.says, "&#34;", `"`))
						}
						assert.Zero(t, cimdStored(t, db, tt.clientID), "nothing stored")
					})
				}
				assert.Equal(t, 1, docs.count("/agent.json"), "the redirect was not followed")
			})

			t.Run("private address refused", func(t *testing.T) {
				guarded, _, stop := startRun(t, []string{"serve", "--addr", "127.0.0.1:0", "--database-url", db, "--client-metadata-documents"}, env(nil))
				defer func() { require.NoError(t, stop()) }()
				fetched := docs.count("/agent.json")
				res, err := http.Get(strings.Replace(authURL, base, guarded, 1))
				require.NoError(t, err)
				page, err := io.ReadAll(res.Body)
				res.Body.Close()
				require.NoError(t, err)
				assert.Equal(t, http.StatusBadRequest, res.StatusCode)
				assert.Contains(t, string(page), "the URL&#39;s host is a loopback address")
				res, body := postForm(t, guarded+oauth.PathToken, url.Values{"grant_type": {"authorization_code"}, "client_id": {clientID},
					"code": {"some-code"}, "redirect_uri": {rvRedirect}, "code_verifier": {pkce}}, "", "")
				assert.Equal(t, http.StatusUnauthorized, res.StatusCode, body)
				assert.Equal(t, "invalid_client", body["error"])
				res, body = postForm(t, guarded+oauth.PathRevoke, url.Values{"token": {"x"}, "client_id": {clientID}}, "", "")
				assert.Equal(t, http.StatusUnauthorized, res.StatusCode, body)
				assert.Equal(t, "invalid_client", body["error"])
				assert.Contains(t, body["error_description"], "loopback address")
				assert.Equal(t, fetched, docs.count("/agent.json"), "nothing was fetched")
			})
		})
	}
}
