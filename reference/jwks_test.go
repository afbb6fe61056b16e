package main

import (
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"io"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	josejwt "github.com/go-jose/go-jose/v4/jwt"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/oauth/bearer"
)

// jwksGet GETs url and decodes its JSON answer into v, returning the
// answer.
func jwksGet(t *testing.T, url string, v any) *http.Response {
	t.Helper()
	resp, err := http.Get(url)
	require.NoError(t, err)
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	require.NoError(t, err)
	if resp.StatusCode == http.StatusOK && v != nil {
		require.NoError(t, json.Unmarshal(body, v), string(body))
	}
	return resp
}

// jwksClientToken gets a client-credentials access token.
func jwksClientToken(t *testing.T, base, clientID, secret string) string {
	t.Helper()
	req, err := http.NewRequest(http.MethodPost, base+"/auth/v1/oauth/token", strings.NewReader(url.Values{"grant_type": {"client_credentials"}}.Encode()))
	require.NoError(t, err)
	req.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	req.SetBasicAuth(clientID, secret)
	resp, err := http.DefaultClient.Do(req)
	require.NoError(t, err)
	defer resp.Body.Close()
	var out map[string]any
	require.NoError(t, json.NewDecoder(resp.Body).Decode(&out))
	require.Equal(t, http.StatusOK, resp.StatusCode, out)
	return out["access_token"].(string)
}

// With --jwt-alg ES256 or EdDSA, serve signs with a key kept (sealed) in
// the database, publishes it at /.well-known/jwks.json, names it in its
// metadata, and an independent JOSE library verifies its tokens against
// the published set; the API accepts them, also after a restart, which
// keeps the key. With the default HS256 nothing is published.
func TestServeJWKS(t *testing.T) {
	t.Parallel()
	secretsKey := base64.StdEncoding.EncodeToString([]byte(strings.Repeat("k", 32)))
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			dbURL := b.url(t)
			org := createID(t, "admin", "org", "create", "--name", "Acme", "--database-url", dbURL)
			branch := createID(t, "admin", "branch", "create", "--org", org, "--name", "North", "--database-url", dbURL)
			app := adminJSON(t, "admin", "app", "create", "--org", org, "--name", "Sync", "--all-branches",
				"--scopes", "svc:accounts:read", "--database-url", dbURL)
			clientID, secret := app["client_id"].(string), app["client_secret"].(string)

			hs, _, stop := startRun(t, []string{"serve", "--addr", "127.0.0.1:0", "--database-url", dbURL}, env(nil))
			var metadata map[string]any
			jwksGet(t, hs+"/.well-known/oauth-authorization-server", &metadata)
			assert.NotContains(t, metadata, "jwks_uri")
			assert.Equal(t, http.StatusNotFound, jwksGet(t, hs+"/.well-known/jwks.json", nil).StatusCode)
			require.NoError(t, stop())

			for _, alg := range []string{"ES256", "EdDSA"} {
				t.Run(alg, func(t *testing.T) {
					// A fixed issuer: the restart below listens at another port.
					const issuer = "http://waybill.test"
					args := []string{"serve", "--addr", "127.0.0.1:0", "--database-url", dbURL, "--jwt-alg", alg, "--issuer", issuer}
					base, _, stop := startRun(t, args, env(map[string]string{"WAYBILL_SECRETS_KEY": secretsKey}))
					metadata := map[string]any{}
					jwksGet(t, base+"/.well-known/oauth-authorization-server", &metadata)
					assert.Equal(t, issuer+"/.well-known/jwks.json", metadata["jwks_uri"])

					var set jose.JSONWebKeySet
					resp := jwksGet(t, base+"/.well-known/jwks.json", &set)
					require.Equal(t, http.StatusOK, resp.StatusCode)
					assert.Contains(t, resp.Header.Get("Cache-Control"), "max-age=")
					assert.NotEmpty(t, resp.Header.Get("ETag"))
					require.Len(t, set.Keys, 1)
					assert.Equal(t, alg, set.Keys[0].Algorithm)

					token := jwksClientToken(t, base, clientID, secret)
					parsed, err := josejwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.SignatureAlgorithm(alg)})
					require.NoError(t, err)
					assert.Equal(t, "at+jwt", parsed.Headers[0].ExtraHeaders[jose.HeaderType])
					keys := set.Key(parsed.Headers[0].KeyID)
					require.Len(t, keys, 1, "the token's kid is in the published set")
					var claims josejwt.Claims
					var extra struct {
						ClientID string `json:"client_id"`
						Scope    string `json:"scope"`
					}
					require.NoError(t, parsed.Claims(keys[0].Key, &claims, &extra))
					require.NoError(t, claims.ValidateWithLeeway(josejwt.Expected{Issuer: issuer, AnyAudience: josejwt.Audience{"authenticated"}, Time: time.Now()}, 0))
					assert.Equal(t, clientID, extra.ClientID)
					assert.Equal(t, "svc:accounts:read", extra.Scope)

					list := swDo(t, "GET", base+"/v1/"+branch+"/accounts", token, "", nil)
					assert.Equal(t, http.StatusOK, list.status, list.body)
					require.NoError(t, stop())

					again, _, stop := startRun(t, args, env(map[string]string{"WAYBILL_SECRETS_KEY": secretsKey}))
					defer func() { require.NoError(t, stop()) }()
					var after jose.JSONWebKeySet
					jwksGet(t, again+"/.well-known/jwks.json", &after)
					require.Len(t, after.Keys, 1)
					assert.Equal(t, set.Keys[0].KeyID, after.Keys[0].KeyID, "the key is kept in the database")
					list = swDo(t, "GET", again+"/v1/"+branch+"/accounts", token, "", nil)
					assert.Equal(t, http.StatusOK, list.status, "a restarted server accepts the tokens signed before")
				})
			}
		})
	}
}

