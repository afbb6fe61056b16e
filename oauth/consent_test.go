package oauth

// Tests of the browser side of the authorization-code flow (consent.go),
// in package oauth because its handlers are unexported. They run against
// in-memory test doubles of this package's own Store and Directory
// interfaces; the SQL store has its own conformance suite (oauthtest).

import (
	"context"
	"errors"
	"html"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/oauth/bearer"
)

// consentStore is an in-memory test double of Store, for the consent flow:
// it keeps apps, codes and grants. The refresh-token methods are not
// reached by this flow and fail.
type consentStore struct {
	mu     sync.Mutex
	apps   map[string]*App
	codes  []*Code
	grants []*Grant
}

var errNotInDouble = errors.New("consent test store: not implemented")

func (m *consentStore) App(_ context.Context, clientID string) (*App, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if a, ok := m.apps[clientID]; ok {
		c := *a
		return &c, nil
	}
	return nil, ErrNotFound
}

func (m *consentStore) CreateApp(_ context.Context, app *App) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	if _, ok := m.apps[app.ClientID]; ok {
		return ErrDuplicate
	}
	m.apps[app.ClientID] = app
	return nil
}

func (m *consentStore) SetSecretHash(context.Context, string, []byte) error { return errNotInDouble }

func (m *consentStore) SaveCode(_ context.Context, c *Code) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.codes = append(m.codes, c)
	return nil
}

func (m *consentStore) RedeemCode(_ context.Context, hash []byte, familyID string, _ time.Time) (*Code, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.codes {
		if string(c.Hash) == string(hash) {
			if c.FamilyID != "" {
				return c, ErrSpent
			}
			c.FamilyID = familyID
			return c, nil
		}
	}
	return nil, ErrNotFound
}

func (m *consentStore) Code(_ context.Context, hash []byte) (*Code, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.codes {
		if string(c.Hash) == string(hash) {
			found := *c
			return &found, nil
		}
	}
	return nil, ErrNotFound
}

func (m *consentStore) SaveRefreshToken(context.Context, *RefreshToken) error { return nil }

func (m *consentStore) RotateRefreshToken(context.Context, []byte, []byte, time.Time, time.Time) (*RefreshToken, error) {
	return nil, errNotInDouble
}

func (m *consentStore) RefreshToken(context.Context, []byte) (*RefreshToken, error) {
	return nil, errNotInDouble
}

func (m *consentStore) RevokeFamily(context.Context, string, time.Time) error { return errNotInDouble }

func (m *consentStore) RevokeUserFamilies(context.Context, string, string, time.Time) (int, error) {
	return 0, errNotInDouble
}

func (m *consentStore) FamilyRevoked(context.Context, string) (bool, error) {
	return false, nil // the flow revokes nothing
}

func (m *consentStore) RevokeClientFamilies(context.Context, string, time.Time) (int, error) {
	return 0, errNotInDouble
}

func (m *consentStore) SaveGrant(_ context.Context, g *Grant) error {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.grants = append(m.grants, g)
	return nil
}

// codeCount returns how many codes were issued.
func (m *consentStore) codeCount() int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return len(m.codes)
}

// savedGrants returns the consents recorded.
func (m *consentStore) savedGrants() []Grant {
	m.mu.Lock()
	defer m.mu.Unlock()
	var out []Grant
	for _, g := range m.grants {
		out = append(out, *g)
	}
	return out
}

// setAppName renames the app with clientID.
func (m *consentStore) setAppName(clientID, name string) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.apps[clientID].Name = name
}

// codeFor returns the stored code whose value is code, or nil.
func (m *consentStore) codeFor(code string) *Code {
	m.mu.Lock()
	defer m.mu.Unlock()
	for _, c := range m.codes {
		if secretMatches(code, c.Hash) {
			return c
		}
	}
	return nil
}

// consentDirectory is an in-memory test double of Directory.
type consentDirectory struct {
	users       map[string]consentUser // by email
	memberships map[string][]Membership
}

type consentUser struct {
	User
	password string
}

func (d *consentDirectory) Authenticate(_ context.Context, email, password string) (User, error) {
	u, ok := d.users[email]
	if !ok || u.password != password {
		return User{}, ErrBadCredentials
	}
	return u.User, nil
}

func (d *consentDirectory) Memberships(_ context.Context, userID string) ([]Membership, error) {
	return d.memberships[userID], nil
}

func (d *consentDirectory) Branches(context.Context, string) ([]string, error) { return nil, nil }

// User makes the double a UserLookup, for the claims of OpenID Connect.
func (d *consentDirectory) User(_ context.Context, userID string) (User, error) {
	for _, u := range d.users {
		if u.ID == userID {
			return u.User, nil
		}
	}
	return User{}, ErrNotFound
}

// The fixture's people, organizations and app.
const (
	consentAlice    = "user-alice"
	consentBob      = "user-bob"   // belongs to no organization
	consentCarol    = "user-carol" // belongs to Globex only
	consentAcme     = "org-acme"
	consentGlobex   = "org-globex"
	consentInitech  = "org-initech" // no member of the fixture belongs to it
	consentPassword = "correct horse battery staple"
	consentClientID = "client-route-planner"
	consentAppName  = "Route Planner"
	consentRedirect = "https://app.example/callback"
	// consentRedirectQuery is a registered redirect URI with its own query.
	consentRedirectQuery = "https://app.example/cb?tenant=7"
	consentVerifier      = "dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk"
)

