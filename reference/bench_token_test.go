package main

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/oauth/bearer"
	"github.com/waybillhq/waybill/query"
)

// BenchmarkTokenEndpoint is the client-credentials grant through the
// server's whole handler, assembled as waybill serve assembles it (metrics,
// the --db-timeout deadline, the edge and token limits, the mux, the token
// endpoint reading the app through pgx), without the network: what
// BenchmarkHTTP's token case costs in CPU, measured to the microsecond.
//
//   - server: the rate limits off, as BenchmarkHTTP runs it;
//   - server-limited: the token limit on (a quota that is never reached),
//     as the server runs by default: the client is authenticated for the
//     limit's key in front of the endpoint;
//   - floor: the same app read by the same SELECT through pgx alone, its
//     secret's SHA-256 compared, the token signed and its JSON written:
//     the bare calls of the grant.
func BenchmarkTokenEndpoint(b *testing.B) {
	ctx := context.Background()
	d := loadQuotations(b, 0)
	store := newOAuthStore(d.db, query.Postgres)
	keys, err := secretKeys(signingConfig{alg: "HS256", secret: strings.Repeat("s", 32)})
	if err != nil {
		b.Fatal(err)
	}
	const issuer = "https://bench.test"
	tokens := newOAuthServer(d.db, store, keys, issuer, testLogger(b))
	app, secret, err := tokens.RegisterApp(ctx, oauth.NewApp{OrganizationID: d.org, Name: "bench",
		Scopes: []string{"svc:quotations:read", "svc:quotations:write"}, BranchIDs: []string{d.branch}})
	if err != nil {
		b.Fatal(err)
	}
	form := "grant_type=client_credentials"

	server := func(limits limitsConfig) func(b *testing.B) {
		return func(b *testing.B) {
			api, err := newAPI(d.db, query.Postgres, &bearer.Verifier{Keys: keys, Issuer: issuer, Families: store}, testLogger(b))
			if err != nil {
				b.Fatal(err)
			}
			m := newMetrics()
			l, err := newRateLimits(ctx, limits, m, testLogger(b))
			if err != nil {
				b.Fatal(err)
			}
			h := newHandlerWith(d.db, tokens, api, handlerOptions{Limits: l, Metrics: m, Logger: testLogger(b), DBTimeout: defaultDBTimeout})
			one := func() {
				req := httptest.NewRequest(http.MethodPost, oauth.PathToken, strings.NewReader(form))
				req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
				req.SetBasicAuth(url.QueryEscape(app.ClientID), url.QueryEscape(secret))
				rec := httptest.NewRecorder()
				h.ServeHTTP(rec, req)
				if rec.Code != http.StatusOK || !strings.Contains(rec.Body.String(), `"access_token"`) {
					b.Fatalf("%d %s", rec.Code, rec.Body.String())
				}
			}
			measure(b, false, one)
		}
	}
	b.Run("server", server(limitsConfig{}))
	b.Run("server-limited", server(limitsConfig{Token: 1 << 30, Edge: 1 << 30}))
	b.Run("floor", func(b *testing.B) {
		pool, err := pgxpool.New(ctx, d.url)
		if err != nil {
			b.Fatal(err)
		}
		defer pool.Close()
		const appSQL = `SELECT id, name, organization_id, scopes, branch_ids, redirect_uris, secret_hash, created_at
			FROM oauth_apps WHERE client_id = $1`
		one := func() {
			var id, name, org, scopes, branches, redirects string
			var hash []byte
			var created time.Time
			if err := pool.QueryRow(ctx, appSQL, app.ClientID).Scan(&id, &name, &org, &scopes, &branches, &redirects, &hash, &created); err != nil {
				b.Fatal(err)
			}
			sum := sha256.Sum256([]byte(secret))
			if subtle.ConstantTimeCompare(sum[:], hash) != 1 {
				b.Fatal("secret does not match")
			}
			now := time.Now()
			token, err := keys.Sign(&bearer.Claims{Issuer: issuer, Subject: id, Audience: bearer.Audience, Role: bearer.Role,
				IssuedAt: now.Unix(), ExpiresAt: now.Add(time.Hour).Unix(), ID: newID(), OrganizationID: org,
				ClientID: app.ClientID, Scopes: app.Scopes, BranchIDs: app.BranchIDs, AppName: name, Grant: bearer.GrantClientCredentials})
			if err != nil {
				b.Fatal(err)
			}
			rec := httptest.NewRecorder()
			rec.Header().Set("Content-Type", "application/json")
			rec.WriteHeader(http.StatusOK)
			_ = json.NewEncoder(rec).Encode(map[string]any{"access_token": token, "token_type": "bearer", "expires_in": 3600,
				"scope": strings.Join(app.Scopes, " "), "organization_id": org, "branch_ids": app.BranchIDs})
		}
		measure(b, false, one)
	})
}
