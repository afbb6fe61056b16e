package bearer_test

import (
	"context"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"encoding/json"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	josejwt "github.com/go-jose/go-jose/v4/jwt"
	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/oauth/bearer"
)

// genKey returns a new key of alg named id.
func genKey(t testing.TB, alg, id string) bearer.Key {
	t.Helper()
	k, err := bearer.GenerateKeyFor(alg)
	require.NoError(t, err)
	k.ID = id
	return k
}

// headerOf returns the decoded JOSE header of token.
func headerOf(t *testing.T, token string) map[string]any {
	t.Helper()
	tok, _, err := jwt.NewParser().ParseUnverified(token, jwt.MapClaims{})
	require.NoError(t, err)
	return tok.Header
}

func TestGenerateKeyFor(t *testing.T) {
	for _, alg := range []string{bearer.HS256, bearer.ES256, bearer.EdDSA} {
		k, err := bearer.GenerateKeyFor(alg)
		require.NoError(t, err)
		assert.Equal(t, alg, k.Alg())
		ks := mustKeySet(t, k)
		assert.Equal(t, alg, ks.Alg())
		assert.Len(t, ks.Derive("session"), 32)
	}
	_, err := bearer.GenerateKeyFor("RS256")
	assert.ErrorContains(t, err, "unknown algorithm")
	k, err := bearer.GenerateKey()
	require.NoError(t, err)
	assert.Equal(t, bearer.HS256, k.Alg(), "GenerateKey still makes HS256 keys")

	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	require.NoError(t, err)
	_, err = bearer.NewKeySet(bearer.Key{ID: "p384", Private: p384})
	assert.ErrorContains(t, err, "neither", "only P-256 is ES256")
	ec := genKey(t, bearer.ES256, "both")
	ec.Secret = make([]byte, 32)
	_, err = bearer.NewKeySet(ec)
	assert.ErrorContains(t, err, "neither", "a key is a secret or a private key, not both")
	_, err = bearer.NewKeySet(bearer.Key{ID: "nil", Private: (*ecdsa.PrivateKey)(nil)})
	assert.ErrorContains(t, err, "neither")
	_, err = bearer.NewKeySet(bearer.Key{ID: "short", Private: ed25519.PrivateKey(make([]byte, 10))})
	assert.ErrorContains(t, err, "neither")
	assert.NotEqual(t, mustKeySet(t, genKey(t, bearer.EdDSA, "a")).Derive("x"), mustKeySet(t, genKey(t, bearer.EdDSA, "a")).Derive("x"))
}

// Every algorithm signs and verifies; OAuth access tokens are typed
// at+jwt, product user tokens JWT.
func TestSignVerifyAlgorithms(t *testing.T) {
	now := time.Now()
	for _, alg := range []string{bearer.HS256, bearer.ES256, bearer.EdDSA} {
		t.Run(alg, func(t *testing.T) {
			ks := mustKeySet(t, genKey(t, alg, "k-"+alg))
			v := &bearer.Verifier{Keys: ks, Issuer: testIssuer}
			token, err := ks.Sign(ccClaims(now))
			require.NoError(t, err)
			assert.Equal(t, map[string]any{"alg": alg, "kid": "k-" + alg, "typ": "at+jwt"}, headerOf(t, token))
			c, err := v.Verify(context.Background(), token)
			require.NoError(t, err)
			assert.Equal(t, "client-1", c.ClientID)

			user, err := ks.Sign(&bearer.Claims{Issuer: testIssuer, Subject: "u", Audience: bearer.Audience, Role: bearer.Role,
				IssuedAt: now.Unix(), ExpiresAt: now.Add(time.Hour).Unix(), ID: "j"})
			require.NoError(t, err)
			assert.Equal(t, "JWT", headerOf(t, user)["typ"])
			_, err = v.Verify(context.Background(), user)
			require.NoError(t, err)
		})
	}
}

// signWith signs claims with golang-jwt under method and key, with header
// fields set (a nil value deletes the field).
func signWith(t *testing.T, method jwt.SigningMethod, key any, claims any, header map[string]any) string {
	t.Helper()
	var tok *jwt.Token
	switch c := claims.(type) {
	case jwt.Claims:
		tok = jwt.NewWithClaims(method, c)
	default:
		b, err := json.Marshal(c)
		require.NoError(t, err)
		var m jwt.MapClaims
		require.NoError(t, json.Unmarshal(b, &m))
		tok = jwt.NewWithClaims(method, m)
	}
	for k, v := range header {
		if v == nil {
			delete(tok.Header, k)
		} else {
			tok.Header[k] = v
		}
	}
	s, err := tok.SignedString(key)
	require.NoError(t, err)
	return s
}