func TestJWTAlgFlag(t *testing.T) {
	for _, tc := range []struct {
		args []string
		env  map[string]string
		want string // "" accepted
	}{
		{nil, nil, ""},
		{[]string{"--jwt-alg", "ES256"}, nil, ""},
		{nil, map[string]string{"WAYBILL_JWT_ALG": "EdDSA"}, ""},
		{[]string{"--jwt-alg", "RS256"}, nil, "must be HS256, ES256 or EdDSA"},
		{[]string{"--jwt-alg", "es256"}, nil, "must be HS256, ES256 or EdDSA"},
		{[]string{"--jwt-alg", "ES256", "--jwt-secret", strings.Repeat("s", 32)}, nil, "HS256 key"},
		{[]string{"--jwt-alg", "HS256", "--jwt-secret", strings.Repeat("s", 32)}, nil, ""},
		{[]string{"--jwt-key-file", "k.pem"}, nil, ""},
		{nil, map[string]string{"WAYBILL_JWT_KEY_FILE": "k.pem", "WAYBILL_JWT_PREVIOUS_KEY_FILE": "old.pem"}, ""},
		{[]string{"--jwt-key-file", "k.pem", "--jwt-alg", "EdDSA"}, nil, ""},
		{[]string{"--jwt-key-file", "k.pem", "--jwt-alg", "HS256"}, nil, "signs with a shared secret"},
		{[]string{"--jwt-key-file", "k.pem", "--jwt-secret", strings.Repeat("s", 32)}, nil, "not both"},
		{[]string{"--jwt-previous-key-file", "old.pem"}, nil, "needs --jwt-key-file"},
	} {
		cfg, err := parseServeFlags(tc.args, env(tc.env), io.Discard)
		if tc.want != "" {
			assert.ErrorContains(t, err, tc.want, "%v %v", tc.args, tc.env)
			continue
		}
		require.NoError(t, err, "%v %v", tc.args, tc.env)
		if alg := tc.env["WAYBILL_JWT_ALG"]; alg != "" {
			assert.Equal(t, alg, cfg.JWTAlg)
		}
	}
}

