package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The document that "waybill openapi" prints is the one serve answers at
// /v1/openapi.json, and it describes every resource.
func TestOpenAPIDocument(t *testing.T) {
	t.Parallel()
	var out bytes.Buffer
	require.NoError(t, run(t.Context(), []string{"openapi", "--issuer", "https://tms.test"}, env(nil), &out, &out))
	var doc map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc))
	assert.Equal(t, "3.1.0", doc["openapi"])
	paths := doc["paths"].(map[string]any)
	schemas := doc["components"].(map[string]any)["schemas"].(map[string]any)
	ref := func(v any) map[string]any {
		name := strings.TrimPrefix(v.(map[string]any)["$ref"].(string), "#/components/schemas/")
		require.Contains(t, schemas, name)
		return schemas[name].(map[string]any)
	}
	for _, r := range resources() {
		require.Contains(t, paths, "/v1/{scopeId}/"+r.Name)
		require.Contains(t, paths, "/v1/{scopeId}/"+r.Name+"/{id}")
		// The list's envelope holds records whose schema has every field.
		list := paths["/v1/{scopeId}/"+r.Name].(map[string]any)["get"].(map[string]any)
		envelope := ref(list["responses"].(map[string]any)["200"].(map[string]any)["content"].(map[string]any)["application/json"].(map[string]any)["schema"])
		record := ref(envelope["properties"].(map[string]any)["data"].(map[string]any)["items"])
		props := record["properties"].(map[string]any)
		for _, f := range r.AllFields() {
			assert.Contains(t, props, f.Name, "%s.%s", r.Name, f.Name)
		}
		assert.Contains(t, props, "organization_id", r.Name)
	}

	url, _, stop := startRun(t, []string{"serve", "--addr", "127.0.0.1:0", "--database-url", "sqlite://" + t.TempDir() + "/o.db"}, env(nil))
	for _, path := range []string{"/v1/openapi.json", "/api/v1/openapi.json"} {
		resp, body := get(t, http.MethodGet, url+path)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		assert.Equal(t, "application/json", resp.Header.Get("Content-Type"))
		var served map[string]any
		require.NoError(t, json.Unmarshal([]byte(body), &served))
		assert.Equal(t, doc["paths"], served["paths"])
		assert.Equal(t, url, served["servers"].([]any)[0].(map[string]any)["url"])
	}
	require.NoError(t, stop())
}

// The product's other token paths take the client-credentials grant, and
// only it, and the document describes them beside the token service's
// endpoints.
func TestOpenAPITokenAliases(t *testing.T) {
	t.Parallel()
	db := "sqlite://" + t.TempDir() + "/aliases.db"
	org := createID(t, "admin", "org", "create", "--name", "Acme Transport", "--database-url", db)
	branch := createID(t, "admin", "branch", "create", "--org", org, "--name", "North", "--database-url", db)
	app := adminJSON(t, "admin", "app", "create", "--org", org, "--name", "Nightly Sync",
		"--scopes", "svc:orders:read", "--branches", branch, "--database-url", db)
	clientID, secret := app["client_id"].(string), app["client_secret"].(string)

	base, _, stop := startRun(t, []string{"serve", "--addr", "127.0.0.1:0", "--database-url", db}, env(nil))
	res, body := get(t, http.MethodGet, base+"/v1/openapi.json")
	require.Equal(t, http.StatusOK, res.StatusCode)
	var doc map[string]any
	require.NoError(t, json.Unmarshal([]byte(body), &doc))
	paths := doc["paths"].(map[string]any)

	for _, alias := range []struct{ path, operationID string }{
		{"/functions/v1/oauth-token", "requestEdgeFunctionToken"},
		{"/v1/oauth/token", "requestV1Token"},
	} {
		t.Run(alias.path, func(t *testing.T) {
			require.Contains(t, paths, alias.path)
			op := paths[alias.path].(map[string]any)["post"].(map[string]any)
			assert.Equal(t, alias.operationID, op["operationId"])
			assert.Equal(t, []any{"OAuth"}, op["tags"])
			schema := op["requestBody"].(map[string]any)["content"].(map[string]any)["application/x-www-form-urlencoded"].(map[string]any)["schema"]
			assert.Equal(t, map[string]any{"$ref": "#/components/schemas/ClientCredentialsTokenRequest"}, schema)

			res, tok := postForm(t, base+alias.path, url.Values{"grant_type": {"client_credentials"}}, clientID, secret)
			require.Equal(t, http.StatusOK, res.StatusCode, tok)
			assert.Equal(t, 3600.0, tok["expires_in"])
			assert.Equal(t, org, tok["organization_id"])
			res, refused := postForm(t, base+alias.path, url.Values{"grant_type": {"refresh_token"}, "refresh_token": {"x"}}, clientID, secret)
			assert.Equal(t, http.StatusBadRequest, res.StatusCode)
			assert.Equal(t, "unsupported_grant_type", refused["error"])
			res, _ = get(t, http.MethodGet, base+alias.path)
			assert.Equal(t, http.StatusNotFound, res.StatusCode, "POST only, as before")
		})
	}
	require.NoError(t, stop())
}