// The verifier takes the algorithm from the key its kid names, never from
// the token: every kind of algorithm confusion is refused.
func TestAlgorithmConfusion(t *testing.T) {
	now := time.Now()
	ec, ed, hs := genKey(t, bearer.ES256, "ec"), genKey(t, bearer.EdDSA, "ed"), testKey("hs", 7)
	ks := mustKeySet(t, ec, ed, hs)
	v := &bearer.Verifier{Keys: ks, Issuer: testIssuer}

	ecPub := ec.Private.Public().(*ecdsa.PublicKey)
	ecPoint, err := ecPub.Bytes()
	require.NoError(t, err)
	ecDER, err := x509.MarshalPKIXPublicKey(ecPub)
	require.NoError(t, err)
	edPub := []byte(ed.Private.Public().(ed25519.PublicKey))
	jwks, err := json.Marshal(ks.JWKS())
	require.NoError(t, err)
	other := genKey(t, bearer.ES256, "ec")

	// claims as the token service writes them, RFC 9068 claims included.
	claims := func(mutate func(map[string]any)) map[string]any {
		b, err := json.Marshal(ccClaims(now))
		require.NoError(t, err)
		var m map[string]any
		require.NoError(t, json.Unmarshal(b, &m))
		if mutate != nil {
			mutate(m)
		}
		return m
	}
	at := func(kid string) map[string]any { return map[string]any{"kid": kid, "typ": "at+jwt"} }
	hsWith := func(kid string, secret []byte) string {
		return signWith(t, jwt.SigningMethodHS256, secret, claims(nil), at(kid))
	}

	cases := []struct {
		name  string
		token string
		want  string // "" accepted
	}{
		{"ES256 by its key", signWith(t, jwt.SigningMethodES256, ec.Private, claims(nil), at("ec")), ""},
		{"EdDSA by a previous key", signWith(t, jwt.SigningMethodEdDSA, ed.Private, claims(nil), at("ed")), ""},
		{"HS256 by a previous key", hsWith("hs", hs.Secret), ""},
		{"application/at+jwt", signWith(t, jwt.SigningMethodES256, ec.Private, claims(nil), map[string]any{"kid": "ec", "typ": "application/at+jwt"}), ""},

		{"HS256 keyed with the EC point", hsWith("ec", ecPoint), "algorithm"},
		{"HS256 keyed with the EC public key's DER", hsWith("ec", ecDER), "algorithm"},
		{"HS256 keyed with the Ed25519 public key", hsWith("ed", edPub), "algorithm"},
		{"HS256 keyed with the published JWKS", hsWith("ec", jwks), "algorithm"},
		{"alg none", rawToken(t, map[string]any{"alg": "none", "typ": "at+jwt", "kid": "ec"}, claims(nil), nil), "algorithm"},
		{"alg none, no kid", rawToken(t, map[string]any{"alg": "none"}, claims(nil), nil), "algorithm"},
		{"ES256 naming the EdDSA key", signWith(t, jwt.SigningMethodES256, ec.Private, claims(nil), at("ed")), "algorithm"},
		{"EdDSA naming the ES256 key", signWith(t, jwt.SigningMethodEdDSA, ed.Private, claims(nil), at("ec")), "algorithm"},
		{"ES256 naming the HS256 key", signWith(t, jwt.SigningMethodES256, ec.Private, claims(nil), at("hs")), "algorithm"},
		{"ES384 header", rawToken(t, map[string]any{"alg": "ES384", "kid": "ec", "typ": "at+jwt"}, claims(nil), hs.Secret), "algorithm"},
		{"unknown kid", signWith(t, jwt.SigningMethodES256, ec.Private, claims(nil), at("nobody")), "unknown key"},
		{"no kid", signWith(t, jwt.SigningMethodES256, ec.Private, claims(nil), map[string]any{"typ": "at+jwt"}), "unknown key"},
		{"another key under the kid", signWith(t, jwt.SigningMethodES256, other.Private, claims(nil), at("ec")), "signature is invalid"},

		{"access token typed JWT", signWith(t, jwt.SigningMethodES256, ec.Private, claims(nil), map[string]any{"kid": "ec", "typ": "JWT"}), "at+jwt"},
		{"access token untyped", signWith(t, jwt.SigningMethodES256, ec.Private, claims(nil), map[string]any{"kid": "ec", "typ": nil}), "at+jwt"},
		{"HS256 access token typed JWT with client_id", signWith(t, jwt.SigningMethodHS256, hs.Secret, claims(nil), map[string]any{"kid": "hs", "typ": "JWT"}), "at+jwt"},
		{"HS256 access token typed JWT, signed before client_id", signWith(t, jwt.SigningMethodHS256, hs.Secret,
			claims(func(m map[string]any) { delete(m, "client_id"); delete(m, "scope") }), map[string]any{"kid": "hs", "typ": "JWT"}), ""},
		{"ES256 access token typed JWT, without client_id", signWith(t, jwt.SigningMethodES256, ec.Private,
			claims(func(m map[string]any) { delete(m, "client_id"); delete(m, "scope") }), map[string]any{"kid": "ec", "typ": "JWT"}), "at+jwt"},
		{"client_id differs", signWith(t, jwt.SigningMethodES256, ec.Private, claims(func(m map[string]any) { m["client_id"] = "client-2" }), at("ec")), "client_id"},
		{"scope differs", signWith(t, jwt.SigningMethodES256, ec.Private, claims(func(m map[string]any) { m["scope"] = "svc:orders:write" }), at("ec")), "scope"},
		{"user token typed at+jwt", signWith(t, jwt.SigningMethodES256, ec.Private, claims(func(m map[string]any) {
			for _, k := range []string{"oauth_client_id", "oauth_scopes", "oauth_branch_ids", "oauth_app_name", "oauth_grant_type", "client_id", "scope"} {
				delete(m, k)
			}
		}), at("ec")), "typed JWT"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := v.Verify(context.Background(), tc.token)
			if tc.want == "" {
				require.NoError(t, err)
				return
			}
			e, ok := apierrors.As(err)
			require.True(t, ok, "%v", err)
			assert.Equal(t, apierrors.CodeInvalidToken, e.Code)
			assert.Equal(t, 401, e.Status)
			assert.Contains(t, e.Description, tc.want)
		})
	}
}

