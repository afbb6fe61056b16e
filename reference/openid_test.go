package main

import (
	"encoding/base64"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/coreos/go-oidc/v3/oidc"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	"golang.org/x/oauth2"

	"github.com/waybillhq/waybill/oauth"
)

// TestOpenIDConnect drives OpenID Connect through the server, on SQLite
// and PostgreSQL, as a relying party does with its libraries' defaults:
// go-oidc discovers the provider from the issuer, golang.org/x/oauth2 runs
// the authorization-code flow with PKCE and a nonce, and go-oidc's
// Verifier verifies the id token against the published JSON Web Key Set
// (the nonce, auth_time and at_hash checked here), and reads UserInfo. The
// discovery document, the token answer with its id token and the UserInfo
// answers are validated against the served OpenAPI document. With HS256
// the discovery document is 404 and openid is refused (invalid_scope,
// back to the client).
func TestOpenIDConnect(t *testing.T) {
	t.Parallel()
	secretsKey := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", 32)))
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			db := b.url(t)
			c := newRVTenant(t, db)
			algs := []string{"ES256"}
			if b.name == "sqlite" {
				algs = append(algs, "EdDSA")
			}
			for _, alg := range algs {
				t.Run(alg, func(t *testing.T) {
					base, _, stop := startRun(t, []string{"serve", "--addr", "127.0.0.1:0", "--database-url", db, "--jwt-alg", alg},
						env(map[string]string{"WAYBILL_SECRETS_KEY": secretsKey}))
					defer func() { require.NoError(t, stop()) }()
					oidcFlow(t, base, alg, c)
				})
			}

			t.Run("HS256", func(t *testing.T) {
				base, _, stop := startRun(t, []string{"serve", "--addr", "127.0.0.1:0", "--database-url", db}, env(nil))
				defer func() { require.NoError(t, stop()) }()
				res, body := doJSON(t, mustRequest(t, http.MethodGet, base+"/.well-known/openid-configuration"))
				assert.Equal(t, http.StatusNotFound, res.StatusCode)
				assert.Equal(t, "not_found", body["error"])
				_, meta := doJSON(t, mustRequest(t, http.MethodGet, base+oauth.PathMetadata))
				assert.NotContains(t, meta, "userinfo_endpoint")
				_, err := oidc.NewProvider(t.Context(), base)
				assert.Error(t, err, "no provider to discover")

				conf := oidcConfig(base, c)
				loc := oidcAuthorize(t, conf.AuthCodeURL("hs-state", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()), oidc.Nonce("n")))
				assert.True(t, strings.HasPrefix(loc.String(), rvRedirect+"?"), loc.String())
				assert.Equal(t, "invalid_scope", loc.Query().Get("error"))
				assert.Equal(t, "hs-state", loc.Query().Get("state"))
			})
		})
	}
}

// oidcConfig is the oauth2 configuration of c's app asking for an id token
// with the email scope.
func oidcConfig(base string, c rvTenant) *oauth2.Config {
	return &oauth2.Config{
		ClientID: c.clientID, ClientSecret: c.secret, RedirectURL: rvRedirect,
		Scopes:   []string{oidc.ScopeOpenID, "email", "svc:vehicles:read"},
		Endpoint: oauth2.Endpoint{AuthURL: base + oauth.PathAuthorize, TokenURL: base + oauth.PathToken, AuthStyle: oauth2.AuthStyleInHeader},
	}
}

// oidcAuthorize sends a browser without a session to authURL and returns
// where the answer redirects.
func oidcAuthorize(t *testing.T, authURL string) *url.URL {
	t.Helper()
	client := &http.Client{CheckRedirect: func(*http.Request, []*http.Request) error { return http.ErrUseLastResponse }}
	res, err := client.Get(authURL)
	require.NoError(t, err)
	res.Body.Close()
	require.Equal(t, http.StatusFound, res.StatusCode)
	loc, err := res.Location()
	require.NoError(t, err)
	return loc
}

