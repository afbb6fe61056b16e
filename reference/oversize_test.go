package main

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/url"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/oauth"
)

// TestOversizeOAuthBodies sends the token service bodies over its 64 KiB
// limit: every endpoint that reads a body, JSON or form, answers 413
// payload_too_large in the RFC 6749 error shape, and the document says so.
func TestOversizeOAuthBodies(t *testing.T) {
	t.Parallel()
	db := backends()[0].url(t) // SQLite
	base, c := rvServed(t, db)

	res, signIn := postJSON(t, base+"/auth/v1/token?grant_type=password", map[string]string{"email": c.email, "password": c.password}, "")
	require.Equal(t, http.StatusOK, res.StatusCode, signIn)
	userToken := signIn["access_token"].(string)

	big := strings.Repeat("x", 64<<10)
	for _, tc := range []struct {
		name, path, contentType, body, bearer string
	}{
		{"app registration", oauth.PathApps, "application/json", `{"organization_id":"` + c.org + `","name":"` + big + `"}`, userToken},
		{"secret rotation", oauth.PathApps + "/" + c.clientID + "/rotate-secret", "application/json", `{"revoke_tokens":false,"x":"` + big + `"}`, userToken},
		{"token, form", oauth.PathToken, "application/x-www-form-urlencoded", url.Values{"grant_type": {"client_credentials"}, "scope": {big}}.Encode(), ""},
		{"revocation, JSON", oauth.PathRevoke, "application/json", `{"token":"` + big + `"}`, ""},
	} {
		t.Run(tc.name, func(t *testing.T) {
			req, err := http.NewRequestWithContext(t.Context(), http.MethodPost, base+tc.path, strings.NewReader(tc.body))
			require.NoError(t, err)
			req.Header.Set("Content-Type", tc.contentType)
			if tc.bearer != "" {
				req.Header.Set("Authorization", "Bearer "+tc.bearer)
			} else {
				req.SetBasicAuth(c.clientID, c.secret)
			}
			res, err := http.DefaultClient.Do(req)
			require.NoError(t, err)
			defer res.Body.Close()
			var body map[string]any
			require.NoError(t, json.NewDecoder(res.Body).Decode(&body))
			assert.Equal(t, http.StatusRequestEntityTooLarge, res.StatusCode, "%v", body)
			assert.Equal(t, "payload_too_large", body["error"])
			assert.Equal(t, "request body is larger than 65536 bytes", body["error_description"])
		})
	}

	var out bytes.Buffer
	require.NoError(t, run(t.Context(), []string{"openapi"}, env(nil), &out, &out))
	var doc struct {
		Paths map[string]struct {
			Post struct {
				Responses map[string]any `json:"responses"`
			} `json:"post"`
		} `json:"paths"`
	}
	require.NoError(t, json.Unmarshal(out.Bytes(), &doc))
	for _, path := range []string{oauth.PathApps, oauth.PathApps + "/{client_id}/rotate-secret", oauth.PathToken, oauth.PathRevoke, oauth.PathIntrospect} {
		assert.Equal(t, map[string]any{"$ref": "#/components/responses/OAuthPayloadTooLarge"}, doc.Paths[path].Post.Responses["413"], path)
	}
}
