package oauth_test

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/cookiejar"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/waybillhq/waybill/netguard"
	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/oauth/bearer"
)

// BenchmarkClientCredentialsHTTP is a client-credentials issuance through
// the HTTP handler on PostgreSQL: parse the form, authenticate the client
// (one SELECT and a constant-time hash compare), sign, encode.
func BenchmarkClientCredentialsHTTP(b *testing.B) {
	e := newBenchEnv(b)
	h := e.srv.Handler()
	body := url.Values{"grant_type": {"client_credentials"}}.Encode()
	b.ReportAllocs()
	for b.Loop() {
		req := httptest.NewRequest(http.MethodPost, oauth.PathToken, strings.NewReader(body))
		req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
		req.SetBasicAuth(e.app.ClientID, e.secret)
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		if rec.Code != http.StatusOK {
			b.Fatal(rec.Body.String())
		}
	}
}

// BenchmarkClientCredentialsFloor is the floor of that issuance: the same
// SELECT of the app by client id, through the same database/sql pool, and
// golang-jwt signing the same claims.
func BenchmarkClientCredentialsFloor(b *testing.B) {
	e := newBenchEnv(b)
	key, err := e.store.SigningKey(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	db := e.db
	b.ReportAllocs()
	for b.Loop() {
		var id, name, org, scopes, branches, redirects string
		var hash []byte
		var created time.Time
		var public bool
		var regHash []byte
		var method string
		err := db.QueryRowContext(context.Background(),
			`SELECT id, name, organization_id, scopes, branch_ids, redirect_uris, secret_hash, created_at, public,
				registration_token_hash, token_endpoint_auth_method FROM oauth_apps WHERE client_id = $1`,
			e.app.ClientID).Scan(&id, &name, &org, &scopes, &branches, &redirects, &hash, &created, &public, &regHash, &method)
		if err != nil {
			b.Fatal(err)
		}
		now := time.Now()
		tok := jwt.NewWithClaims(jwt.SigningMethodHS256, &bearer.Claims{
			Issuer: testIssuer, Subject: id, Audience: bearer.Audience, Role: bearer.Role,
			IssuedAt: now.Unix(), ExpiresAt: now.Add(time.Hour).Unix(), ID: "x",
			OrganizationID: org, ClientID: e.app.ClientID, Scopes: e.app.Scopes, BranchIDs: e.app.BranchIDs, AppName: name,
		})
		tok.Header["kid"] = key.ID
		if _, err := tok.SignedString(key.Secret); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkCodeExchangeHTTP is the authorization-code exchange through the
// HTTP handler on PostgreSQL, for a confidential client (HTTP Basic, its
// secret's hash compared), for a public one (client_id alone), and for a
// client of a metadata document (client_id the URL of its document, on an
// httptest TLS server, already in the cache, as it is for every step of a
// flow after the authorization request): load and redeem the code, check
// PKCE and the membership, save the refresh token, sign. Issuing each code
// (the consent's work) is not timed.
// benchClients registers, in e, a public client and the client of a
// metadata document (served by an httptest TLS server, its document already
// in the cache), beside e's confidential app.
func benchClients(b *testing.B, e *env) (public, document *oauth.App) {
	public, _, err := e.srv.RegisterApp(context.Background(), oauth.NewApp{
		OrganizationID: orgID, Name: "Desk Tool", Scopes: oauth.ParseScope(appScopes), RedirectURIs: []string{redirect}, Public: true,
	})
	if err != nil {
		b.Fatal(err)
	}
	var docURL string
	docs := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		w.Header().Set("Cache-Control", "max-age=3600")
		_ = json.NewEncoder(w).Encode(map[string]any{"client_id": docURL, "client_name": "Acme Agent",
			"redirect_uris": []string{redirect}, "token_endpoint_auth_method": "none", "scope": appScopes})
	}))
	b.Cleanup(docs.Close)
	docURL = docs.URL + "/agent.json"
	roots := x509.NewCertPool()
	roots.AddCert(docs.Certificate())
	e.srv.ScopesSupported = oauth.ParseScope(appScopes)
	e.srv.ClientMetadataDocuments = &oauth.ClientMetadataDocuments{Guard: netguard.Guard{AllowPrivate: true}, RootCAs: roots}
	if _, err := e.srv.ClientMetadataDocuments.Resolve(context.Background(), docURL); err != nil {
		b.Fatal(err)
	}
	return public, &oauth.App{ClientID: docURL}
}

func BenchmarkCodeExchangeHTTP(b *testing.B) {
	e := newBenchEnv(b)
	public, document := benchClients(b, e)
	h := e.srv.Handler()
	for _, c := range []struct {
		name   string
		app    *oauth.App
		secret string
	}{{"confidential", e.app, e.secret}, {"public", public, ""}, {"metadata-document", document, ""}} {
		b.Run(c.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				b.StopTimer()
				form := url.Values{"grant_type": {"authorization_code"}, "code": {e.issueCode(b, c.app, challenge, "svc:orders:read")},
					"redirect_uri": {redirect}, "code_verifier": {verifier}}
				if c.secret == "" {
					form.Set("client_id", c.app.ClientID)
				}
				req := httptest.NewRequest(http.MethodPost, oauth.PathToken, strings.NewReader(form.Encode()))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				if c.secret != "" {
					req.SetBasicAuth(c.app.ClientID, c.secret)
				}
				rec := httptest.NewRecorder()
				b.StartTimer()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK {
					b.Fatal(rec.Body.String())
				}
			}
		})
	}
}