// openAPIDocument returns the document "waybill openapi" prints.
func openAPIDocument(t *testing.T) map[string]any {
	t.Helper()
	var out bytes.Buffer
	require.NoError(t, run(t.Context(), []string{"openapi"}, env(nil), &out, &out))
	var doc map[string]any
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc))
	return doc
}

// Every number of the document is a double and every integer says its
// size, so that generators pick float64 and int32 or int64 (not float32,
// which would send 123456.789 as 123456.79).
func TestOpenAPINumberFormats(t *testing.T) {
	t.Parallel()
	doc := openAPIDocument(t)
	formats := map[string][]string{"number": {"double"}, "integer": {"int32", "int64"}}
	numbers := 0
	var walk func(v any, at string)
	walk = func(v any, at string) {
		switch v := v.(type) {
		case map[string]any:
			types, _ := v["type"].([]any)
			if s, ok := v["type"].(string); ok {
				types = []any{s}
			}
			for _, typ := range types {
				if want, ok := formats[typ.(string)]; ok {
					numbers++
					assert.Contains(t, want, v["format"], "%s: a %s of format %v", at, typ, v["format"])
				}
			}
			for k, e := range v {
				walk(e, at+"/"+k)
			}
		case []any:
			for i, e := range v {
				walk(e, at+"/"+strconv.Itoa(i))
			}
		}
	}
	walk(doc, "#")
	assert.Greater(t, numbers, 100, "the walk found the numbers")
}

// Every operation that needs the database documents 503
// temporarily_unavailable with Retry-After.
func TestOpenAPIUnavailable(t *testing.T) {
	t.Parallel()
	doc := openAPIDocument(t)
	without := map[string]bool{"getAuthorizationServerMetadata": true, "getJSONWebKeySet": true, "authorize": true, "getOpenIDConfiguration": true}
	for path, item := range doc["paths"].(map[string]any) {
		for method, op := range item.(map[string]any) {
			if method == "parameters" {
				continue
			}
			id := op.(map[string]any)["operationId"].(string)
			got := op.(map[string]any)["responses"].(map[string]any)["503"]
			if without[id] {
				assert.Nil(t, got, "%s %s (%s) needs no database", method, path, id)
				continue
			}
			assert.Equal(t, map[string]any{"$ref": "#/components/responses/Unavailable"}, got, "%s %s (%s)", method, path, id)
		}
	}
	unavailable, ok := doc["components"].(map[string]any)["responses"].(map[string]any)["Unavailable"].(map[string]any)
	require.True(t, ok, "the response component Unavailable")
	assert.Contains(t, unavailable["description"], "`temporarily_unavailable`")
	assert.Equal(t, map[string]any{"$ref": "#/components/headers/Retry-After"}, unavailable["headers"].(map[string]any)["Retry-After"])
}
