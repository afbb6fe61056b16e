package main

import (
	"encoding/json"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"testing"

	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/internal/testdb"
	"github.com/waybillhq/waybill/protectedresource"
)

// The API publishes its protected resource metadata (RFC 9728), and every
// Bearer challenge of the API points to it.
func TestProtectedResource(t *testing.T) {
	t.Parallel()
	const issuer = "https://waybill.test"
	const metadataURL = issuer + "/.well-known/oauth-protected-resource"
	db := "sqlite://" + testdb.SQLitePath(t)
	a := newRLTenant(t, db, "Acme") // an app that may read vehicles only
	base, _, stop := startRun(t, []string{"serve", "--addr", "127.0.0.1:0", "--database-url", db, "--issuer", issuer,
		"--rate-rest", "0", "--rate-token", "0"}, env(nil))
	defer func() { require.NoError(t, stop()) }()

	t.Run("metadata", func(t *testing.T) {
		res := rlDo(t, mustRequest(t, http.MethodGet, base+protectedresource.WellKnownPath))
		require.Equal(t, http.StatusOK, res.status)
		assert.Equal(t, "application/json", res.header.Get("Content-Type"))
		assert.Equal(t, issuer, res.body["resource"], "the resource identifier the metadata URL is formed from")
		assert.Equal(t, []any{issuer}, res.body["authorization_servers"])
		assert.Equal(t, []any{"header"}, res.body["bearer_methods_supported"])
		assert.Equal(t, issuer+"/v1/openapi.json", res.body["resource_documentation"])
		assert.NotContains(t, res.body, "jwks_uri")
		scopes, _ := res.body["scopes_supported"].([]any)
		assert.Contains(t, scopes, "svc:vehicles:read")
		assert.Contains(t, scopes, "svc:orders:write")
	})

	// Every operation of the OpenAPI document that may answer 401, asked
	// without a token, with a token that does not verify, and with one
	// that lacks its scope.
	res, body := get(t, http.MethodGet, base+"/v1/openapi.json")
	require.Equal(t, http.StatusOK, res.StatusCode)
	var doc struct {
		Paths map[string]map[string]json.RawMessage `json:"paths"`
	}
	require.NoError(t, json.Unmarshal([]byte(body), &doc))
	token := rlToken(t, base, a)
	param := regexp.MustCompile(`\{[^}]+\}`)
	want := `resource_metadata="` + metadataURL + `"`
	var paths []string
	for p := range doc.Paths {
		paths = append(paths, p)
	}
	sort.Strings(paths)
	checked, scoped := 0, 0
	for _, p := range paths {
		if !strings.HasPrefix(p, "/v1/") && !strings.HasPrefix(p, "/api/v1/") || strings.Contains(p, "/oauth/") {
			continue // the token service's own endpoints
		}
		path := param.ReplaceAllStringFunc(p, func(s string) string {
			if s == "{scopeId}" || s == "{organizationId}" {
				return a.org
			}
			return uuid.NewString()
		})
		for method, raw := range doc.Paths[p] {
			var op struct {
				Responses map[string]any `json:"responses"`
			}
			if method == "parameters" || json.Unmarshal(raw, &op) != nil {
				continue
			}
			if _, ok := op.Responses["401"]; !ok {
				continue
			}
			method = strings.ToUpper(method)
			for _, bearer := range []string{"", "not-a-token"} {
				req := mustRequest(t, method, base+path)
				if bearer != "" {
					req.Header.Set("Authorization", "Bearer "+bearer)
				}
				res := rlDo(t, req)
				require.Equal(t, http.StatusUnauthorized, res.status, "%s %s", method, p)
				for _, c := range res.header.Values("WWW-Authenticate") {
					assert.True(t, strings.HasPrefix(c, `Bearer realm="waybill"`), "%s %s: %s", method, p, c)
					assert.True(t, strings.HasSuffix(c, want), "%s %s: %s", method, p, c)
				}
				assert.NotEmpty(t, res.header.Values("WWW-Authenticate"), "%s %s", method, p)
				checked++
			}
			if _, ok := op.Responses["403"]; ok && !strings.Contains(p, "/vehicles") {
				req := mustRequest(t, method, base+path)
				req.Header.Set("Authorization", "Bearer "+token)
				res := rlDo(t, req)
				if res.status == http.StatusForbidden && res.body["error"] == "insufficient_scope" {
					c := res.header.Get("WWW-Authenticate")
					assert.Contains(t, c, `error="insufficient_scope"`, "%s %s", method, p)
					assert.True(t, strings.HasSuffix(c, want), "%s %s: %s", method, p, c)
					scoped++
				}
			}
		}
	}
	assert.Greater(t, checked, 100, "401 challenges checked")
	assert.Greater(t, scoped, 50, "insufficient_scope challenges checked")
	t.Logf("%d 401 and %d insufficient_scope challenges checked", checked, scoped)
}
