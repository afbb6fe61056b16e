package oauth

// Tests of OpenID Connect (openid.go): the identity scopes, the OpenID
// Connect parameters of the authorization request, prompt and max_age in
// the browser flow, the id token, UserInfo and the discovery document, on
// the consent flow's test doubles.

import (
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/oauth/bearer"
)

// withAlg makes the fixture's server sign with a new key of alg.
func withAlg(t *testing.T, alg string) func(*Server) {
	t.Helper()
	key, err := bearer.GenerateKeyFor(alg)
	require.NoError(t, err)
	keys, err := bearer.NewKeySet(key)
	require.NoError(t, err)
	return func(s *Server) { s.Keys = keys }
}

// oidcRequest is validRequest asking for scopes with a nonce.
func oidcRequest(scope string) AuthorizationRequest {
	req := validRequest()
	req.Scope, req.Nonce = scope, "n-0S6_WzA2Mj"
	return req
}

func TestOpenIDCheckAuthorization(t *testing.T) {
	tests := []struct {
		name   string
		alg    string
		change func(*AuthorizationRequest)
		code   string // "" when accepted
		scopes []string
	}{
		{"openid with HS256", bearer.HS256, func(r *AuthorizationRequest) { r.Scope = "openid svc:orders:read" }, "invalid_scope", nil},
		{"email with HS256 is an ordinary scope", bearer.HS256, func(r *AuthorizationRequest) { r.Scope = "email" }, "invalid_scope", nil},
		{"identity scopes without the app's list", bearer.ES256, func(r *AuthorizationRequest) { r.Scope = "openid profile email svc:orders:read" }, "",
			[]string{"openid", "profile", "email", "svc:orders:read"}},
		{"openid alone", bearer.EdDSA, func(r *AuthorizationRequest) { r.Scope = "openid" }, "", []string{"openid"}},
		{"openid does not widen the app", bearer.ES256, func(r *AuthorizationRequest) { r.Scope = "openid svc:invoices:write" }, "invalid_scope", nil},
		{"nonce of 512 bytes", bearer.ES256, func(r *AuthorizationRequest) { r.Scope, r.Nonce = "openid", strings.Repeat("n", 512) }, "", []string{"openid"}},
		{"nonce of 513 bytes", bearer.ES256, func(r *AuthorizationRequest) { r.Scope, r.Nonce = "openid", strings.Repeat("n", 513) }, "invalid_request", nil},
		{"prompt none with login", bearer.ES256, func(r *AuthorizationRequest) { r.Prompt = "none login" }, "invalid_request", nil},
		{"prompt login consent", bearer.ES256, func(r *AuthorizationRequest) { r.Prompt = "login consent" }, "", []string{"svc:orders:read", "svc:shipments:write"}},
		{"unknown prompt ignored", bearer.ES256, func(r *AuthorizationRequest) { r.Prompt = "create" }, "", []string{"svc:orders:read", "svc:shipments:write"}},
		{"max_age negative", bearer.ES256, func(r *AuthorizationRequest) { r.MaxAge = "-1" }, "invalid_request", nil},
		{"max_age not a number", bearer.ES256, func(r *AuthorizationRequest) { r.MaxAge = "1h" }, "invalid_request", nil},
		{"max_age zero", bearer.ES256, func(r *AuthorizationRequest) { r.MaxAge = "0" }, "", []string{"svc:orders:read", "svc:shipments:write"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newConsentFixture(t, withAlg(t, tt.alg))
			req := validRequest()
			tt.change(&req)
			app, scopes, err := f.srv.CheckAuthorization(t.Context(), req)
			require.NotNil(t, app)
			if tt.code == "" {
				require.NoError(t, err)
				assert.Equal(t, tt.scopes, scopes)
				return
			}
			require.Error(t, err)
			// Through the browser: redirected back like every other error.
			p := f.get(t, f.client(t), defaultPaths.authorizeURL(req))
			require.Equal(t, http.StatusFound, p.StatusCode, p.body)
			q := p.location(t).Query()
			assert.Equal(t, tt.code, q.Get("error"))
			assert.Equal(t, "xyz-state", q.Get("state"))
		})
	}
}

