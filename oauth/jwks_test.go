package oauth_test

import (
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/oauth/bearer"
)

// The server publishes its public keys at /.well-known/jwks.json and names
// them in its metadata, only when it has any: an HS256 server has none.
func TestJWKSEndpoint(t *testing.T) {
	get := func(t *testing.T, h http.Handler, path string, header http.Header) *http.Response {
		req := httptest.NewRequest(http.MethodGet, path, nil)
		for k, v := range header {
			req.Header[k] = v
		}
		rec := httptest.NewRecorder()
		h.ServeHTTP(rec, req)
		return rec.Result()
	}
	metadata := func(t *testing.T, h http.Handler) map[string]any {
		resp := get(t, h, oauth.PathMetadata, nil)
		require.Equal(t, http.StatusOK, resp.StatusCode)
		var m map[string]any
		require.NoError(t, json.NewDecoder(resp.Body).Decode(&m))
		return m
	}

	t.Run("HS256", func(t *testing.T) {
		keys, err := bearer.NewKeySet(bearer.SecretKey(make([]byte, 32)))
		require.NoError(t, err)
		h := (&oauth.Server{Issuer: testIssuer, Keys: keys}).Handler()
		assert.NotContains(t, metadata(t, h), "jwks_uri")
		resp := get(t, h, oauth.PathJWKS, nil)
		assert.Equal(t, http.StatusNotFound, resp.StatusCode)
		body, _ := io.ReadAll(resp.Body)
		assert.Contains(t, string(body), "not_found")
	})

	for _, alg := range []string{bearer.ES256, bearer.EdDSA} {
		t.Run(alg, func(t *testing.T) {
			current, err := bearer.GenerateKeyFor(alg)
			require.NoError(t, err)
			previous, err := bearer.GenerateKeyFor(bearer.HS256)
			require.NoError(t, err)
			keys, err := bearer.NewKeySet(current, previous)
			require.NoError(t, err)
			srv := &oauth.Server{Issuer: testIssuer, Keys: keys, Paths: oauth.Paths{JWKS: "/keys.json"}}
			h := srv.Handler()
			assert.Equal(t, testIssuer+"/keys.json", metadata(t, h)["jwks_uri"])

			resp := get(t, h, "/keys.json", nil)
			require.Equal(t, http.StatusOK, resp.StatusCode)
			assert.Equal(t, "public, max-age=300", resp.Header.Get("Cache-Control"))
			assert.Equal(t, "application/jwk-set+json", resp.Header.Get("Content-Type"))
			etag := resp.Header.Get("ETag")
			assert.Regexp(t, `^"[A-Za-z0-9_-]+"$`, etag)
			var set jose.JSONWebKeySet
			require.NoError(t, json.NewDecoder(resp.Body).Decode(&set))
			require.Len(t, set.Keys, 1, "the HS256 key is never published")
			assert.Equal(t, current.ID, set.Keys[0].KeyID)
			assert.Equal(t, alg, set.Keys[0].Algorithm)
			assert.True(t, set.Keys[0].IsPublic())

			again := get(t, h, "/keys.json", http.Header{"If-None-Match": {`"other", ` + etag}})
			assert.Equal(t, http.StatusNotModified, again.StatusCode)
			assert.Equal(t, etag, again.Header.Get("ETag"))
			assert.Equal(t, http.StatusOK, get(t, h, "/keys.json", http.Header{"If-None-Match": {`"other"`}}).StatusCode)

			// A service verifies the server's tokens against the published set.
			tms := httptest.NewServer(h)
			defer tms.Close()
			now := time.Now()
			token, err := keys.Sign(&bearer.Claims{Issuer: testIssuer, Subject: "app", Audience: bearer.Audience, Role: bearer.Role,
				IssuedAt: now.Unix(), ExpiresAt: now.Add(time.Hour).Unix(), ID: "j", OrganizationID: "o", ClientID: "c", BranchIDs: []string{}})
			require.NoError(t, err)
			v := &bearer.Verifier{Source: &bearer.RemoteKeys{URL: tms.URL + "/keys.json", Client: tms.Client()}, Issuer: testIssuer}
			c, err := v.Verify(t.Context(), token)
			require.NoError(t, err)
			assert.Equal(t, "c", c.ClientID)
		})
	}
}