// consentFixture is a Server with test doubles, on an httptest server.
type consentFixture struct {
	srv   *Server
	store *consentStore
	dir   *consentDirectory
	http  *httptest.Server
	// mux serves http; tests may add handlers to it.
	mux   *http.ServeMux
	clock *consentClock
}

// consentClock is a settable clock, safe for the server's goroutines.
type consentClock struct {
	mu  sync.Mutex
	now time.Time
}

func (c *consentClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *consentClock) Advance(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

// newConsentFixture returns a fixture whose server configure may change
// before it starts serving.
func newConsentFixture(t *testing.T, configure ...func(*Server)) *consentFixture {
	t.Helper()
	redirectURIs := []string{consentRedirect, consentRedirectQuery}
	keys, err := bearer.NewKeySet(bearer.Key{ID: "k1", Secret: []byte("0123456789abcdef0123456789abcdef")})
	require.NoError(t, err)
	f := &consentFixture{
		store: &consentStore{apps: map[string]*App{}},
		dir: &consentDirectory{
			users: map[string]consentUser{
				"alice@example.com": {User{ID: consentAlice, Email: "alice@example.com"}, consentPassword},
				"bob@example.com":   {User{ID: consentBob, Email: "bob@example.com"}, consentPassword},
				"carol@example.com": {User{ID: consentCarol, Email: "carol@example.com"}, consentPassword},
			},
			memberships: map[string][]Membership{
				consentAlice: {{OrganizationID: consentAcme, Name: "Acme Logistics"}, {OrganizationID: consentGlobex, Name: "Globex Freight"}},
				consentCarol: {{OrganizationID: consentGlobex, Name: "Globex Freight"}},
			},
		},
		clock: &consentClock{now: time.Date(2026, 3, 1, 9, 0, 0, 0, time.UTC)},
	}
	f.store.apps[consentClientID] = &App{
		ID: "app-1", ClientID: consentClientID, Name: consentAppName, OrganizationID: consentAcme,
		Scopes: []string{"svc:orders:read", "svc:shipments:write", "custom.scope"}, RedirectURIs: redirectURIs,
	}
	f.srv = &Server{
		Issuer: "https://tms.example", Keys: keys, Store: f.store, Directory: f.dir,
		Now: f.clock.Now, Logger: slog.New(slog.DiscardHandler),
	}
	for _, c := range configure {
		c(f.srv)
	}
	f.mux = http.NewServeMux()
	f.srv.mountConsent(f.mux, f.srv.paths())
	f.http = httptest.NewServer(f.mux)
	t.Cleanup(f.http.Close)
	return f
}

// client returns a browser-like client: a cookie jar, and redirects not
// followed, so that every test sees each answer.
func (f *consentFixture) client(t *testing.T) *http.Client {
	t.Helper()
	jar, err := cookiejar.New(nil)
	require.NoError(t, err)
	return &http.Client{
		Jar:           jar,
		CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse },
	}
}

// defaultPaths are the paths of a Server whose Paths are zero.
var defaultPaths = Paths{}.WithDefaults()

// validRequest is an authorization request that CheckAuthorization
// accepts.
func validRequest() AuthorizationRequest {
	return AuthorizationRequest{
		ClientID: consentClientID, RedirectURI: consentRedirect, ResponseType: "code",
		CodeChallenge: S256Challenge(consentVerifier), CodeChallengeMethod: "S256",
		Scope: "svc:orders:read svc:shipments:write", State: "xyz-state",
	}
}

// page is a response with its body read.
type page struct {
	*http.Response
	body string
}

func (p page) location(t *testing.T) *url.URL {
	t.Helper()
	loc, err := p.Location()
	require.NoError(t, err, "no Location header; status %d", p.StatusCode)
	return loc
}

func (f *consentFixture) get(t *testing.T, c *http.Client, path string) page {
	t.Helper()
	return f.do(t, c, http.MethodGet, path, nil)
}

func (f *consentFixture) post(t *testing.T, c *http.Client, path string, form url.Values) page {
	t.Helper()
	return f.do(t, c, http.MethodPost, path, form)
}

func (f *consentFixture) do(t *testing.T, c *http.Client, method, path string, form url.Values) page {
	t.Helper()
	var body io.Reader
	if form != nil {
		body = strings.NewReader(form.Encode())
	}
	req, err := http.NewRequestWithContext(t.Context(), method, f.http.URL+path, body)
	require.NoError(t, err)
	if form != nil {
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	}
	resp, err := c.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	b, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	return page{resp, string(b)}
}

// fieldOf returns the value of the form field name on p.
func fieldOf(t *testing.T, p page, name string) string {
	t.Helper()
	m := regexp.MustCompile(`name="` + regexp.QuoteMeta(name) + `" value="([^"]*)"`).FindStringSubmatch(p.body)
	require.NotNil(t, m, "no %s field on the page:\n%s", name, p.body)
	return html.UnescapeString(m[1])
}

// csrfOf returns the CSRF token of the form on p.
func csrfOf(t *testing.T, p page) string {
	t.Helper()
	return fieldOf(t, p, "csrf_token")
}