// TestOpenIDClientCredentials: the identity scopes never reach a
// client-credentials token, even when the app's list names them.
func TestOpenIDClientCredentials(t *testing.T) {
	f := newConsentFixture(t, withAlg(t, bearer.ES256))
	app := &App{ID: "app-cc", ClientID: "cc", OrganizationID: consentAcme, Scopes: []string{"openid", "email", "svc:orders:read"}, BranchIDs: []string{}}
	tok, err := f.srv.ClientCredentials(t.Context(), app, "", "")
	require.NoError(t, err)
	assert.Equal(t, []string{"svc:orders:read"}, tok.Scopes)
	_, err = f.srv.ClientCredentials(t.Context(), app, "openid svc:orders:read", "")
	assert.ErrorContains(t, err, "authorization-code flow")
}

// approve runs the browser flow for req on c (signing alice in when c has
// no session) and returns the code.
func (f *consentFixture) approve(t *testing.T, c *http.Client, req AuthorizationRequest) string {
	t.Helper()
	form := f.consentForm(t, c, req)
	form.Set("decision", "approve")
	form.Set("organization_id", consentAcme)
	p := f.post(t, c, PathConsent, form)
	require.Equal(t, http.StatusSeeOther, p.StatusCode, p.body)
	code := p.location(t).Query().Get("code")
	require.NotEmpty(t, code, p.Header.Get("Location"))
	return code
}

func TestPrompt(t *testing.T) {
	type want struct {
		status int
		error  string // of a redirect to the app
		login  bool   // a redirect to the sign-in page
	}
	tests := []struct {
		name     string
		signedIn bool
		age      time.Duration // of the sign-in when the request comes
		prompt   string
		maxAge   string
		want     want
	}{
		{"none, no session", false, 0, "none", "", want{http.StatusFound, codeLoginRequired, false}},
		{"none, signed in", true, 0, "none", "", want{http.StatusFound, codeConsentRequired, false}},
		{"none, sign-in older than max_age", true, 2 * time.Hour, "none", "3600", want{http.StatusFound, codeLoginRequired, false}},
		{"none, sign-in within max_age", true, 30 * time.Minute, "none", "3600", want{http.StatusFound, codeConsentRequired, false}},
		{"login, signed in", true, 0, "login", "", want{http.StatusSeeOther, "", true}},
		{"login consent, signed in", true, 0, "login consent", "", want{http.StatusSeeOther, "", true}},
		{"max_age 0, signed in", true, 0, "", "0", want{http.StatusSeeOther, "", true}},
		{"sign-in older than max_age", true, 2 * time.Hour, "", "3600", want{http.StatusSeeOther, "", true}},
		{"sign-in within max_age", true, 30 * time.Minute, "", "3600", want{http.StatusOK, "", false}},
		{"consent, signed in", true, 0, "consent select_account", "", want{http.StatusOK, "", false}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newConsentFixture(t, withAlg(t, bearer.ES256))
			c := f.client(t)
			req := oidcRequest("openid svc:orders:read")
			if tt.signedIn {
				f.signIn(t, c, "alice@example.com", consentPassword, "")
				f.clock.Advance(tt.age)
			}
			req.Prompt, req.MaxAge = tt.prompt, tt.maxAge
			p := f.get(t, c, defaultPaths.authorizeURL(req))
			require.Equal(t, tt.want.status, p.StatusCode, p.body)
			switch {
			case tt.want.error != "":
				q := p.location(t).Query()
				assert.Equal(t, tt.want.error, q.Get("error"))
				assert.Equal(t, "xyz-state", q.Get("state"))
				assert.Zero(t, f.store.codeCount())
			case tt.want.login:
				loc := p.location(t)
				require.Equal(t, PathLogin, loc.Path)
				ret := loc.Query().Get("return")
				back, err := url.Parse(ret)
				require.NoError(t, err)
				assert.NotContains(t, strings.Fields(back.Query().Get("prompt")), "login", "the way back does not ask again")
				assert.False(t, back.Query().Has("max_age"), "the sign-in satisfies max_age")
				assert.Equal(t, req.Nonce, back.Query().Get("nonce"), "the nonce comes back")
				// A fresh sign-in goes on to consent: no loop.
				p = f.signIn(t, c, "alice@example.com", consentPassword, ret)
				require.Equal(t, http.StatusSeeOther, p.StatusCode, p.body)
				p = f.get(t, c, p.Header.Get("Location"))
				require.Equal(t, http.StatusOK, p.StatusCode, p.body)
				assert.Equal(t, req.Nonce, fieldOf(t, p, "nonce"), "the consent form carries the nonce")
			}
		})
	}
}

