package protectedresource_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/protectedresource"
)

func TestMetadataURL(t *testing.T) {
	t.Parallel()
	tests := []struct {
		resource, want string
	}{
		{"https://api.example.com", "https://api.example.com/.well-known/oauth-protected-resource"},
		{"https://api.example.com/", "https://api.example.com/.well-known/oauth-protected-resource"},
		{"https://example.com/api/v1", "https://example.com/.well-known/oauth-protected-resource/api/v1"},
		{"https://example.com/api/v1/", "https://example.com/.well-known/oauth-protected-resource/api/v1"},
		{"http://127.0.0.1:8080", "http://127.0.0.1:8080/.well-known/oauth-protected-resource"},
		{"https://example.com/a%20b", "https://example.com/.well-known/oauth-protected-resource/a%20b"},
	}
	for _, tc := range tests {
		t.Run(tc.resource, func(t *testing.T) {
			t.Parallel()
			got, err := protectedresource.MetadataURL(tc.resource)
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
	for _, bad := range []string{"", "api.example.com", "/v1", "ftp://example.com", "https://example.com/?a=b", "https://example.com/#x", "https://example.com#", "https://u:p@example.com", "https://"} {
		_, err := protectedresource.MetadataURL(bad)
		assert.ErrorIs(t, err, protectedresource.ErrInvalidResource, "%q", bad)
	}
}

func TestHandler(t *testing.T) {
	t.Parallel()
	h := protectedresource.Handler(protectedresource.Metadata{
		Resource:               "https://api.example.com",
		AuthorizationServers:   []string{"https://auth.example.com"},
		ScopesSupported:        []string{"svc:orders:read", "svc:orders:write"},
		BearerMethodsSupported: []string{"header"},
		ResourceDocumentation:  "https://api.example.com/v1/openapi.json",
	})

	t.Run("GET", func(t *testing.T) {
		t.Parallel()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, protectedresource.WellKnownPath, nil))
		require.Equal(t, http.StatusOK, rec.Code)
		assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
		assert.Equal(t, protectedresource.CacheControl, rec.Header().Get("Cache-Control"))
		// RFC 9728 section 2: the parameters by name, empty ones left out.
		var doc map[string]any
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &doc))
		assert.Equal(t, map[string]any{
			"resource":                 "https://api.example.com",
			"authorization_servers":    []any{"https://auth.example.com"},
			"scopes_supported":         []any{"svc:orders:read", "svc:orders:write"},
			"bearer_methods_supported": []any{"header"},
			"resource_documentation":   "https://api.example.com/v1/openapi.json",
		}, doc)
	})
	t.Run("HEAD", func(t *testing.T) {
		t.Parallel()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodHead, protectedresource.WellKnownPath, nil))
		assert.Equal(t, http.StatusOK, rec.Code)
		assert.Empty(t, rec.Body.String())
	})
	t.Run("POST", func(t *testing.T) {
		t.Parallel()
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, httptest.NewRequest(http.MethodPost, protectedresource.WellKnownPath, nil))
		assert.Equal(t, http.StatusMethodNotAllowed, rec.Code)
		assert.Equal(t, "GET, HEAD", rec.Header().Get("Allow"))
	})
	t.Run("jwks_uri when set", func(t *testing.T) {
		t.Parallel()
		rec := httptest.NewRecorder()
		protectedresource.Handler(protectedresource.Metadata{Resource: "https://a", JWKSURI: "https://a/jwks.json"}).
			ServeHTTP(rec, httptest.NewRequest(http.MethodGet, protectedresource.WellKnownPath, nil))
		assert.JSONEq(t, `{"resource":"https://a","jwks_uri":"https://a/jwks.json"}`, rec.Body.String())
	})
}
