package oauth_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/oauth/bearer"
)

const testIssuer = "https://issuer.test"

func testKey(id string, fill byte) bearer.Key {
	return bearer.Key{ID: id, Secret: []byte(strings.Repeat(string([]byte{fill}), 32))}
}

func mustKeySet(t testing.TB, current bearer.Key, previous ...bearer.Key) *bearer.KeySet {
	ks, err := bearer.NewKeySet(current, previous...)
	require.NoError(t, err)
	return ks
}

func ccClaims(now time.Time) *bearer.Claims {
	return &bearer.Claims{
		Issuer: testIssuer, Subject: "app-1", Audience: bearer.Audience, Role: bearer.Role,
		IssuedAt: now.Unix(), ExpiresAt: now.Add(time.Hour).Unix(), ID: "jti-1",
		OrganizationID: "org-1", ClientID: "client-1", Scopes: []string{"svc:orders:read"},
		BranchIDs: []string{"b1"}, AppName: "Sync", Grant: bearer.GrantClientCredentials,
	}
}

// rawToken assembles a token from a header and claims by hand, signed with
// secret under HS256 (or unsigned when secret is nil).
func rawToken(t *testing.T, header map[string]any, claims any, secret []byte) string {
	t.Helper()
	enc := func(v any) string {
		b, err := json.Marshal(v)
		require.NoError(t, err)
		return base64.RawURLEncoding.EncodeToString(b)
	}
	signing := enc(header) + "." + enc(claims)
	if secret == nil {
		return signing + "."
	}
	m := hmac.New(sha256.New, secret)
	m.Write([]byte(signing))
	return signing + "." + base64.RawURLEncoding.EncodeToString(m.Sum(nil))
}