// signIn signs c in through the login form, coming back to ret.
func (f *consentFixture) signIn(t *testing.T, c *http.Client, email, password, ret string) page {
	t.Helper()
	form := f.get(t, c, defaultPaths.loginURL(ret))
	require.Equal(t, http.StatusOK, form.StatusCode)
	return f.post(t, c, PathLogin, url.Values{
		"csrf_token": {csrfOf(t, form)}, "email": {email}, "password": {password}, "return": {ret},
	})
}

// consentForm signs c in as alice (unless it already is) and returns the
// consent page's form for req, as the browser would post it.
func (f *consentFixture) consentForm(t *testing.T, c *http.Client, req AuthorizationRequest) url.Values {
	t.Helper()
	p := f.get(t, c, defaultPaths.authorizeURL(req))
	if p.StatusCode == http.StatusSeeOther {
		f.signIn(t, c, "alice@example.com", consentPassword, defaultPaths.authorizeURL(req))
		p = f.get(t, c, defaultPaths.authorizeURL(req))
	}
	require.Equal(t, http.StatusOK, p.StatusCode, p.body)
	form := req.values()
	form.Set("csrf_token", csrfOf(t, p))
	return form
}

func TestAuthorizeErrorPage(t *testing.T) {
	// Unknown clients and redirect URIs that are not registered exactly are
	// shown a page, never sent anywhere.
	tests := []struct {
		name   string
		change func(*AuthorizationRequest)
		says   string
	}{
		{"unknown client", func(r *AuthorizationRequest) { r.ClientID = "no-such-client" }, "unknown client_id"},
		{"missing client", func(r *AuthorizationRequest) { r.ClientID = "" }, "client_id is required"},
		{"missing redirect URI", func(r *AuthorizationRequest) { r.RedirectURI = "" }, "redirect_uri is required"},
		{"other path", func(r *AuthorizationRequest) { r.RedirectURI = "https://app.example/other" }, "not registered"},
		{"trailing slash", func(r *AuthorizationRequest) { r.RedirectURI = consentRedirect + "/" }, "not registered"},
		{"added query", func(r *AuthorizationRequest) { r.RedirectURI = consentRedirect + "?x=1" }, "not registered"},
		{"other query", func(r *AuthorizationRequest) { r.RedirectURI = "https://app.example/cb?tenant=8" }, "not registered"},
		{"query dropped", func(r *AuthorizationRequest) { r.RedirectURI = "https://app.example/cb" }, "not registered"},
		{"http instead of https", func(r *AuthorizationRequest) { r.RedirectURI = "http://app.example/callback" }, "not registered"},
		{"other host", func(r *AuthorizationRequest) { r.RedirectURI = "https://evil.example/callback" }, "not registered"},
		{"unknown client with a bad request too", func(r *AuthorizationRequest) {
			r.ClientID, r.CodeChallengeMethod = "no-such-client", "plain"
		}, "unknown client_id"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newConsentFixture(t)
			req := validRequest()
			tt.change(&req)
			p := f.get(t, f.client(t), defaultPaths.authorizeURL(req))
			assert.Equal(t, http.StatusBadRequest, p.StatusCode)
			assert.Empty(t, p.Header.Get("Location"))
			assert.Equal(t, "text/html; charset=utf-8", p.Header.Get("Content-Type"))
			assert.Contains(t, p.body, "This authorization link is not valid")
			assert.Contains(t, p.body, tt.says)
			assert.Contains(t, p.body, "you were not sent back")
		})
	}
}

func TestAuthorizeErrorRedirect(t *testing.T) {
	// Every other error goes back to the app, with the state.
	tests := []struct {
		name   string
		change func(*AuthorizationRequest)
		code   string
	}{
		{"plain challenge", func(r *AuthorizationRequest) {
			r.CodeChallengeMethod, r.CodeChallenge = "plain", consentVerifier
		}, "invalid_request"},
		{"missing challenge", func(r *AuthorizationRequest) { r.CodeChallenge = "" }, "invalid_request"},
		{"missing challenge method", func(r *AuthorizationRequest) { r.CodeChallengeMethod = "" }, "invalid_request"},
		{"malformed challenge", func(r *AuthorizationRequest) { r.CodeChallenge = "short" }, "invalid_request"},
		{"token response type", func(r *AuthorizationRequest) { r.ResponseType = "token" }, "unsupported_response_type"},
		{"missing response type", func(r *AuthorizationRequest) { r.ResponseType = "" }, "unsupported_response_type"},
		{"scope beyond the app", func(r *AuthorizationRequest) { r.Scope = "svc:orders:read svc:invoices:write" }, "invalid_scope"},
		{"missing scope", func(r *AuthorizationRequest) { r.Scope = "" }, "invalid_scope"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newConsentFixture(t)
			req := validRequest()
			tt.change(&req)
			p := f.get(t, f.client(t), defaultPaths.authorizeURL(req))
			require.Equal(t, http.StatusFound, p.StatusCode, p.body)
			loc := p.location(t)
			assert.Equal(t, consentRedirect, loc.Scheme+"://"+loc.Host+loc.Path)
			q := loc.Query()
			assert.Equal(t, tt.code, q.Get("error"))
			assert.NotEmpty(t, q.Get("error_description"))
			assert.Equal(t, "xyz-state", q.Get("state"))
			assert.Equal(t, "https://tms.example", q.Get("iss"))
			assert.Empty(t, q.Get("code"))
			assert.Equal(t, "no-store", p.Header.Get("Cache-Control"))
		})
	}

	t.Run("registered query kept", func(t *testing.T) {
		f := newConsentFixture(t)
		req := validRequest()
		req.RedirectURI, req.ResponseType = consentRedirectQuery, "token"
		p := f.get(t, f.client(t), defaultPaths.authorizeURL(req))
		require.Equal(t, http.StatusFound, p.StatusCode)
		loc := p.Header.Get("Location")
		assert.True(t, strings.HasPrefix(loc, consentRedirectQuery+"&"), loc)
		q := p.location(t).Query()
		assert.Equal(t, "7", q.Get("tenant"))
		assert.Equal(t, "unsupported_response_type", q.Get("error"))
		assert.Equal(t, "xyz-state", q.Get("state"))
	})

	t.Run("no state", func(t *testing.T) {
		f := newConsentFixture(t)
		req := validRequest()
		req.State, req.Scope = "", "svc:nothing:read"
		p := f.get(t, f.client(t), defaultPaths.authorizeURL(req))
		require.Equal(t, http.StatusFound, p.StatusCode)
		q := p.location(t).Query()
		assert.Equal(t, "invalid_scope", q.Get("error"))
		assert.False(t, q.Has("state"))
	})
}