// The JWKS holds the public keys, never an HS256 secret, and an
// independent JOSE library (go-jose) verifies the tokens against it.
func TestJWKS(t *testing.T) {
	assert.Empty(t, mustKeySet(t, testKey("hs", 1)).JWKS().Keys)
	b, err := json.Marshal(mustKeySet(t, testKey("hs", 1)).JWKS())
	require.NoError(t, err)
	assert.JSONEq(t, `{"keys":[]}`, string(b))

	ec, ed, hs := genKey(t, bearer.ES256, "ec"), genKey(t, bearer.EdDSA, "ed"), testKey("hs", 1)
	now := time.Now()
	for _, current := range []bearer.Key{ec, ed} {
		t.Run(current.Alg(), func(t *testing.T) {
			var previous []bearer.Key
			for _, k := range []bearer.Key{ec, ed, hs} {
				if k.ID != current.ID {
					previous = append(previous, k)
				}
			}
			ks := mustKeySet(t, current, previous...)
			b, err := json.Marshal(ks.JWKS())
			require.NoError(t, err)
			assert.NotContains(t, string(b), `"hs"`)
			assert.NotContains(t, string(b), `"oct"`)
			var raw struct{ Keys []map[string]string }
			require.NoError(t, json.Unmarshal(b, &raw))
			require.Len(t, raw.Keys, 2)
			assert.Equal(t, current.ID, raw.Keys[0]["kid"], "the current key first")
			for _, k := range raw.Keys {
				assert.Equal(t, "sig", k["use"])
				switch k["kid"] {
				case "ec":
					assert.Equal(t, map[string]string{"kty": "EC", "crv": "P-256", "kid": "ec", "alg": "ES256", "use": "sig", "x": k["x"], "y": k["y"]}, k)
				case "ed":
					assert.Equal(t, map[string]string{"kty": "OKP", "crv": "Ed25519", "kid": "ed", "alg": "EdDSA", "use": "sig", "x": k["x"]}, k)
				}
			}

			var set jose.JSONWebKeySet
			require.NoError(t, json.Unmarshal(b, &set))
			token, err := ks.Sign(ccClaims(now))
			require.NoError(t, err)
			parsed, err := josejwt.ParseSigned(token, []jose.SignatureAlgorithm{jose.ES256, jose.EdDSA})
			require.NoError(t, err)
			require.Len(t, parsed.Headers, 1)
			assert.Equal(t, current.ID, parsed.Headers[0].KeyID)
			assert.Equal(t, "at+jwt", parsed.Headers[0].ExtraHeaders[jose.HeaderType])
			keys := set.Key(parsed.Headers[0].KeyID)
			require.Len(t, keys, 1)
			assert.True(t, keys[0].Valid() && keys[0].IsPublic())
			var std josejwt.Claims
			var extra struct {
				ClientID string `json:"client_id"`
				Scope    string `json:"scope"`
			}
			require.NoError(t, parsed.Claims(keys[0].Key, &std, &extra))
			require.NoError(t, std.ValidateWithLeeway(josejwt.Expected{Issuer: testIssuer, AnyAudience: josejwt.Audience{bearer.Audience}, Time: now}, 0))
			assert.Equal(t, "app-1", std.Subject)
			assert.Equal(t, "client-1", extra.ClientID)
			assert.Equal(t, "svc:orders:read", extra.Scope)

			// And the other way round: a token go-jose signs with the
			// private key verifies here.
			signer, err := jose.NewSigner(jose.SigningKey{Algorithm: jose.SignatureAlgorithm(current.Alg()), Key: jose.JSONWebKey{Key: current.Private, KeyID: current.ID}},
				(&jose.SignerOptions{}).WithType("at+jwt"))
			require.NoError(t, err)
			claims, err := json.Marshal(ccClaims(now))
			require.NoError(t, err)
			jws, err := signer.Sign(claims)
			require.NoError(t, err)
			compact, err := jws.CompactSerialize()
			require.NoError(t, err)
			_, err = (&bearer.Verifier{Keys: ks, Issuer: testIssuer}).Verify(context.Background(), compact)
			require.NoError(t, err)
		})
	}
	ks := mustKeySet(t, ed, ec)
	ks.JWKS().Keys[0].Kid = "changed"
	assert.Equal(t, "ed", ks.JWKS().Keys[0].Kid, "JWKS returns a copy")
}
