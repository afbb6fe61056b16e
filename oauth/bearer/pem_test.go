package bearer_test

import (
	"context"
	"crypto"
	"crypto/ecdsa"
	"crypto/ed25519"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"encoding/base64"
	"encoding/pem"
	"fmt"
	"testing"
	"time"

	jose "github.com/go-jose/go-jose/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/oauth/bearer"
)

func pemOf(t *testing.T, typ string, der []byte) []byte {
	t.Helper()
	return pem.EncodeToMemory(&pem.Block{Type: typ, Bytes: der})
}

func pkcs8(t *testing.T, key any) []byte {
	t.Helper()
	der, err := x509.MarshalPKCS8PrivateKey(key)
	require.NoError(t, err)
	return pemOf(t, "PRIVATE KEY", der)
}

// A PEM private key becomes a Key of its algorithm, named by its RFC 7638
// thumbprint (as go-jose computes it), and signs tokens its JWKS verifies.
func TestParsePrivateKeyPEM(t *testing.T) {
	t.Parallel()
	p256, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	sec1, err := x509.MarshalECPrivateKey(p256)
	require.NoError(t, err)
	_, ed, err := ed25519.GenerateKey(rand.Reader)
	require.NoError(t, err)

	tests := []struct {
		name string
		pem  []byte
		alg  string
		pub  crypto.PublicKey
	}{
		{name: "P-256 in PKCS #8", pem: pkcs8(t, p256), alg: bearer.ES256, pub: p256.Public()},
		{name: "P-256 in SEC 1", pem: pemOf(t, "EC PRIVATE KEY", sec1), alg: bearer.ES256, pub: p256.Public()},
		{name: "Ed25519 in PKCS #8", pem: pkcs8(t, ed), alg: bearer.EdDSA, pub: ed.Public()},
		// What "openssl ecparam -name prime256v1 -genkey" writes.
		{name: "P-256 after its curve", pem: append(pemOf(t, "EC PARAMETERS", []byte{6, 8, 0x2a, 0x86, 0x48, 0xce, 0x3d, 3, 1, 7}), pemOf(t, "EC PRIVATE KEY", sec1)...), alg: bearer.ES256, pub: p256.Public()},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			k, err := bearer.ParsePrivateKeyPEM(tc.pem)
			require.NoError(t, err)
			assert.Equal(t, tc.alg, k.Alg())

			thumb, err := (&jose.JSONWebKey{Key: tc.pub}).Thumbprint(crypto.SHA256)
			require.NoError(t, err)
			assert.Equal(t, base64.RawURLEncoding.EncodeToString(thumb), k.ID, "the kid is the RFC 7638 thumbprint")
			again, err := bearer.ParsePrivateKeyPEM(tc.pem)
			require.NoError(t, err)
			assert.Equal(t, k.ID, again.ID, "the same file, the same kid")

			ks := mustKeySet(t, k)
			require.Len(t, ks.JWKS().Keys, 1)
			assert.Equal(t, k.ID, ks.JWKS().Keys[0].Thumbprint())
			token, err := ks.Sign(ccClaims(time.Now()))
			require.NoError(t, err)
			_, err = (&bearer.Verifier{Keys: ks, Issuer: testIssuer}).Verify(context.Background(), token)
			require.NoError(t, err)
		})
	}
}

// Anything but an unencrypted P-256 or Ed25519 private key is refused,
// with a message that says what to give instead.
func TestParsePrivateKeyPEMRefuses(t *testing.T) {
	t.Parallel()
	p384, err := ecdsa.GenerateKey(elliptic.P384(), rand.Reader)
	require.NoError(t, err)
	rsaKey, err := rsa.GenerateKey(rand.Reader, 2048)
	require.NoError(t, err)
	p256, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	require.NoError(t, err)
	pub, err := x509.MarshalPKIXPublicKey(p256.Public())
	require.NoError(t, err)
	encrypted := pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Headers: map[string]string{"Proc-Type": "4,ENCRYPTED", "DEK-Info": "AES-256-CBC,00"}, Bytes: []byte{1}})

	tests := []struct {
		name string
		pem  []byte
		says string
	}{
		{name: "empty", pem: nil, says: "no PEM block"},
		{name: "not PEM", pem: []byte("-----BEGIN nothing"), says: "no PEM block"},
		{name: "P-384", pem: pkcs8(t, p384), says: "P-256"},
		{name: "RSA", pem: pkcs8(t, rsaKey), says: "neither a P-256 key"},
		{name: "a public key", pem: pemOf(t, "PUBLIC KEY", pub), says: `"PUBLIC KEY"`},
		{name: "PKCS #8 encrypted", pem: pemOf(t, "ENCRYPTED PRIVATE KEY", []byte{1}), says: "encrypted"},
		{name: "legacy encrypted", pem: encrypted, says: "encrypted"},
		{name: "a broken key", pem: pemOf(t, "PRIVATE KEY", []byte{0x30, 1, 2}), says: "does not parse"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := bearer.ParsePrivateKeyPEM(tc.pem)
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.says)
		})
	}
}

func ExampleParsePrivateKeyPEM() {
	// The file "openssl genpkey -algorithm ed25519" writes.
	key, err := bearer.ParsePrivateKeyPEM([]byte(`-----BEGIN PRIVATE KEY-----
MC4CAQAwBQYDK2VwBCIEIJ+DYvh6SEqVTm50DFtMDoQikTmiCqirVv9mWG9qfSnF
-----END PRIVATE KEY-----`))
	if err != nil {
		panic(err)
	}
	keys, err := bearer.NewKeySet(key)
	if err != nil {
		panic(err)
	}
	fmt.Println(keys.Alg(), key.ID == keys.JWKS().Keys[0].Thumbprint())
	// Output: EdDSA true
}

// FuzzParsePrivateKeyPEM feeds the PEM reader any bytes: it never panics,
// and a key it accepts signs tokens that its own key set verifies, named
// by its thumbprint.
func FuzzParsePrivateKeyPEM(f *testing.F) {
	p256, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		f.Fatal(err)
	}
	sec1, err := x509.MarshalECPrivateKey(p256)
	if err != nil {
		f.Fatal(err)
	}
	_, ed, err := ed25519.GenerateKey(rand.Reader)
	if err != nil {
		f.Fatal(err)
	}
	edDER, err := x509.MarshalPKCS8PrivateKey(ed)
	if err != nil {
		f.Fatal(err)
	}
	for _, seed := range [][]byte{
		pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: sec1}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: edDER}),
		pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: []byte{0x30, 0x03, 0x02, 0x01, 0x00}}),
		[]byte("-----BEGIN EC PARAMETERS-----\nBggqhkjOPQMBBw==\n-----END EC PARAMETERS-----\n"),
		[]byte("-----BEGIN PRIVATE KEY-----\n"), nil,
	} {
		f.Add(seed)
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		k, err := bearer.ParsePrivateKeyPEM(data)
		if err != nil {
			return
		}
		ks, err := bearer.NewKeySet(k)
		if err != nil {
			t.Fatalf("an accepted key makes no key set: %v", err)
		}
		if got := ks.JWKS().Keys[0].Thumbprint(); got != k.ID {
			t.Fatalf("kid %q, thumbprint %q", k.ID, got)
		}
		token, err := ks.Sign(ccClaims(time.Now()))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := (&bearer.Verifier{Keys: ks, Issuer: testIssuer}).Verify(context.Background(), token); err != nil {
			t.Fatal(err)
		}
	})
}
