package bearer_test

import (
	"encoding/json"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	josejwt "github.com/go-jose/go-jose/v4/jwt"
	"github.com/golang-jwt/jwt/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/oauth/bearer"
)

// SignClaims signs claims that are no access token, typed JWT with the
// current key's kid, which an independent JOSE library verifies against
// the JSON Web Key Set; claims for the API's audience are refused, and
// the API's Verifier refuses what it signs.
func TestSignClaims(t *testing.T) {
	for _, alg := range []string{bearer.ES256, bearer.EdDSA, bearer.HS256} {
		t.Run(alg, func(t *testing.T) {
			key, err := bearer.GenerateKeyFor(alg)
			require.NoError(t, err)
			ks, err := bearer.NewKeySet(key)
			require.NoError(t, err)
			now := time.Now()
			signed, err := ks.SignClaims(jwt.MapClaims{"iss": "https://tms.example", "sub": "u-1", "aud": "client-1",
				"exp": now.Add(time.Hour).Unix(), "iat": now.Unix(), "nonce": "abc"})
			require.NoError(t, err)

			_, err = (&bearer.Verifier{Keys: ks, Issuer: "https://tms.example"}).Verify(t.Context(), signed)
			assert.Error(t, err, "not a token of the API")

			for _, aud := range []any{bearer.Audience, []string{"client-1", bearer.Audience}} {
				_, err = ks.SignClaims(jwt.MapClaims{"aud": aud})
				assert.ErrorContains(t, err, "the API's", "aud %v", aud)
			}
			if alg == bearer.HS256 {
				return
			}
			parsed, err := josejwt.ParseSigned(signed, []jose.SignatureAlgorithm{jose.SignatureAlgorithm(alg)})
			require.NoError(t, err)
			require.Len(t, parsed.Headers, 1)
			assert.Equal(t, key.ID, parsed.Headers[0].KeyID)
			assert.Equal(t, "JWT", parsed.Headers[0].ExtraHeaders[jose.HeaderType])
			var set jose.JSONWebKeySet
			raw, err := json.Marshal(ks.JWKS())
			require.NoError(t, err)
			require.NoError(t, json.Unmarshal(raw, &set))
			var claims map[string]any
			require.NoError(t, parsed.Claims(set.Key(key.ID)[0].Key, &claims))
			assert.Equal(t, "abc", claims["nonce"])
			assert.Equal(t, "client-1", claims["aud"])
		})
	}
}