func TestAuthorizeLoginRedirect(t *testing.T) {
	f := newConsentFixture(t)
	req := validRequest()
	p := f.get(t, f.client(t), defaultPaths.authorizeURL(req)+"&unknown=ignored")
	require.Equal(t, http.StatusSeeOther, p.StatusCode)
	loc, err := url.Parse(p.Header.Get("Location"))
	require.NoError(t, err)
	assert.Equal(t, PathLogin, loc.Path)
	assert.Empty(t, loc.Host, "a local redirect")
	assert.Equal(t, defaultPaths.authorizeURL(req), loc.Query().Get("return"), "the request comes back, without unknown parameters")

	login := f.get(t, f.client(t), loc.String())
	require.Equal(t, http.StatusOK, login.StatusCode)
	assert.Contains(t, login.body, `<label for="email">Email</label>`)
	assert.Contains(t, login.body, `<label for="password">Password</label>`)
	assert.Contains(t, login.body, `>Sign in</button>`)
	assert.Contains(t, login.body, "to continue to <strong>Route Planner</strong>")
	assert.Equal(t, defaultPaths.authorizeURL(req), fieldOf(t, login, "return"))
	assert.Contains(t, login.Header.Get("Content-Security-Policy"), "form-action 'self' https://app.example;")
	csrf := login.Header.Values("Set-Cookie")
	require.Len(t, csrf, 1)
	assert.Contains(t, csrf[0], "waybill_csrf=")
}

func TestLoginWrongCredentials(t *testing.T) {
	tests := []struct{ name, email, password string }{
		{"wrong password", "alice@example.com", "wrong"},
		{"unknown email", "nobody@example.com", consentPassword},
		{"empty password", "alice@example.com", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newConsentFixture(t)
			c := f.client(t)
			ret := defaultPaths.authorizeURL(validRequest())
			p := f.signIn(t, c, tt.email, tt.password, ret)
			assert.Equal(t, http.StatusUnauthorized, p.StatusCode)
			assert.Empty(t, p.Header.Get("Location"))
			for _, ck := range p.Cookies() {
				assert.NotEqual(t, sessionCookieName, ck.Name, "no session after a failed sign-in")
			}
			if tt.password != "" {
				// The same words for an unknown email and a wrong password.
				assert.Contains(t, p.body, "The email or password is not correct.")
			}
			assert.Contains(t, p.body, `value="`+tt.email+`"`, "the email stays filled in")
			assert.Contains(t, p.body, `name="csrf_token"`, "the form can be sent again")
			// Still not signed in.
			again := f.get(t, c, ret)
			assert.Equal(t, http.StatusSeeOther, again.StatusCode)
		})
	}
}

func TestLoginCSRF(t *testing.T) {
	f := newConsentFixture(t)
	creds := url.Values{"email": {"alice@example.com"}, "password": {consentPassword}}

	t.Run("no cookie, no token", func(t *testing.T) {
		p := f.post(t, f.client(t), PathLogin, creds)
		assert.Equal(t, http.StatusForbidden, p.StatusCode)
		assert.Contains(t, p.Header.Get("Content-Type"), "text/html")
		assert.Empty(t, p.Cookies())
	})
	t.Run("token of another browser", func(t *testing.T) {
		other := f.client(t)
		token := csrfOf(t, f.get(t, other, PathLogin))
		c := f.client(t)
		f.get(t, c, PathLogin) // this browser's own cookie
		form := url.Values{"csrf_token": {token}}
		for k, v := range creds {
			form[k] = v
		}
		p := f.post(t, c, PathLogin, form)
		assert.Equal(t, http.StatusForbidden, p.StatusCode)
		assert.Empty(t, p.Cookies())
	})
	t.Run("cookie without token", func(t *testing.T) {
		c := f.client(t)
		f.get(t, c, PathLogin)
		p := f.post(t, c, PathLogin, creds)
		assert.Equal(t, http.StatusForbidden, p.StatusCode)
	})
	t.Run("cookie kept across loads", func(t *testing.T) {
		c := f.client(t)
		first := csrfOf(t, f.get(t, c, PathLogin))
		second := f.get(t, c, PathLogin)
		assert.Equal(t, first, csrfOf(t, second), "two open sign-in tabs both work")
		assert.Empty(t, second.Header.Values("Set-Cookie"))
	})
}

