package bearer_test

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"
	"github.com/google/uuid"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	apierrors "github.com/waybillhq/waybill/errors"
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

func TestNewKeySet(t *testing.T) {
	_, err := bearer.NewKeySet(bearer.Key{ID: "k", Secret: make([]byte, 31)})
	assert.ErrorContains(t, err, "at least 32")
	_, err = bearer.NewKeySet(bearer.Key{Secret: make([]byte, 32)})
	assert.ErrorContains(t, err, "needs an id")
	_, err = bearer.NewKeySet(testKey("k", 1), testKey("k", 2))
	assert.ErrorContains(t, err, "used twice")
	k, err := bearer.GenerateKey()
	require.NoError(t, err)
	assert.Len(t, k.Secret, 32)
	id, err := uuid.Parse(k.ID)
	require.NoError(t, err, "the key id is a UUID")
	assert.Equal(t, uuid.Version(7), id.Version())
}

func TestVerify(t *testing.T) {
	now := time.Now()
	current, old, stranger := testKey("k2", 2), testKey("k1", 1), testKey("k1", 9)
	ks := mustKeySet(t, current, old)
	v := &bearer.Verifier{Keys: ks, Issuer: testIssuer}

	good, err := ks.Sign(ccClaims(now))
	require.NoError(t, err)
	c, err := v.Verify(context.Background(), good)
	require.NoError(t, err)
	assert.Equal(t, "app-1", c.Subject)
	assert.True(t, c.ClientCredentials())
	assert.Equal(t, []string{"b1"}, c.BranchIDs)

	signedBy := func(k bearer.Key, mutate func(*bearer.Claims)) string {
		cl := ccClaims(now)
		if mutate != nil {
			mutate(cl)
		}
		s, err := mustKeySet(t, k).Sign(cl)
		require.NoError(t, err)
		return s
	}
	header := map[string]any{"alg": "HS256", "typ": "JWT", "kid": "k2"}
	tamperedPayload := func() string {
		parts := strings.Split(good, ".")
		cl := ccClaims(now)
		cl.OrganizationID = "org-2"
		b, _ := json.Marshal(cl)
		return parts[0] + "." + base64.RawURLEncoding.EncodeToString(b) + "." + parts[2]
	}

	cases := []struct {
		name  string
		token string
		want  string
	}{
		{"signed by a previous key", signedBy(old, nil), ""},
		{"unknown kid", signedBy(testKey("k9", 2), nil), "unknown key"},
		{"known kid, wrong secret", signedBy(stranger, nil), "signature is invalid"},
		{"expired", signedBy(current, func(c *bearer.Claims) { c.ExpiresAt = now.Add(-time.Second).Unix() }), "expired"},
		{"no exp", rawToken(t, header, map[string]any{"iss": testIssuer, "sub": "x", "aud": "authenticated", "jti": "j"}, current.Secret), "required claim"},
		{"wrong audience", signedBy(current, func(c *bearer.Claims) { c.Audience = "service_role" }), "audience"},
		{"wrong issuer", signedBy(current, func(c *bearer.Claims) { c.Issuer = "https://evil.test" }), "issuer"},
		{"no subject", signedBy(current, func(c *bearer.Claims) { c.Subject = "" }), "sub or jti"},
		{"alg none", rawToken(t, map[string]any{"alg": "none", "typ": "JWT", "kid": "k2"}, ccClaims(now), nil), "algorithm other than its key's"},
		{"alg none with a signature", rawToken(t, map[string]any{"alg": "none", "kid": "k2"}, ccClaims(now), current.Secret), "algorithm other than its key's"},
		{"alg HS512 with the right key", func() string {
			tok := jwt.NewWithClaims(jwt.SigningMethodHS512, ccClaims(now))
			tok.Header["kid"] = "k2"
			s, err := tok.SignedString(current.Secret)
			require.NoError(t, err)
			return s
		}(), "algorithm other than its key's"},
		{"alg RS256 header over an HMAC signature", rawToken(t, map[string]any{"alg": "RS256", "kid": "k2"}, ccClaims(now), current.Secret), "algorithm other than its key's"},
		{"tampered payload", tamperedPayload(), "signature is invalid"},
		{"malformed", "not.a.jwt", "malformed"},
		{"empty", "", "malformed"},
		{"two parts", "abc.def", "malformed"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := v.Verify(context.Background(), tc.token)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			require.Error(t, err)
			e, ok := apierrors.As(err)
			require.True(t, ok)
			assert.Equal(t, apierrors.CodeInvalidToken, e.Code)
			assert.Equal(t, 401, e.Status)
			assert.Contains(t, e.Description, tc.want)
			assert.Contains(t, e.Header.Get("WWW-Authenticate"), "Bearer")
			assert.NotContains(t, e.Description, tc.token[:min(len(tc.token), 20)]+"x", "the token is never echoed")
		})
	}
}