// "admin keys rotate" stages a key that every restarted server publishes
// and accepts, then promotes it to sign, while the key before still
// verifies: a token signed before the rotation is accepted throughout.
func TestKeysRotate(t *testing.T) {
	t.Parallel()
	b := backends()[0]
	dbURL := b.url(t)
	org := createID(t, "admin", "org", "create", "--name", "Acme", "--database-url", dbURL)
	branch := createID(t, "admin", "branch", "create", "--org", org, "--name", "North", "--database-url", dbURL)
	app := adminJSON(t, "admin", "app", "create", "--org", org, "--name", "Sync", "--all-branches",
		"--scopes", "svc:accounts:read", "--database-url", dbURL)
	clientID, secret := app["client_id"].(string), app["client_secret"].(string)
	vars := map[string]string{"WAYBILL_JWT_ALG": "EdDSA", "WAYBILL_SECRETS_KEY": base64.StdEncoding.EncodeToString([]byte(strings.Repeat("r", 32)))}
	args := []string{"serve", "--addr", "127.0.0.1:0", "--database-url", dbURL, "--issuer", "http://waybill.test"}

	// serve starts a server, and returns the kids it publishes and the kid
	// of a token it signs, after checking that it accepts every token of
	// accepted.
	serve := func(accepted ...string) (published []string, token, kid string) {
		base, _, stop := startRun(t, args, env(vars))
		defer func() { require.NoError(t, stop()) }()
		var set jose.JSONWebKeySet
		jwksGet(t, base+"/.well-known/jwks.json", &set)
		for _, k := range set.Keys {
			published = append(published, k.KeyID)
		}
		token = jwksClientToken(t, base, clientID, secret)
		parsed, err := josejwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.EdDSA})
		require.NoError(t, err)
		for _, tok := range append(accepted, token) {
			list := swDo(t, "GET", base+"/v1/"+branch+"/accounts", tok, "", nil)
			assert.Equal(t, http.StatusOK, list.status, list.body)
		}
		return published, token, parsed.Headers[0].KeyID
	}
	rotate := func() map[string]any {
		out, err := runCommand(t, vars, "admin", "keys", "rotate", "--database-url", dbURL)
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(out), &m))
		return m
	}

	published, t0, k0 := serve()
	assert.Equal(t, []string{k0}, published)

	staged := rotate()
	assert.Equal(t, map[string]any{"step": "staged", "current_kid": k0, "next_kid": staged["next_kid"]}, staged)
	k1 := staged["next_kid"].(string)
	published, t1, kid := serve(t0)
	assert.Equal(t, []string{k0, k1}, published, "the staged key is published")
	assert.Equal(t, k0, kid, "and does not sign yet")

	assert.Equal(t, map[string]any{"step": "promoted", "current_kid": k1, "previous_kid": k0}, rotate())
	published, _, kid = serve(t0, t1)
	assert.Equal(t, []string{k1, k0}, published)
	assert.Equal(t, k1, kid, "the promoted key signs; the one before still verifies")

	_, err := runCommand(t, nil, "admin", "keys", "rotate", "--jwt-alg", "RS256", "--database-url", dbURL)
	assert.ErrorContains(t, err, "--jwt-alg must be HS256, ES256 or EdDSA")
	_, err = runCommand(t, map[string]string{"WAYBILL_JWT_ALG": "EdDSA"}, "admin", "keys", "rotate", "--database-url", dbURL)
	assert.ErrorContains(t, err, "encrypted with another secrets key", "the sealed keys need their secrets key")
}

// writeKeyFile writes a new PEM private key of alg (ES256 or EdDSA) to a
// file readable by its owner alone and returns its path and the key.
func writeKeyFile(t *testing.T, alg string) (string, bearer.Key) {
	t.Helper()
	k, err := bearer.GenerateKeyFor(alg)
	require.NoError(t, err)
	der, err := x509.MarshalPKCS8PrivateKey(k.Private)
	require.NoError(t, err)
	path := filepath.Join(t.TempDir(), alg+".pem")
	require.NoError(t, os.WriteFile(path, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: der}), 0o600))
	parsed, err := bearer.ParsePrivateKeyPEM(mustRead(t, path))
	require.NoError(t, err)
	return path, parsed
}

func mustRead(t *testing.T, path string) []byte {
	t.Helper()
	b, err := os.ReadFile(path)
	require.NoError(t, err)
	return b
}