// oidcFlow is the relying party's side of TestOpenIDConnect against the
// server at base, which signs with alg.
func oidcFlow(t *testing.T, base, alg string, c rvTenant) {
	doc := oavLoad(t, base)
	var seen []string
	checked := func(method, path string, a swAnswer) swAnswer {
		t.Helper()
		doc.check(t, method, path, a)
		return a
	}

	discovery := checked(http.MethodGet, "/.well-known/openid-configuration", swDo(t, http.MethodGet, base+"/.well-known/openid-configuration", "", "", nil))
	require.Equal(t, http.StatusOK, discovery.status, discovery.body)
	seen = append(seen, "getOpenIDConfiguration 200")
	meta := discovery.json(t)
	assert.Equal(t, base+"/auth/v1/oauth/userinfo", meta["userinfo_endpoint"])
	assert.Equal(t, []any{alg}, meta["id_token_signing_alg_values_supported"])
	assert.Subset(t, meta["scopes_supported"], []any{"openid", "profile", "email"})

	provider, err := oidc.NewProvider(t.Context(), base)
	require.NoError(t, err, "go-oidc discovers the provider from the issuer")
	assert.Equal(t, base+oauth.PathAuthorize, provider.Endpoint().AuthURL)
	verifier := provider.Verifier(&oidc.Config{ClientID: c.clientID})
	conf := oidcConfig(base, c)
	conf.Endpoint = provider.Endpoint()
	conf.Endpoint.AuthStyle = oauth2.AuthStyleInHeader

	// prompt=none without a session: login_required, back to the client.
	loc := oidcAuthorize(t, conf.AuthCodeURL("none-state", oauth2.S256ChallengeOption(oauth2.GenerateVerifier()), oauth2.SetAuthURLParam("prompt", "none")))
	assert.Equal(t, "login_required", loc.Query().Get("error"))

	pkce := oauth2.GenerateVerifier()
	nonce := "nonce-" + newID()
	code := rvConsent(t, base, conf.AuthCodeURL("oidc-state", oauth2.S256ChallengeOption(pkce), oidc.Nonce(nonce), oauth2.SetAuthURLParam("max_age", "600")), c)
	tok, err := conf.Exchange(t.Context(), code, oauth2.VerifierOption(pkce))
	require.NoError(t, err)
	raw, ok := tok.Extra("id_token").(string)
	require.True(t, ok, "the token answer carries an id_token")
	idToken, err := verifier.Verify(t.Context(), raw)
	require.NoError(t, err, "go-oidc verifies the id token against the JWKS")
	assert.Equal(t, nonce, idToken.Nonce)
	assert.Equal(t, []string{c.clientID}, idToken.Audience)
	assert.Equal(t, base, idToken.Issuer)
	require.NoError(t, idToken.VerifyAccessToken(tok.AccessToken), "at_hash")
	var claims struct {
		AuthTime int64  `json:"auth_time"`
		Email    string `json:"email"`
		Sub      string `json:"sub"`
	}
	require.NoError(t, idToken.Claims(&claims))
	assert.NotZero(t, claims.AuthTime, "auth_time")
	assert.LessOrEqual(t, claims.AuthTime, idToken.IssuedAt.Unix())
	assert.Equal(t, c.email, claims.Email)
	assert.Equal(t, claimsOf(t, tok.AccessToken)["sub"], claims.Sub, "sub is the user of the access token")
	assert.Contains(t, strings.Fields(tok.Extra("scope").(string)), "openid", "granted like the other scopes")

	info, err := provider.UserInfo(t.Context(), oauth2.StaticTokenSource(tok))
	require.NoError(t, err, "go-oidc reads UserInfo")
	assert.Equal(t, claims.Sub, info.Subject)
	assert.Equal(t, c.email, info.Email)

	// The API still takes the access token, and refuses the id token.
	assert.Equal(t, http.StatusOK, rlVehicles(t, base, c.org, tok.AccessToken).status)
	assert.Equal(t, http.StatusUnauthorized, rlVehicles(t, base, c.org, raw).status)

	// A refresh answers no id token.
	res, refreshed := rvRefresh(t, base, c, tok.RefreshToken)
	require.Equal(t, http.StatusOK, res.StatusCode, refreshed)
	assert.NotContains(t, refreshed, "id_token")

	// The answers as the OpenAPI document describes them.
	userinfo := base + "/auth/v1/oauth/userinfo"
	for _, a := range []struct {
		method, token string
		status        int
		op            string
	}{
		{http.MethodGet, tok.AccessToken, http.StatusOK, "getUserInfo 200"},
		{http.MethodPost, tok.AccessToken, http.StatusOK, "postUserInfo 200"},
		{http.MethodGet, "", http.StatusUnauthorized, "getUserInfo 401"},
		{http.MethodGet, "not-a-token", http.StatusUnauthorized, "getUserInfo 401"},
		{http.MethodGet, rlToken(t, base, c.rlTenant), http.StatusForbidden, "getUserInfo 403"},
	} {
		got := checked(a.method, "/auth/v1/oauth/userinfo", swDo(t, a.method, userinfo, a.token, "", nil))
		assert.Equal(t, a.status, got.status, got.body)
		assert.Equal(t, "no-store", got.header.Get("Cache-Control"))
		seen = append(seen, a.op)
	}
	code = rvConsent(t, base, conf.AuthCodeURL("oidc-state", oauth2.S256ChallengeOption(pkce), oidc.Nonce(nonce)), c)
	form := url.Values{"grant_type": {"authorization_code"}, "code": {code}, "redirect_uri": {rvRedirect}, "code_verifier": {pkce}}
	answer := checked(http.MethodPost, oauth.PathToken, swDo(t, http.MethodPost, base+oauth.PathToken, "", form.Encode(),
		map[string]string{"Content-Type": "application/x-www-form-urlencoded", "Authorization": "Basic " +
			base64.StdEncoding.EncodeToString([]byte(url.QueryEscape(c.clientID)+":"+url.QueryEscape(c.secret)))}))
	require.Equal(t, http.StatusOK, answer.status, answer.body)
	var body struct {
		IDToken string `json:"id_token"`
	}
	require.NoError(t, json.Unmarshal([]byte(answer.body), &body))
	_, err = verifier.Verify(t.Context(), body.IDToken)
	require.NoError(t, err)
	seen = append(seen, "requestToken 200")
	doc.requireSeen(t, seen)
}
