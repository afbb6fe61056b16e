package oauth

import (
	"crypto/rand"
	"crypto/sha256"
	"crypto/subtle"
	"encoding/base64"
)

// NewSecret returns a new random 256-bit secret, base64url without padding
// (43 characters): client secrets, authorization codes, refresh tokens.
func NewSecret() string {
	// crypto/rand.Text would do, but its 26 base32 characters carry 128
	// bits; secrets here carry 256.
	b := make([]byte, 32)
	_, _ = rand.Read(b) // never fails (crypto/rand.Read documents it)
	return base64.RawURLEncoding.EncodeToString(b)
}

// hashSecret returns the SHA-256 of a secret, the only form in which
// secrets, codes and refresh tokens are stored.
func hashSecret(secret string) []byte {
	h := sha256.Sum256([]byte(secret))
	return h[:]
}

// secretMatches reports, in constant time, whether secret hashes to hash.
func secretMatches(secret string, hash []byte) bool {
	h := sha256.Sum256([]byte(secret))
	return subtle.ConstantTimeCompare(h[:], hash) == 1
}

// S256Challenge returns the PKCE S256 code challenge of a verifier:
// base64url, without padding, of its SHA-256 (RFC 7636 section 4.2).
func S256Challenge(verifier string) string {
	h := sha256.Sum256([]byte(verifier))
	return base64.RawURLEncoding.EncodeToString(h[:])
}

// validVerifier reports whether s is a PKCE code verifier: 43 to 128
// characters of [A-Za-z0-9-._~] (RFC 7636 section 4.1).
func validVerifier(s string) bool {
	if len(s) < 43 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if !unreserved(s[i]) {
			return false
		}
	}
	return true
}

// validChallenge reports whether s can be an S256 code challenge: 43
// base64url characters, the encoding of 32 bytes.
func validChallenge(s string) bool {
	if len(s) != 43 {
		return false
	}
	_, err := base64.RawURLEncoding.DecodeString(s)
	return err == nil
}

// verifierMatches reports, in constant time, whether verifier is valid and
// its S256 challenge is challenge.
func verifierMatches(verifier, challenge string) bool {
	if !validVerifier(verifier) {
		return false
	}
	return subtle.ConstantTimeCompare([]byte(S256Challenge(verifier)), []byte(challenge)) == 1
}

func unreserved(c byte) bool {
	return 'A' <= c && c <= 'Z' || 'a' <= c && c <= 'z' || '0' <= c && c <= '9' ||
		c == '-' || c == '.' || c == '_' || c == '~'
}