// parseIDToken verifies an id token of f's server and returns its claims
// and header.
func parseIDToken(t *testing.T, f *consentFixture, raw string) (jwt.MapClaims, map[string]any) {
	t.Helper()
	claims := jwt.MapClaims{}
	tok, err := jwt.ParseWithClaims(raw, claims, func(tok *jwt.Token) (any, error) {
		vk, err := f.srv.Keys.VerificationKey(context.Background(), tok.Header["kid"].(string))
		return vk.Key, err
	}, jwt.WithValidMethods([]string{f.srv.Keys.Alg()}), jwt.WithAudience(consentClientID), jwt.WithIssuer(f.srv.Issuer),
		jwt.WithTimeFunc(f.clock.Now), jwt.WithIssuedAt())
	require.NoError(t, err)
	return claims, tok.Header
}

func TestIDToken(t *testing.T) {
	tests := []struct {
		name  string
		alg   string
		scope string
		nonce string
		want  map[string]any // claims beyond the ones every id token has; nil: no id token
		none  []string       // claims it must not have
	}{
		{"openid alone", bearer.ES256, "openid svc:orders:read", "", map[string]any{}, []string{"nonce", "email", "name", "email_verified"}},
		{"nonce and email", bearer.ES256, "openid email", "n-0S6_WzA2Mj", map[string]any{"nonce": "n-0S6_WzA2Mj", "email": "alice@example.com"}, []string{"name", "email_verified"}},
		{"profile without a name", bearer.EdDSA, "openid profile", "abc", map[string]any{"nonce": "abc"}, []string{"name", "email"}},
		{"no openid: no id token", bearer.ES256, "svc:orders:read email", "abc", nil, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			f := newConsentFixture(t, withAlg(t, tt.alg))
			c := f.client(t)
			signedIn := f.clock.Now()
			f.signIn(t, c, "alice@example.com", consentPassword, "")
			f.clock.Advance(10 * time.Minute)
			req := oidcRequest(tt.scope)
			req.Nonce = tt.nonce
			code := f.approve(t, c, req)
			app, err := f.store.App(t.Context(), consentClientID)
			require.NoError(t, err)
			tok, err := f.srv.ExchangeCode(t.Context(), app, code, consentRedirect, consentVerifier, "")
			require.NoError(t, err)
			assert.Equal(t, ParseScope(tt.scope), tok.Scopes, "the identity scopes are granted like the others")
			if tt.want == nil {
				assert.Empty(t, tok.IDToken)
				return
			}
			require.NotEmpty(t, tok.IDToken)
			claims, header := parseIDToken(t, f, tok.IDToken)
			assert.Equal(t, "JWT", header["typ"])
			assert.Equal(t, tok.Claims.ExpiresAt, int64(claims["exp"].(float64)), "exp is the access token's")
			assert.Equal(t, f.clock.Now().Unix(), int64(claims["iat"].(float64)))
			assert.Equal(t, signedIn.Unix(), int64(claims["auth_time"].(float64)), "auth_time is the sign-in's")
			assert.Equal(t, consentAlice, claims["sub"])
			assert.Equal(t, consentClientID, claims["aud"], "aud is the client id, a string")
			sum := sha256.Sum256([]byte(tok.AccessToken))
			half := sum[:16]
			if tt.alg == bearer.EdDSA {
				sum := sha512.Sum512([]byte(tok.AccessToken))
				half = sum[:32]
			}
			assert.Equal(t, base64.RawURLEncoding.EncodeToString(half), claims["at_hash"])
			for k, v := range tt.want {
				assert.Equal(t, v, claims[k], k)
			}
			for _, k := range tt.none {
				assert.NotContains(t, claims, k)
			}
			body, err := json.Marshal(tokenResponse(tok))
			require.NoError(t, err)
			assert.Contains(t, string(body), `"id_token":"`+tok.IDToken+`"`)

			// The API refuses the id token as an access token.
			_, err = f.srv.verifier().Verify(t.Context(), tok.IDToken)
			assert.Error(t, err)
		})
	}
}

