package bearer

import (
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/sha256"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"errors"
	"fmt"
)

// ParsePrivateKeyPEM returns the Key of a private key in PEM: a P-256 key
// for ES256 (PKCS #8 "PRIVATE KEY" or SEC 1 "EC PRIVATE KEY", as
// "openssl genpkey -algorithm EC -pkeyopt ec_paramgen_curve:P-256" and
// "openssl ecparam -name prime256v1 -genkey" write them) or an Ed25519 key
// for EdDSA (PKCS #8, "openssl genpkey -algorithm ed25519"). Encrypted
// keys, RSA keys and other curves are refused.
//
// The key's id is its RFC 7638 JWK thumbprint (base64url, SHA-256), so
// every service given the same file names the key alike, and a rotation
// that gives a new file gives a new kid.
func ParsePrivateKeyPEM(data []byte) (Key, error) {
	block, rest := pem.Decode(data)
	if block != nil && block.Type == "EC PARAMETERS" {
		// "openssl ecparam -genkey" writes the curve before the key.
		block, _ = pem.Decode(rest)
	}
	if block == nil {
		return Key{}, errors.New("bearer: no PEM block in the key")
	}
	if block.Headers["Proc-Type"] != "" || block.Type == "ENCRYPTED PRIVATE KEY" {
		return Key{}, errors.New("bearer: the PEM key is encrypted; give it decrypted (and keep the file readable by the server alone)")
	}
	var private any
	var err error
	switch block.Type {
	case "EC PRIVATE KEY":
		private, err = x509.ParseECPrivateKey(block.Bytes)
	case "PRIVATE KEY":
		private, err = x509.ParsePKCS8PrivateKey(block.Bytes)
	default:
		return Key{}, fmt.Errorf("bearer: the PEM block is %q; give a private key (PRIVATE KEY or EC PRIVATE KEY)", block.Type)
	}
	if err != nil {
		return Key{}, fmt.Errorf("bearer: the PEM key does not parse: %w", err)
	}
	var k Key
	switch p := private.(type) {
	case *ecdsa.PrivateKey:
		if p.Curve != elliptic.P256() {
			return Key{}, fmt.Errorf("bearer: the PEM key is on curve %s; ES256 needs P-256", p.Curve.Params().Name)
		}
		k.Private = p
	case ed25519.PrivateKey:
		k.Private = p
	default:
		return Key{}, fmt.Errorf("bearer: the PEM key is a %T, neither a P-256 key (ES256) nor an Ed25519 key (EdDSA)", private)
	}
	jwk, ok := publicJWK("", k.verificationKey())
	if !ok {
		return Key{}, errors.New("bearer: the PEM key has no public key to publish")
	}
	k.ID = jwk.Thumbprint()
	return k, nil
}

// Thumbprint returns the RFC 7638 thumbprint of the key: the base64url
// SHA-256 of its required members (crv, kty, x and, for EC, y) in
// lexicographic order, without whitespace.
func (j JWK) Thumbprint() string {
	// The members' order is the struct's; their values are base64url and
	// names, which json.Marshal writes as they are.
	var canonical any
	if j.Kty == "EC" {
		canonical = struct {
			Crv string `json:"crv"`
			Kty string `json:"kty"`
			X   string `json:"x"`
			Y   string `json:"y"`
		}{j.Crv, j.Kty, j.X, j.Y}
	} else {
		canonical = struct {
			Crv string `json:"crv"`
			Kty string `json:"kty"`
			X   string `json:"x"`
		}{j.Crv, j.Kty, j.X}
	}
	b, _ := json.Marshal(canonical) // strings only: cannot fail
	sum := sha256.Sum256(b)
	return base64.RawURLEncoding.EncodeToString(sum[:])
}