func TestLoginReturn(t *testing.T) {
	authorize := defaultPaths.authorizeURL(validRequest())
	tests := []struct {
		name, ret string
		want      string // Location after sign-in; "" for the signed-in page
	}{
		{"authorize", authorize, authorize},
		{"authorize, extra parameters dropped", authorize + "&next=https://evil.example", authorize},
		{"none", "", ""},
		{"absolute URL", "https://evil.example", ""},
		{"absolute authorize URL elsewhere", "https://evil.example" + authorize, ""},
		{"scheme-relative", "//evil.example" + authorize, ""},
		{"backslash", `/\evil.example`, ""},
		{"javascript", "javascript:alert(1)", ""},
		{"other local path", "/auth/v1/oauth/apps", ""},
		{"authorize prefix", PathAuthorize + "x?client_id=a", ""},
		{"dot segments", PathAuthorize + "/../../../evil", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newConsentFixture(t)
			c := f.client(t)
			login := f.get(t, c, defaultPaths.loginURL(tt.ret))
			if tt.want == "" {
				assert.NotContains(t, login.body, `name="return"`, "an unsafe return is not carried")
			}
			p := f.post(t, c, PathLogin, url.Values{
				"csrf_token": {csrfOf(t, login)}, "email": {"alice@example.com"},
				"password": {consentPassword}, "return": {tt.ret},
			})
			if tt.want == "" {
				assert.Equal(t, http.StatusOK, p.StatusCode)
				assert.Empty(t, p.Header.Get("Location"))
				assert.Contains(t, p.body, "You are signed in")
			} else {
				assert.Equal(t, http.StatusSeeOther, p.StatusCode)
				assert.Equal(t, tt.want, p.Header.Get("Location"))
			}
			assert.NotEmpty(t, p.Cookies(), "signed in either way")
		})
	}
}

func TestLoginSessionCookie(t *testing.T) {
	for _, secure := range []bool{false, true} {
		t.Run(map[bool]string{false: "plain", true: "secure"}[secure], func(t *testing.T) {
			f := newConsentFixture(t, func(s *Server) { s.SecureCookies = secure })
			c := f.client(t)
			login := f.get(t, c, PathLogin)
			csrfCookies := login.Cookies()
			require.Len(t, csrfCookies, 1)
			assert.Equal(t, loginCSRFCookieName, csrfCookies[0].Name)
			assert.True(t, csrfCookies[0].HttpOnly)
			assert.Equal(t, http.SameSiteLaxMode, csrfCookies[0].SameSite)
			assert.Equal(t, secure, csrfCookies[0].Secure)

			p := f.post(t, c, PathLogin, url.Values{
				"csrf_token": {csrfOf(t, login)}, "email": {"alice@example.com"}, "password": {consentPassword},
			})
			require.Equal(t, http.StatusOK, p.StatusCode)
			cookies := p.Cookies()
			require.Len(t, cookies, 1)
			ck := cookies[0]
			assert.Equal(t, sessionCookieName, ck.Name)
			assert.True(t, ck.HttpOnly)
			assert.Equal(t, http.SameSiteLaxMode, ck.SameSite)
			assert.Equal(t, "/auth/v1/", ck.Path)
			assert.Equal(t, 12*60*60, ck.MaxAge)
			assert.Equal(t, secure, ck.Secure)
			assert.NotContains(t, ck.Value, consentPassword)
		})
	}
}

func TestConsentSessionTampered(t *testing.T) {
	f := newConsentFixture(t)
	good := f.srv.sealSession(session{UserID: consentAlice, Email: "alice@example.com", Expires: f.clock.Now().Add(time.Hour).Unix(), Nonce: "n"})
	payload, sig, _ := strings.Cut(good, ".")
	bob := f.srv.sealSession(session{UserID: consentBob, Expires: f.clock.Now().Add(time.Hour).Unix(), Nonce: "n"})
	bobPayload, _, _ := strings.Cut(bob, ".")
	otherKeys, err := bearer.NewKeySet(bearer.Key{ID: "k2", Secret: []byte("another key, 32 bytes long......")})
	require.NoError(t, err)
	other := (&Server{Keys: otherKeys, Now: f.srv.Now}).sealSession(session{UserID: consentAlice, Expires: f.clock.Now().Add(time.Hour).Unix(), Nonce: "n"})
	expired := f.srv.sealSession(session{UserID: consentAlice, Expires: f.clock.Now().Unix(), Nonce: "n"})

	tests := []struct {
		name, value string
		valid       bool
	}{
		{"genuine", good, true},
		{"payload swapped", bobPayload + "." + sig, false},
		{"signature flipped", payload + "." + flipLast(sig), false},
		{"no signature", payload, false},
		{"empty signature", payload + ".", false},
		{"signed with another key", other, false},
		{"expired", expired, false},
		{"garbage", "not-a-session", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, ok := f.srv.openSession(tt.value)
			assert.Equal(t, tt.valid, ok)

			req, err := http.NewRequestWithContext(t.Context(), http.MethodGet, f.http.URL+defaultPaths.authorizeURL(validRequest()), nil)
			require.NoError(t, err)
			req.AddCookie(&http.Cookie{Name: sessionCookieName, Value: tt.value})
			resp, err := f.client(t).Do(req)
			require.NoError(t, err)
			resp.Body.Close()
			if tt.valid {
				assert.Equal(t, http.StatusOK, resp.StatusCode, "consent page")
			} else {
				assert.Equal(t, http.StatusSeeOther, resp.StatusCode, "sent to sign in")
				assert.True(t, strings.HasPrefix(resp.Header.Get("Location"), PathLogin+"?"))
			}
		})
	}

	t.Run("expires after 12 hours", func(t *testing.T) {
		f := newConsentFixture(t)
		c := f.client(t)
		f.signIn(t, c, "alice@example.com", consentPassword, "")
		assert.Equal(t, http.StatusOK, f.get(t, c, defaultPaths.authorizeURL(validRequest())).StatusCode)
		f.clock.Advance(12*time.Hour + time.Second)
		assert.Equal(t, http.StatusSeeOther, f.get(t, c, defaultPaths.authorizeURL(validRequest())).StatusCode)
	})
}