// BenchmarkAuthorizationFlowHTTP is the whole authorization-code flow of a
// public client over HTTP on PostgreSQL, for a pre-registered client and
// for the client of a metadata document whose document is in the cache:
// GET the authorization endpoint (the consent page, for a browser signed
// in once before the loop), POST the consent form (the code), POST the
// token request (the tokens).
func BenchmarkAuthorizationFlowHTTP(b *testing.B) {
	e := newBenchEnv(b)
	public, document := benchClients(b, e)
	e.srv.Logger = slog.New(slog.DiscardHandler) // a line per consent
	for _, c := range []struct {
		name string
		app  *oauth.App
	}{{"pre-registered", public}, {"metadata-document", document}} {
		b.Run(c.name, func(b *testing.B) {
			jar, err := cookiejar.New(nil)
			if err != nil {
				b.Fatal(err)
			}
			browser := &http.Client{Jar: jar, CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
			// send sends req, requires status, and returns the answer with its body.
			send := func(req *http.Request, status int) (*http.Response, string) {
				res, err := browser.Do(req)
				if err != nil {
					b.Fatal(err)
				}
				defer res.Body.Close()
				body, err := io.ReadAll(res.Body)
				if err != nil || res.StatusCode != status {
					b.Fatalf("%s %s: %d %v: %s", req.Method, req.URL.Path, res.StatusCode, err, body)
				}
				return res, string(body)
			}
			get := func(u string, status int) (*http.Response, string) {
				req, err := http.NewRequest(http.MethodGet, u, nil)
				if err != nil {
					b.Fatal(err)
				}
				return send(req, status)
			}
			post := func(path string, form url.Values, status int) *http.Response {
				req, err := http.NewRequest(http.MethodPost, e.http.URL+path, strings.NewReader(form.Encode()))
				if err != nil {
					b.Fatal(err)
				}
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				res, _ := send(req, status)
				return res
			}
			authURL := e.http.URL + oauth.PathAuthorize + "?" + url.Values{
				"client_id": {c.app.ClientID}, "redirect_uri": {redirect}, "response_type": {"code"}, "scope": {"svc:orders:read"},
				"state": {"st"}, "code_challenge": {challenge}, "code_challenge_method": {"S256"},
			}.Encode()
			res, _ := get(authURL, http.StatusSeeOther)
			_, body := get(e.http.URL+res.Header.Get("Location"), http.StatusOK)
			login := hiddenFields(body)
			login.Set("email", "admin@example.com")
			login.Set("password", "correct horse")
			post(oauth.PathLogin, login, http.StatusSeeOther)
			b.ReportAllocs()
			for b.Loop() {
				_, body := get(authURL, http.StatusOK)
				approve := hiddenFields(body)
				approve.Set("organization_id", orgID)
				approve.Set("decision", "approve")
				back, err := url.Parse(post(oauth.PathConsent, approve, http.StatusSeeOther).Header.Get("Location"))
				if err != nil {
					b.Fatal(err)
				}
				post(oauth.PathToken, url.Values{"grant_type": {"authorization_code"}, "code": {back.Query().Get("code")},
					"redirect_uri": {redirect}, "code_verifier": {verifier}, "client_id": {c.app.ClientID}}, http.StatusOK)
			}
		})
	}
}

// BenchmarkRegistrationHTTP is Dynamic Client Registration through the HTTP
// handler on PostgreSQL, open to anyone: parse and check the metadata, make
// the secret and the registration access token and hash them, INSERT the
// client, answer 201. Beside it, its floor: the bare INSERT of the same row
// through the same pool. Each reports registrations per second.
func BenchmarkRegistrationHTTP(b *testing.B) {
	e := newBenchEnv(b)
	e.srv.Registration = oauth.RegistrationOpen
	e.srv.ScopesSupported = oauth.ParseScope(appScopes)
	e.srv.Logger = slog.New(slog.DiscardHandler) // a line per registration
	h := e.srv.Handler()
	body := `{"client_name":"Bench Agent","redirect_uris":["` + redirect + `","http://127.0.0.1:8765/cb"],` +
		`"token_endpoint_auth_method":"client_secret_basic","scope":"svc:orders:read svc:orders:write"}`
	perSecond := func(b *testing.B, start time.Time) {
		b.ReportMetric(float64(b.N)/time.Since(start).Seconds(), "registrations/s")
	}
	b.Run("handler", func(b *testing.B) {
		b.ReportAllocs()
		start := time.Now()
		for b.Loop() {
			req := httptest.NewRequest(http.MethodPost, oauth.PathRegister, strings.NewReader(body))
			req.Header.Set("Content-Type", "application/json")
			rec := httptest.NewRecorder()
			h.ServeHTTP(rec, req)
			if rec.Code != http.StatusCreated {
				b.Fatal(rec.Body.String())
			}
		}
		perSecond(b, start)
	})
	b.Run("floor-insert", func(b *testing.B) {
		b.ReportAllocs()
		hash := sha256Of("secret")
		start := time.Now()
		for b.Loop() {
			_, err := e.db.ExecContext(context.Background(), `
				INSERT INTO oauth_apps (id, client_id, name, organization_id, scopes, branch_ids, redirect_uris, secret_hash, created_at, public,
					registration_token_hash, token_endpoint_auth_method)
				VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12)`,
				oauth.NewSecret(), oauth.NewSecret(), "Bench Agent", "", `["svc:orders:read","svc:orders:write"]`, `[]`,
				`["`+redirect+`","http://127.0.0.1:8765/cb"]`, hash, time.Now(), false, hash, "client_secret_basic")
			if err != nil {
				b.Fatal(err)
			}
		}
		perSecond(b, start)
	})
}
