package main

import (
	"bytes"
	"encoding/json"
	"net/http"
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
	for _, r := range resources() {
		assert.Contains(t, paths, "/v1/{scopeId}/"+r.Name)
		assert.Contains(t, paths, "/v1/{scopeId}/"+r.Name+"/{id}")
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