// flipLast changes the last character of a base64url string.
func flipLast(s string) string {
	last := s[len(s)-1]
	repl := byte('A')
	if last == 'A' {
		repl = 'B'
	}
	return s[:len(s)-1] + string(repl)
}

func TestConsentPage(t *testing.T) {
	f := newConsentFixture(t)
	c := f.client(t)
	req := validRequest()
	req.Scope = "svc:orders:read svc:shipments:write custom.scope"
	f.signIn(t, c, "alice@example.com", consentPassword, defaultPaths.authorizeURL(req))
	p := f.get(t, c, defaultPaths.authorizeURL(req))
	require.Equal(t, http.StatusOK, p.StatusCode, p.body)

	for _, want := range []string{
		"<strong>Route Planner</strong> wants to use Waybill on your behalf",
		"<span>Read orders</span><code>svc:orders:read</code>",
		"<span>Create, change and delete shipments</span><code>svc:shipments:write</code>",
		"<li><code>custom.scope</code></li>", // no words beyond its name
		`<label for="organization">Organization</label>`,
		`<select id="organization" name="organization_id" required>`,
		`<option value="" disabled selected>Choose an organization</option>`,
		`<option value="org-acme">Acme Logistics</option>`,
		`<option value="org-globex">Globex Freight</option>`,
		`<button type="submit" name="decision" value="approve" class="primary">Approve</button>`,
		`<button type="submit" name="decision" value="deny" class="secondary" formnovalidate>Deny</button>`,
		`Signed in as alice@example.com`,
		`goes back to app.example`,
		`name="csrf_token" value="`,
	} {
		assert.Contains(t, p.body, want)
	}
	for k := range req.values() {
		assert.Equal(t, req.values().Get(k), fieldOf(t, p, k), "hidden field %s", k)
	}
	assert.NotContains(t, p.body, "<script")

	h := p.Header
	assert.Equal(t, "text/html; charset=utf-8", h.Get("Content-Type"))
	assert.Equal(t, "no-store", h.Get("Cache-Control"))
	assert.Equal(t, "DENY", h.Get("X-Frame-Options"))
	assert.Equal(t, "no-referrer", h.Get("Referrer-Policy"))
	assert.Equal(t, "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; "+
		"form-action 'self' https://app.example; frame-ancestors 'none'", h.Get("Content-Security-Policy"))

	t.Run("one organization is chosen in advance", func(t *testing.T) {
		c := f.client(t)
		f.signIn(t, c, "carol@example.com", consentPassword, "")
		p := f.get(t, c, defaultPaths.authorizeURL(req))
		assert.NotContains(t, p.body, "Choose an organization")
		assert.Contains(t, p.body, `<option value="org-globex">Globex Freight</option>`)
		assert.NotContains(t, p.body, "Acme")
	})
	t.Run("custom describer", func(t *testing.T) {
		f := newConsentFixture(t, func(s *Server) { s.DescribeScope = func(s string) string { return "Do " + s } })
		c := f.client(t)
		f.signIn(t, c, "alice@example.com", consentPassword, "")
		p := f.get(t, c, defaultPaths.authorizeURL(req))
		assert.Contains(t, p.body, "<span>Do svc:orders:read</span>")
	})
	t.Run("markup in the app name is escaped", func(t *testing.T) {
		f.store.setAppName(consentClientID, `<img src=x onerror=alert(1)>`)
		defer f.store.setAppName(consentClientID, consentAppName)
		p := f.get(t, c, defaultPaths.authorizeURL(req))
		assert.NotContains(t, p.body, "<img")
		assert.Contains(t, p.body, "&lt;img src=x onerror=alert(1)&gt;")
	})
}

