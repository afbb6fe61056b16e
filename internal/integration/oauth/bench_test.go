package oauth_test

import (
	"context"
	"crypto/x509"
	"encoding/json"
	"net/http"
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
		err := db.QueryRowContext(context.Background(),
			`SELECT id, name, organization_id, scopes, branch_ids, redirect_uris, secret_hash, created_at, public FROM oauth_apps WHERE client_id = $1`,
			e.app.ClientID).Scan(&id, &name, &org, &scopes, &branches, &redirects, &hash, &created, &public)
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
func BenchmarkCodeExchangeHTTP(b *testing.B) {
	e := newBenchEnv(b)
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
	h := e.srv.Handler()
	for _, c := range []struct {
		name   string
		app    *oauth.App
		secret string
	}{{"confidential", e.app, e.secret}, {"public", public, ""}, {"metadata-document", &oauth.App{ClientID: docURL}, ""}} {
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