// TestSessionAuthTime: a session cookie made before the sign-in time was
// recorded counts as signed in sessionTTL before it expires.
func TestSessionAuthTime(t *testing.T) {
	f := newConsentFixture(t)
	now := f.clock.Now()
	fresh := f.srv.newSession(User{ID: consentAlice})
	assert.Equal(t, now.Unix(), fresh.authTime().Unix())
	old := session{UserID: consentAlice, Nonce: "n", Expires: now.Add(time.Hour).Unix()}
	opened, ok := f.srv.openSession(f.srv.sealSession(old))
	require.True(t, ok)
	assert.Equal(t, now.Add(time.Hour-sessionTTL).Unix(), opened.authTime().Unix())
}

func TestUserInfo(t *testing.T) {
	f := newConsentFixture(t, withAlg(t, bearer.ES256))
	handler := f.srv.Handler()
	c := f.client(t)
	exchange := func(scope string) *Token {
		code := f.approve(t, c, oidcRequest(scope))
		app, err := f.store.App(t.Context(), consentClientID)
		require.NoError(t, err)
		tok, err := f.srv.ExchangeCode(t.Context(), app, code, consentRedirect, consentVerifier, "")
		require.NoError(t, err)
		return tok
	}
	withEmail := exchange("openid email svc:orders:read")
	bare := exchange("openid")
	noOpenID := exchange("email svc:orders:read")
	cc, err := f.srv.Keys.Sign(&bearer.Claims{
		Issuer: f.srv.Issuer, Subject: "app-1", Audience: bearer.Audience, Role: bearer.Role, ID: "j",
		IssuedAt: f.clock.Now().Unix(), ExpiresAt: f.clock.Now().Add(time.Hour).Unix(), ClientID: consentClientID,
		Scopes: []string{"openid"}, BranchIDs: []string{}, Grant: bearer.GrantClientCredentials,
	})
	require.NoError(t, err)
	user, err := f.srv.Keys.Sign(&bearer.Claims{Issuer: f.srv.Issuer, Subject: consentAlice, Audience: bearer.Audience, Role: bearer.Role,
		ID: "u", IssuedAt: f.clock.Now().Unix(), ExpiresAt: f.clock.Now().Add(time.Hour).Unix()})
	require.NoError(t, err)

	tests := []struct {
		name, method, auth string
		status             int
		code               string
		challenge          string
		body               map[string]any
	}{
		{"email scope", http.MethodGet, "Bearer " + withEmail.AccessToken, 200, "", "", map[string]any{"sub": consentAlice, "email": "alice@example.com"}},
		{"by POST", http.MethodPost, "Bearer " + withEmail.AccessToken, 200, "", "", map[string]any{"sub": consentAlice, "email": "alice@example.com"}},
		{"openid alone", http.MethodGet, "Bearer " + bare.AccessToken, 200, "", "", map[string]any{"sub": consentAlice}},
		{"no token", http.MethodGet, "", 401, "unauthorized", `Bearer realm="tms.example"`, nil},
		{"basic", http.MethodGet, "Basic eDp5", 401, "unauthorized", `Bearer realm="tms.example"`, nil},
		{"malformed token", http.MethodGet, "Bearer not-a-token", 401, "invalid_token", `error="invalid_token"`, nil},
		{"the id token", http.MethodGet, "Bearer " + withEmail.IDToken, 401, "invalid_token", `error="invalid_token"`, nil},
		{"no openid", http.MethodGet, "Bearer " + noOpenID.AccessToken, 403, "insufficient_scope", `scope="openid"`, nil},
		{"client credentials", http.MethodGet, "Bearer " + cc, 403, "insufficient_scope", `error="insufficient_scope"`, nil},
		{"product user token", http.MethodGet, "Bearer " + user, 403, "insufficient_scope", `error="insufficient_scope"`, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := httptest.NewRequest(tt.method, PathUserInfo, nil)
			if tt.auth != "" {
				r.Header.Set("Authorization", tt.auth)
			}
			w := httptest.NewRecorder()
			handler.ServeHTTP(w, r)
			require.Equal(t, tt.status, w.Code, w.Body.String())
			assert.Equal(t, "no-store", w.Header().Get("Cache-Control"))
			var body map[string]any
			require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body))
			if tt.status == http.StatusOK {
				assert.Equal(t, tt.body, body)
				return
			}
			assert.Equal(t, tt.code, body["error"])
			assert.Contains(t, w.Header().Get("WWW-Authenticate"), tt.challenge)
		})
	}
}

