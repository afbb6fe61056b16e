package bearer

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"encoding/base64"
	"errors"
	"fmt"
)

// JWK is the public key of one asymmetric signing key as a JSON Web Key
// (RFC 7517): kty EC with crv P-256, x and y for ES256 (RFC 7518 section
// 6.2), kty OKP with crv Ed25519 and x for EdDSA (RFC 8037 section 2);
// always with its kid, its alg and use "sig".
type JWK struct {
	Kty string `json:"kty"`
	Crv string `json:"crv"`
	X   string `json:"x"`
	Y   string `json:"y,omitempty"`
	Kid string `json:"kid"`
	Alg string `json:"alg"`
	Use string `json:"use"`
}

// JWKSet is a JSON Web Key Set: {"keys": [...]}.
type JWKSet struct {
	Keys []JWK `json:"keys"`
}

// JWKS returns the public keys of the set as a JSON Web Key Set, the
// current key first: every ES256 and EdDSA key, and never an HS256 one,
// whose secret has no public part. Its Keys are empty, not nil, when every
// key is HS256.
func (ks *KeySet) JWKS() JWKSet {
	return JWKSet{Keys: append([]JWK{}, ks.jwks.Keys...)}
}

// publicJWK returns the JWK of an asymmetric verification key; false for
// an HS256 one.
func publicJWK(kid string, vk VerificationKey) (JWK, bool) {
	b64 := base64.RawURLEncoding.EncodeToString
	switch pub := vk.Key.(type) {
	case *ecdsa.PublicKey:
		// The uncompressed point: 0x04, then x and y, 32 bytes each.
		point, err := pub.Bytes()
		if err != nil || len(point) != 65 {
			return JWK{}, false
		}
		return JWK{Kty: "EC", Crv: "P-256", X: b64(point[1:33]), Y: b64(point[33:]), Kid: kid, Alg: ES256, Use: "sig"}, true
	case ed25519.PublicKey:
		return JWK{Kty: "OKP", Crv: "Ed25519", X: b64(pub), Kid: kid, Alg: EdDSA, Use: "sig"}, true
	}
	return JWK{}, false
}

// verificationKey returns the key a JWK publishes. It refuses every key
// that is not an ES256 or EdDSA signing key, symmetric keys (kty oct)
// first of all, and a JWK whose alg does not fit its key: the algorithm is
// the key's, never the token's.
func (j JWK) verificationKey() (VerificationKey, error) {
	if j.Use != "" && j.Use != "sig" {
		return VerificationKey{}, fmt.Errorf("key %q is for use %q, not sig", j.Kid, j.Use)
	}
	dec := base64.RawURLEncoding.DecodeString
	switch {
	case j.Kty == "EC" && j.Crv == "P-256" && (j.Alg == ES256 || j.Alg == ""):
		x, errX := dec(j.X)
		y, errY := dec(j.Y)
		if errX != nil || errY != nil || len(x) != 32 || len(y) != 32 {
			return VerificationKey{}, fmt.Errorf("key %q: x and y must be 32 bytes in base64url", j.Kid)
		}
		pub, err := ecdsa.ParseUncompressedPublicKey(elliptic.P256(), append(append([]byte{4}, x...), y...))
		if err != nil {
			return VerificationKey{}, fmt.Errorf("key %q: %w", j.Kid, err)
		}
		return VerificationKey{Alg: ES256, Key: pub}, nil
	case j.Kty == "OKP" && j.Crv == "Ed25519" && (j.Alg == EdDSA || j.Alg == ""):
		x, err := dec(j.X)
		if err != nil || len(x) != ed25519.PublicKeySize {
			return VerificationKey{}, fmt.Errorf("key %q: x must be %d bytes in base64url", j.Kid, ed25519.PublicKeySize)
		}
		return VerificationKey{Alg: EdDSA, Key: ed25519.PublicKey(x)}, nil
	case j.Kty == "oct":
		return VerificationKey{}, fmt.Errorf("key %q is a symmetric key: %w", j.Kid, errSymmetricJWK)
	}
	return VerificationKey{}, fmt.Errorf("key %q (kty %q, crv %q, alg %q) is neither an ES256 nor an EdDSA key", j.Kid, j.Kty, j.Crv, j.Alg)
}

var errSymmetricJWK = errors.New("a published key set never holds a shared secret")