func TestClaimsJSON(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	cc := ccClaims(now)
	cc.BranchIDs = nil
	b, err := json.Marshal(cc)
	require.NoError(t, err)
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	assert.Equal(t, []any{}, m["oauth_branch_ids"], "a client-credentials token always names its branches, even none")
	assert.Equal(t, "authenticated", m["aud"])
	for _, k := range []string{"iss", "sub", "aud", "role", "exp", "iat", "jti", "organization_id", "oauth_client_id", "oauth_scopes", "oauth_branch_ids", "oauth_app_name", "oauth_grant_type", "client_id", "scope"} {
		assert.Contains(t, m, k)
	}
	assert.Len(t, m, 15)
	assert.Equal(t, "client-1", m["client_id"], "RFC 9068 client_id repeats oauth_client_id")
	assert.Equal(t, "svc:orders:read", m["scope"])
	assert.Equal(t, "client_credentials", m["oauth_grant_type"])

	code := &bearer.Claims{Issuer: testIssuer, Subject: "u", Audience: "authenticated", Role: "authenticated",
		IssuedAt: now.Unix(), ExpiresAt: now.Unix() + 3600, ID: "fam.x", OrganizationID: "o", ClientID: "c",
		Grant: bearer.GrantAuthorizationCode}
	b, err = json.Marshal(code)
	require.NoError(t, err)
	m = nil
	require.NoError(t, json.Unmarshal(b, &m))
	assert.Equal(t, []any{}, m["oauth_scopes"])
	assert.NotContains(t, m, "oauth_branch_ids", "an authorization-code token sees every branch")
	assert.NotContains(t, m, "oauth_app_name")
	assert.Equal(t, "authorization_code", m["oauth_grant_type"])
	assert.Len(t, m, 13)
	assert.Equal(t, "", m["scope"])
	assert.Equal(t, "fam", code.FamilyID())

	user := &bearer.Claims{Issuer: testIssuer, Subject: "u", Audience: "authenticated", Role: "authenticated", ID: "j"}
	b, err = json.Marshal(user)
	require.NoError(t, err)
	assert.NotContains(t, string(b), "oauth_")
	assert.False(t, user.OAuth())
	assert.Empty(t, user.FamilyID())
}

func TestSecretKey(t *testing.T) {
	a := bearer.SecretKey([]byte(strings.Repeat("a", 32)))
	assert.Equal(t, a, bearer.SecretKey([]byte(strings.Repeat("a", 32))), "every holder of the secret names it alike")
	assert.NotEqual(t, a.ID, bearer.SecretKey([]byte(strings.Repeat("b", 32))).ID)
	assert.Regexp(t, `^s-[0-9a-f]{12}$`, a.ID)
	assert.NotContains(t, a.ID, "aaaa", "the id does not reveal the secret")
	_, err := bearer.NewKeySet(bearer.SecretKey([]byte("short")))
	assert.ErrorContains(t, err, "at least 32")
}

// families is a FamilyChecker over a set of revoked families.
type families map[string]bool

func (f families) FamilyRevoked(_ context.Context, id string) (bool, error) {
	if id == "broken" {
		return false, errors.New("store down")
	}
	return f[id], nil
}

