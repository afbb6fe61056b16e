package main

import (
	"bytes"
	"encoding/json"
	"net/http"
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
