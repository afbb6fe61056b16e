package oauth

import (
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"fmt"
)

// MinKeyLength is the shortest HMAC key accepted, in bytes: HS256 keys must
// be at least as long as the hash (RFC 7518 section 3.2).
const MinKeyLength = 32

// Key is one HS256 signing key, named by the kid of the tokens it signs.
type Key struct {
	// ID is the key id, the kid header of every token signed with it.
	ID string
	// Secret is the raw HMAC key, at least MinKeyLength bytes.
	Secret []byte
}

// GenerateKey returns a new random 256-bit key with a random id.
func GenerateKey() (Key, error) {
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		return Key{}, fmt.Errorf("oauth: generate key: %w", err)
	}
	id := make([]byte, 9)
	if _, err := rand.Read(id); err != nil {
		return Key{}, fmt.Errorf("oauth: generate key: %w", err)
	}
	return Key{ID: base64.RawURLEncoding.EncodeToString(id), Secret: secret}, nil
}

// derive returns a key for one purpose (signing session cookies, CSRF
// tokens) derived from the current signing key with HMAC-SHA256, so that no
// key serves two purposes and rotating the signing key rotates them too.
func (ks *KeySet) derive(purpose string) []byte {
	m := hmac.New(sha256.New, ks.current.Secret)
	m.Write([]byte("waybill/" + purpose))
	return m.Sum(nil)
}

// SecretKey returns the Key of a raw shared secret, such as the reference
// server's --jwt-secret. Its id is derived from the secret ("s-" and the
// first 48 bits of its SHA-256, in hex), so that every service holding the
// secret names the key alike without agreeing on a kid. NewKeySet checks
// the secret's length.
func SecretKey(secret []byte) Key {
	sum := sha256.Sum256(secret)
	return Key{ID: "s-" + hex.EncodeToString(sum[:6]), Secret: append([]byte(nil), secret...)}
}