func TestConsentDecision(t *testing.T) {
	tests := []struct {
		name   string
		change func(form url.Values)
		status int
		// code is the error code expected on the redirect, "" for a code.
		code string
		says string // for a page
	}{
		{name: "approve", change: func(url.Values) {}, status: http.StatusSeeOther},
		{name: "approve the other organization", change: func(v url.Values) { v.Set("organization_id", consentGlobex) }, status: http.StatusSeeOther},
		{name: "deny", change: func(v url.Values) { v.Set("decision", "deny") }, status: http.StatusSeeOther, code: "access_denied"},
		{name: "deny without organization", change: func(v url.Values) {
			v.Set("decision", "deny")
			v.Del("organization_id")
		}, status: http.StatusSeeOther, code: "access_denied"},
		{name: "no CSRF token", change: func(v url.Values) { v.Del("csrf_token") }, status: http.StatusForbidden, says: "could not be verified"},
		{name: "wrong CSRF token", change: func(v url.Values) { v.Set("csrf_token", "AAAA") }, status: http.StatusForbidden, says: "could not be verified"},
		{name: "organization of others", change: func(v url.Values) { v.Set("organization_id", consentInitech) }, status: http.StatusBadRequest, says: "not one you belong to"},
		{name: "no organization", change: func(v url.Values) { v.Del("organization_id") }, status: http.StatusBadRequest, says: "Choose the organization"},
		{name: "no decision", change: func(v url.Values) { v.Del("decision") }, status: http.StatusBadRequest, says: "neither Approve nor Deny"},
		{name: "redirect URI changed", change: func(v url.Values) { v.Set("redirect_uri", "https://evil.example/callback") }, status: http.StatusBadRequest, says: "not registered"},
		{name: "client changed", change: func(v url.Values) { v.Set("client_id", "no-such-client") }, status: http.StatusBadRequest, says: "unknown client_id"},
		{name: "scope widened", change: func(v url.Values) { v.Set("scope", "svc:orders:read svc:invoices:read") }, status: http.StatusSeeOther, code: "invalid_scope"},
		{name: "plain challenge", change: func(v url.Values) { v.Set("code_challenge_method", "plain") }, status: http.StatusSeeOther, code: "invalid_request"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newConsentFixture(t)
			c := f.client(t)
			req := validRequest()
			form := f.consentForm(t, c, req)
			form.Set("decision", "approve")
			form.Set("organization_id", consentAcme)
			tt.change(form)
			p := f.post(t, c, PathConsent, form)
			require.Equal(t, tt.status, p.StatusCode, p.body)
			if tt.status != http.StatusSeeOther {
				assert.Empty(t, p.Header.Get("Location"))
				assert.Contains(t, p.body, tt.says)
				assert.Zero(t, f.store.codeCount(), "no code issued")
				return
			}
			loc := p.location(t)
			assert.Equal(t, consentRedirect, loc.Scheme+"://"+loc.Host+loc.Path)
			q := loc.Query()
			assert.Equal(t, "xyz-state", q.Get("state"))
			assert.Equal(t, "https://tms.example", q.Get("iss"))
			if tt.code != "" {
				assert.Equal(t, tt.code, q.Get("error"))
				assert.NotEmpty(t, q.Get("error_description"))
				assert.False(t, q.Has("code"))
				assert.Zero(t, f.store.codeCount(), "no code issued")
				return
			}
			assert.False(t, q.Has("error"))
			code := q.Get("code")
			require.NotEmpty(t, code)
			stored := f.store.codeFor(code)
			require.NotNil(t, stored, "the code is stored, by its hash")
			assert.Equal(t, consentAlice, stored.UserID)
			assert.Equal(t, form.Get("organization_id"), stored.OrganizationID)
			assert.Equal(t, []string{"svc:orders:read", "svc:shipments:write"}, stored.Scopes)
			assert.Equal(t, consentClientID, stored.ClientID)
			assert.Equal(t, consentRedirect, stored.RedirectURI)
			assert.Equal(t, S256Challenge(consentVerifier), stored.Challenge)
			assert.Equal(t, f.clock.Now().Add(DefaultCodeTTL), stored.ExpiresAt)
			grants := f.store.savedGrants()
			require.Len(t, grants, 1)
			assert.Equal(t, form.Get("organization_id"), grants[0].OrganizationID)
			assert.Equal(t, consentAlice, grants[0].UserID)

			// The code is good for a token of that user and organization.
			app, err := f.store.App(t.Context(), consentClientID)
			require.NoError(t, err)
			tok, err := f.srv.ExchangeCode(t.Context(), app, code, consentRedirect, consentVerifier, "")
			require.NoError(t, err)
			assert.Equal(t, consentAlice, tok.Claims.Subject)
			assert.Equal(t, form.Get("organization_id"), tok.Claims.OrganizationID)
		})
	}

	t.Run("without session", func(t *testing.T) {
		f := newConsentFixture(t)
		form := f.consentForm(t, f.client(t), validRequest())
		form.Set("decision", "approve")
		form.Set("organization_id", consentAcme)
		p := f.post(t, f.client(t), PathConsent, form) // a browser without the cookie
		assert.Equal(t, http.StatusForbidden, p.StatusCode)
		assert.Contains(t, p.body, "no longer signed in")
		assert.Zero(t, f.store.codeCount())
	})
	t.Run("CSRF token of another session", func(t *testing.T) {
		f := newConsentFixture(t)
		victim := f.client(t)
		f.consentForm(t, victim, validRequest())
		attacker := f.consentForm(t, f.client(t), validRequest())
		attacker.Set("decision", "approve")
		attacker.Set("organization_id", consentAcme)
		p := f.post(t, victim, PathConsent, attacker)
		assert.Equal(t, http.StatusForbidden, p.StatusCode)
		assert.Zero(t, f.store.codeCount())
	})
	t.Run("registered query kept", func(t *testing.T) {
		f := newConsentFixture(t)
		c := f.client(t)
		req := validRequest()
		req.RedirectURI = consentRedirectQuery
		form := f.consentForm(t, c, req)
		form.Set("decision", "approve")
		form.Set("organization_id", consentAcme)
		p := f.post(t, c, PathConsent, form)
		require.Equal(t, http.StatusSeeOther, p.StatusCode)
		assert.True(t, strings.HasPrefix(p.Header.Get("Location"), consentRedirectQuery+"&"))
		q := p.location(t).Query()
		assert.Equal(t, "7", q.Get("tenant"))
		assert.NotEmpty(t, q.Get("code"))
	})
	t.Run("asked at every authorization", func(t *testing.T) {
		f := newConsentFixture(t)
		c := f.client(t)
		for range 2 {
			form := f.consentForm(t, c, validRequest())
			form.Set("decision", "approve")
			form.Set("organization_id", consentAcme)
			require.Equal(t, http.StatusSeeOther, f.post(t, c, PathConsent, form).StatusCode)
		}
		assert.Equal(t, 2, f.store.codeCount())
	})
}