// With --jwt-key-file serve signs with the PEM key given, named by its
// thumbprint, and publishes its public key; rotating to a new file with
// the old one as --jwt-previous-key-file keeps the tokens the old one
// signed valid and both keys published, and dropping the old file ends
// them. A file of the wrong algorithm, or that does not parse, stops serve
// at start with the flag named and the key never printed.
func TestServeKeyFile(t *testing.T) {
	t.Parallel()
	dbURL := backends()[0].url(t)
	org := createID(t, "admin", "org", "create", "--name", "Acme", "--database-url", dbURL)
	branch := createID(t, "admin", "branch", "create", "--org", org, "--name", "North", "--database-url", dbURL)
	app := adminJSON(t, "admin", "app", "create", "--org", org, "--name", "Sync", "--all-branches",
		"--scopes", "svc:accounts:read", "--database-url", dbURL)
	clientID, secret := app["client_id"].(string), app["client_secret"].(string)
	const issuer = "http://waybill.test"
	serve := func(t *testing.T, extra ...string) (string, *syncBuffer, func() error) {
		return startRun(t, append([]string{"serve", "--addr", "127.0.0.1:0", "--database-url", dbURL, "--issuer", issuer}, extra...), env(nil))
	}
	kids := func(t *testing.T, base string) []string {
		var set jose.JSONWebKeySet
		require.Equal(t, http.StatusOK, jwksGet(t, base+"/.well-known/jwks.json", &set).StatusCode)
		var ids []string
		for _, k := range set.Keys {
			ids = append(ids, k.KeyID)
		}
		return ids
	}
	kidOf := func(t *testing.T, token string) string {
		parsed, err := josejwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.ES256, jose.EdDSA})
		require.NoError(t, err)
		return parsed.Headers[0].KeyID
	}
	accounts := func(t *testing.T, base, token string) int {
		return swDo(t, "GET", base+"/v1/"+branch+"/accounts", token, "", nil).status
	}

	oldPath, oldKey := writeKeyFile(t, bearer.EdDSA)
	base, _, stop := serve(t, "--jwt-key-file", oldPath)
	assert.Equal(t, []string{oldKey.ID}, kids(t, base))
	oldToken := jwksClientToken(t, base, clientID, secret)
	assert.Equal(t, oldKey.ID, kidOf(t, oldToken))
	assert.Equal(t, http.StatusOK, accounts(t, base, oldToken))
	require.NoError(t, stop())

	newPath, newKey := writeKeyFile(t, bearer.EdDSA)
	base, _, stop = serve(t, "--jwt-key-file", newPath, "--jwt-previous-key-file", oldPath)
	assert.Equal(t, []string{newKey.ID, oldKey.ID}, kids(t, base), "the current key first, the previous one still published")
	newToken := jwksClientToken(t, base, clientID, secret)
	assert.Equal(t, newKey.ID, kidOf(t, newToken))
	assert.Equal(t, http.StatusOK, accounts(t, base, oldToken), "the previous key still verifies")
	assert.Equal(t, http.StatusOK, accounts(t, base, newToken))
	require.NoError(t, stop())

	base, _, stop = serve(t, "--jwt-key-file", newPath)
	assert.Equal(t, []string{newKey.ID}, kids(t, base))
	assert.Equal(t, http.StatusUnauthorized, accounts(t, base, oldToken), "without the previous file its tokens end")
	assert.Equal(t, http.StatusOK, accounts(t, base, newToken))
	require.NoError(t, stop())

	ecPath, _ := writeKeyFile(t, bearer.ES256)
	loose := filepath.Join(t.TempDir(), "loose.pem")
	require.NoError(t, os.WriteFile(loose, mustRead(t, ecPath), 0o644))
	base, logs, stop := serve(t, "--jwt-key-file", loose)
	assert.Contains(t, logs.String(), "chmod 600", "a key file others may read is warned of")
	assert.NotContains(t, logs.String(), "PRIVATE KEY")
	assert.Equal(t, http.StatusOK, accounts(t, base, jwksClientToken(t, base, clientID, secret)))
	require.NoError(t, stop())

	garbage := filepath.Join(t.TempDir(), "garbage.pem")
	require.NoError(t, os.WriteFile(garbage, []byte("-----BEGIN PRIVATE KEY-----\nc2VjcmV0\n-----END PRIVATE KEY-----\n"), 0o600))
	for _, tc := range []struct {
		args []string
		says string
	}{
		{[]string{"--jwt-key-file", ecPath, "--jwt-alg", "EdDSA"}, "holds an ES256 key, and --jwt-alg is EdDSA"},
		{[]string{"--jwt-key-file", newPath, "--jwt-previous-key-file", ecPath}, "both must be of one algorithm"},
		{[]string{"--jwt-key-file", filepath.Join(t.TempDir(), "missing.pem")}, "--jwt-key-file"},
		{[]string{"--jwt-key-file", garbage}, "does not parse"},
	} {
		out, err := runCommand(t, nil, append([]string{"serve", "--addr", "127.0.0.1:0", "--database-url", dbURL}, tc.args...)...)
		require.Error(t, err, "%v", tc.args)
		assert.ErrorContains(t, err, tc.says)
		assert.NotContains(t, err.Error()+out, "c2VjcmV0")
	}
}