// TestOpenIDDiscovery: the discovery document is the metadata with the
// fields of OpenID Connect, and 404 with HS256, as is UserInfo.
func TestOpenIDDiscovery(t *testing.T) {
	get := func(t *testing.T, s *Server, path string) (int, map[string]any) {
		t.Helper()
		w := httptest.NewRecorder()
		s.Handler().ServeHTTP(w, httptest.NewRequest(http.MethodGet, path, nil))
		var body map[string]any
		require.NoError(t, json.Unmarshal(w.Body.Bytes(), &body))
		return w.Code, body
	}
	for _, alg := range []string{bearer.ES256, bearer.EdDSA} {
		t.Run(alg, func(t *testing.T) {
			f := newConsentFixture(t, withAlg(t, alg), func(s *Server) { s.ScopesSupported = []string{"svc:orders:read", "email"} })
			status, doc := get(t, f.srv, PathOpenIDConfiguration)
			require.Equal(t, http.StatusOK, status)
			_, meta := get(t, f.srv, PathMetadata)
			assert.Equal(t, meta, doc, "one document")
			assert.Equal(t, "https://tms.example", doc["issuer"])
			assert.Equal(t, "https://tms.example"+PathUserInfo, doc["userinfo_endpoint"])
			assert.Equal(t, "https://tms.example"+PathJWKS, doc["jwks_uri"])
			assert.Equal(t, []any{alg}, doc["id_token_signing_alg_values_supported"])
			assert.Equal(t, []any{"public"}, doc["subject_types_supported"])
			assert.Equal(t, []any{"code"}, doc["response_types_supported"])
			assert.Equal(t, []any{"openid", "profile", "email", "svc:orders:read"}, doc["scopes_supported"])
			assert.Equal(t, false, doc["request_uri_parameter_supported"])
		})
	}
	t.Run(bearer.HS256, func(t *testing.T) {
		f := newConsentFixture(t)
		status, body := get(t, f.srv, PathOpenIDConfiguration)
		assert.Equal(t, http.StatusNotFound, status)
		assert.Equal(t, "not_found", body["error"])
		status, body = get(t, f.srv, PathUserInfo)
		assert.Equal(t, http.StatusNotFound, status)
		assert.Equal(t, "not_found", body["error"])
		_, meta := get(t, f.srv, PathMetadata)
		for _, k := range []string{"userinfo_endpoint", "id_token_signing_alg_values_supported", "jwks_uri", "scopes_supported"} {
			assert.NotContains(t, meta, k)
		}
	})
}

// The consent page puts the identity scopes in words, also when the
// host's DescribeScope does not know them.
func TestConsentIdentityScopes(t *testing.T) {
	f := newConsentFixture(t, withAlg(t, bearer.ES256), func(s *Server) { s.DescribeScope = func(sc string) string { return sc } })
	c := f.client(t)
	req := oidcRequest("openid profile email svc:orders:read")
	f.signIn(t, c, "alice@example.com", consentPassword, "")
	p := f.get(t, c, defaultPaths.authorizeURL(req))
	require.Equal(t, http.StatusOK, p.StatusCode, p.body)
	for _, words := range []string{"Know who you are", "See your name", "See your email address"} {
		assert.Contains(t, p.body, words)
	}
	assert.Equal(t, req.Nonce, fieldOf(t, p, "nonce"))
}