func TestConsentNoOrganization(t *testing.T) {
	f := newConsentFixture(t)
	c := f.client(t)
	req := validRequest()
	f.signIn(t, c, "bob@example.com", consentPassword, defaultPaths.authorizeURL(req))
	p := f.get(t, c, defaultPaths.authorizeURL(req))
	require.Equal(t, http.StatusOK, p.StatusCode)
	assert.Contains(t, p.body, "does not belong to any organization")
	assert.NotContains(t, p.body, "<select")
	assert.NotContains(t, p.body, `value="approve"`)

	form := req.values()
	form.Set("csrf_token", csrfOf(t, p))
	form.Set("decision", "deny")
	resp := f.post(t, c, PathConsent, form)
	require.Equal(t, http.StatusSeeOther, resp.StatusCode)
	q := resp.location(t).Query()
	assert.Equal(t, "access_denied", q.Get("error"))
	assert.Equal(t, "xyz-state", q.Get("state"))

	// Approving anyway, with an organization of others, is refused.
	form.Set("decision", "approve")
	form.Set("organization_id", consentAcme)
	resp = f.post(t, c, PathConsent, form)
	assert.Equal(t, http.StatusBadRequest, resp.StatusCode)
	assert.Zero(t, f.store.codeCount())
}

func TestLoginLocalAuthorizeURL(t *testing.T) {
	req := validRequest()
	tests := []struct {
		raw, want string
		ok        bool
	}{
		{defaultPaths.authorizeURL(req), defaultPaths.authorizeURL(req), true},
		{PathAuthorize, PathAuthorize + "?", true},
		{PathAuthorize + "?client_id=a&x=y#frag", PathAuthorize + "?client_id=a", true},
		{"", "", false},
		{"https://evil.example", "", false},
		{"//evil.example" + PathAuthorize, "", false},
		{`/\evil.example`, "", false},
		{PathAuthorize + "/x", "", false},
		{PathAuthorize + "%2F..", "", false},
		{PathAuthorize + "?client_id=%zz", "", false},
	}
	for _, tt := range tests {
		t.Run(tt.raw, func(t *testing.T) {
			got, ok := defaultPaths.localAuthorizeURL(tt.raw)
			assert.Equal(t, tt.ok, ok)
			assert.Equal(t, tt.want, got)
			if ok {
				u, err := url.Parse(got)
				require.NoError(t, err)
				assert.Empty(t, u.Host)
				assert.Equal(t, PathAuthorize, u.Path)
			}
		})
	}
}

func TestConsentAppendSource(t *testing.T) {
	tests := []struct{ uri, want string }{
		{"https://app.example/callback?x=1", "https://app.example"},
		{"http://127.0.0.1:8080/cb", "http://127.0.0.1:8080"},
		{"com.example.app:/oauth", "com.example.app:"},
		{"https://[::1]:8443/cb", "https://[::1]:8443"},
		{"not a uri", ""},
	}
	for _, tt := range tests {
		t.Run(tt.uri, func(t *testing.T) {
			got := appendSource([]string{"'self'"}, tt.uri)
			want := []string{"'self'"}
			if tt.want != "" {
				want = append(want, tt.want)
			}
			assert.Equal(t, want, got)
			assert.False(t, slices.ContainsFunc(got, func(s string) bool { return strings.ContainsAny(s, "; ,") }))
		})
	}
}

// The consent page of a client that registered itself (Dynamic Client
// Registration) says that its name is its own claim and names where the
// answer goes; that of an app an admin registered does not.
func TestConsentOfSelfRegisteredClient(t *testing.T) {
	t.Parallel()
	f := newConsentFixture(t)
	registered := *f.store.apps[consentClientID]
	registered.ClientID, registered.OrganizationID, registered.RegistrationTokenHash = "self-registered", "", hashSecret("registration token")
	f.store.apps[registered.ClientID] = &registered
	c := f.client(t)
	req := validRequest()
	f.signIn(t, c, "alice@example.com", consentPassword, defaultPaths.authorizeURL(req))
	for clientID, says := range map[string]bool{consentClientID: false, registered.ClientID: true} {
		req.ClientID = clientID
		p := f.get(t, c, defaultPaths.authorizeURL(req))
		require.Equal(t, http.StatusOK, p.StatusCode, p.body)
		note := "registered itself with this server, under the name it gives itself; Waybill has not checked it. Your answer goes to app.example: approve only if you trust app.example."
		if says {
			assert.Contains(t, p.body, note, clientID)
		} else {
			assert.NotContains(t, p.body, "registered itself", clientID)
		}
	}
}