// A Verifier reads its fields at every call: there is no state built once
// that a later change would leave stale.
func TestVerifierFields(t *testing.T) {
	now := time.Unix(1_700_000_000, 0) // long past
	key := testKey("k", 4)
	ks := mustKeySet(t, key)
	sign := func(mutate func(*bearer.Claims)) string {
		c := ccClaims(now)
		if mutate != nil {
			mutate(c)
		}
		s, err := ks.Sign(c)
		require.NoError(t, err)
		return s
	}
	code := func(jti string) string {
		return sign(func(c *bearer.Claims) {
			c.ID, c.BranchIDs, c.AppName, c.Grant = jti, nil, "", bearer.GrantAuthorizationCode
		})
	}
	clock := func(t time.Time) func() time.Time { return func() time.Time { return t } }

	cases := []struct {
		name   string
		v      bearer.Verifier
		token  string
		status int // 0: accepted
		want   string
	}{
		{"issuer and clock set", bearer.Verifier{Keys: ks, Issuer: testIssuer, Now: clock(now)}, sign(nil), 0, ""},
		{"the clock decides expiry", bearer.Verifier{Keys: ks, Issuer: testIssuer, Now: clock(now.Add(2 * time.Hour))}, sign(nil), 401, "expired"},
		{"a zero Now is the wall clock", bearer.Verifier{Keys: ks, Issuer: testIssuer}, sign(nil), 401, "expired"},
		{"another issuer", bearer.Verifier{Keys: ks, Issuer: "https://other.test", Now: clock(now)}, sign(nil), 401, "issuer"},
		{"no issuer", bearer.Verifier{Keys: ks, Now: clock(now)}, sign(nil), 500, ""},
		{"no keys", bearer.Verifier{Issuer: testIssuer, Now: clock(now)}, sign(nil), 500, ""},
		{"a live family", bearer.Verifier{Keys: ks, Issuer: testIssuer, Now: clock(now), Families: families{"gone": true}}, code("live.x"), 0, ""},
		{"a revoked family", bearer.Verifier{Keys: ks, Issuer: testIssuer, Now: clock(now), Families: families{"gone": true}}, code("gone.x"), 401, "revoked"},
		{"a revoked family, unchecked", bearer.Verifier{Keys: ks, Issuer: testIssuer, Now: clock(now)}, code("gone.x"), 0, ""},
		{"the family check fails", bearer.Verifier{Keys: ks, Issuer: testIssuer, Now: clock(now), Families: families{}}, code("broken.x"), 500, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			c, err := tc.v.Verify(context.Background(), tc.token)
			if tc.status == 0 {
				require.NoError(t, err)
				assert.Equal(t, testIssuer, c.Issuer)
				return
			}
			e, ok := apierrors.As(err)
			require.True(t, ok, "%v", err)
			assert.Equal(t, tc.status, e.Status)
			assert.Contains(t, e.Description, tc.want)
		})
	}

	v := &bearer.Verifier{Keys: ks, Issuer: testIssuer, Now: clock(now)}
	_, err := v.Verify(context.Background(), sign(nil))
	require.NoError(t, err)
	v.Issuer = "https://other.test"
	_, err = v.Verify(context.Background(), sign(nil))
	assert.ErrorContains(t, err, "another issuer", "a changed Issuer takes effect at the next call")
}

func TestDerive(t *testing.T) {
	a, b := mustKeySet(t, testKey("a", 1)), mustKeySet(t, testKey("b", 2), testKey("a", 1))
	assert.Len(t, a.Derive("session"), 32)
	assert.Equal(t, a.Derive("session"), mustKeySet(t, testKey("a", 1)).Derive("session"), "the same key derives alike")
	assert.NotEqual(t, a.Derive("session"), a.Derive("csrf"), "one key per purpose")
	assert.NotEqual(t, a.Derive("session"), b.Derive("session"), "rotating the signing key rotates the derived keys")
	assert.NotEqual(t, testKey("a", 1).Secret, a.Derive(""), "never the signing key itself")
}

// Sign writes, byte for byte, the token golang-jwt's own SignedString makes
// of the same claims and kid.
func TestSignMatchesGolangJWT(t *testing.T) {
	t.Parallel()
	keys, err := bearer.NewKeySet(bearer.SecretKey([]byte(strings.Repeat("s", 32))))
	require.NoError(t, err)
	for _, c := range []*bearer.Claims{
		{Issuer: "https://i.test", Subject: "app", Audience: bearer.Audience, Role: bearer.Role, IssuedAt: 1, ExpiresAt: 3601,
			ID: "j", OrganizationID: "o", ClientID: "c", Scopes: []string{"svc:a:read"}, BranchIDs: []string{}, AppName: "A \"quoted\" <app>",
			Grant: bearer.GrantClientCredentials},
		{Issuer: "https://i.test", Subject: "user", Audience: bearer.Audience, Role: bearer.Role, IssuedAt: 1, ExpiresAt: 3601,
			ID: "f.r", OrganizationID: "o", ClientID: "c", Scopes: []string{"svc:a:read", "svc:a:write"}, Grant: bearer.GrantAuthorizationCode},
		{Issuer: "https://i.test", Subject: "user", Audience: bearer.Audience, Role: bearer.Role, IssuedAt: 1, ExpiresAt: 3601, ID: "u"},
	} {
		got, err := keys.Sign(c)
		require.NoError(t, err)
		tok := jwt.NewWithClaims(jwt.SigningMethodHS256, c)
		tok.Header["kid"] = bearer.SecretKey([]byte(strings.Repeat("s", 32))).ID
		if c.OAuth() {
			tok.Header["typ"] = "at+jwt" // RFC 9068 section 2.1
		}
		want, err := tok.SignedString([]byte(strings.Repeat("s", 32)))
		require.NoError(t, err)
		assert.Equal(t, want, got)
	}
}
