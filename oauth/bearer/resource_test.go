package bearer_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/oauth/bearer"
)

// A token issued for a resource indicator (RFC 8707) carries aud
// ["authenticated", resource]: it verifies, with Claims.Resource set, in a
// Verifier of that resource or of none; one for another resource, with
// two resources, without "authenticated", or a product user token naming
// a resource, is refused.
func TestResourceAudience(t *testing.T) {
	t.Parallel()
	now := time.Now()
	current := testKey("k2", 'b')
	ks := mustKeySet(t, current)
	const api = "https://tms.example.com"
	header := map[string]any{"alg": "HS256", "typ": "at+jwt", "kid": "k2"}
	claims := func(aud any) map[string]any {
		b, err := json.Marshal(ccClaims(now))
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m))
		m["aud"] = aud
		return m
	}
	user := map[string]any{"iss": testIssuer, "sub": "u", "jti": "j", "exp": now.Add(time.Hour).Unix(), "aud": []string{"authenticated", api}}
	tests := []struct {
		name         string
		token        string
		resource     string // the Verifier's
		want         string // the Claims.Resource, or the error
		wantAccepted bool
	}{
		{"signed with a resource", sign(t, ks, api), api, api, true},
		{"in a verifier of no resource", sign(t, ks, api), "", api, true},
		{"without a resource", sign(t, ks, ""), api, "", true},
		{"aud as a one-element array", rawToken(t, header, claims([]string{"authenticated"}), current.Secret), api, "", true},
		{"resource first", rawToken(t, header, claims([]string{api, "authenticated"}), current.Secret), api, api, true},
		{"another resource", sign(t, ks, "https://other.example"), api, "another resource", false},
		{"two resources", rawToken(t, header, claims([]string{"authenticated", api, "https://other.example"}), current.Secret), "", "more than one resource", false},
		{"without authenticated", rawToken(t, header, claims([]string{api}), current.Secret), api, "audience", false},
		{"a product user token with a resource", rawToken(t, map[string]any{"alg": "HS256", "typ": "JWT", "kid": "k2"}, user, current.Secret), "", "names a resource", false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			v := &bearer.Verifier{Keys: ks, Issuer: testIssuer, Resource: tt.resource}
			c, err := v.Verify(t.Context(), tt.token)
			if !tt.wantAccepted {
				require.Error(t, err)
				assert.Equal(t, apierrors.CodeInvalidToken, apierrors.CodeOf(err))
				assert.Contains(t, err.Error(), tt.want)
				return
			}
			require.NoError(t, err)
			assert.Equal(t, bearer.Audience, c.Audience)
			assert.Equal(t, tt.want, c.Resource)
		})
	}
}

// sign signs the claims of a client-credentials token for resource.
func sign(t *testing.T, ks *bearer.KeySet, resource string) string {
	t.Helper()
	c := ccClaims(time.Now())
	c.Resource = resource
	token, err := ks.Sign(c)
	require.NoError(t, err)
	return token
}

// The aud claim is "authenticated" alone, or an array with the resource,
// as GetAudience says.
func TestResourceAudienceJSON(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		resource, json string
		aud            []string
	}{
		{"", `"authenticated"`, []string{"authenticated"}},
		{"https://tms.example.com", `["authenticated","https://tms.example.com"]`, []string{"authenticated", "https://tms.example.com"}},
	} {
		c := ccClaims(time.Now())
		c.Resource = tt.resource
		b, err := json.Marshal(c)
		require.NoError(t, err)
		var m map[string]json.RawMessage
		require.NoError(t, json.Unmarshal(b, &m))
		assert.Equal(t, tt.json, string(m["aud"]))
		aud, err := c.GetAudience()
		require.NoError(t, err)
		assert.Equal(t, tt.aud, []string(aud))
	}
}
