package bearer_test

import (
	"context"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/waybillhq/waybill/oauth/bearer"
)

// benchAlgs are the algorithms benchmarked, each with its golang-jwt
// method and the key golang-jwt signs with.
var benchAlgs = []string{bearer.HS256, bearer.ES256, bearer.EdDSA}

// benchKey returns a key of alg, its golang-jwt method, and what the
// method signs and verifies with.
func benchKey(b *testing.B, alg string) (key bearer.Key, method jwt.SigningMethod, signWith, verifyWith any) {
	key = genKey(b, alg, "k1")
	switch alg {
	case bearer.HS256:
		return key, jwt.SigningMethodHS256, key.Secret, key.Secret
	case bearer.ES256:
		return key, jwt.SigningMethodES256, key.Private, key.Private.Public()
	}
	return key, jwt.SigningMethodEdDSA, key.Private, key.Private.Public()
}

// BenchmarkSign is the signing of an access token at the token endpoint,
// with each algorithm: KeySet.Sign beside golang-jwt's own
// jwt.NewWithClaims(...).SignedString of the same claims and kid.
func BenchmarkSign(b *testing.B) {
	claims := ccClaims(time.Now())
	for _, alg := range benchAlgs {
		key, method, signWith, _ := benchKey(b, alg)
		ks := mustKeySet(b, key)
		b.Run(alg+"/bearer", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := ks.Sign(claims); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run(alg+"/golang-jwt", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				tok := jwt.NewWithClaims(method, claims)
				tok.Header["kid"] = key.ID
				tok.Header["typ"] = "at+jwt"
				if _, err := tok.SignedString(signWith); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

// BenchmarkVerify is the bearer token check of every API request, with
// each algorithm: Verifier.Verify (the kid's key, its algorithm, the typ
// and the RFC 9068 claims, the grant) beside golang-jwt's own jwt.Parse of
// the same token into the same claims with a fixed key.
func BenchmarkVerify(b *testing.B) {
	ctx := context.Background()
	for _, alg := range benchAlgs {
		key, method, _, verifyWith := benchKey(b, alg)
		ks := mustKeySet(b, key)
		token, err := ks.Sign(ccClaims(time.Now()))
		if err != nil {
			b.Fatal(err)
		}
		v := &bearer.Verifier{Keys: ks, Issuer: testIssuer}
		b.Run(alg+"/bearer", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.Verify(ctx, token); err != nil {
					b.Fatal(err)
				}
			}
		})
		keyFunc := func(*jwt.Token) (any, error) { return verifyWith, nil }
		methods := []string{method.Alg()}
		b.Run(alg+"/golang-jwt", func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				var c bearer.Claims
				if _, err := jwt.ParseWithClaims(token, &c, keyFunc, jwt.WithValidMethods(methods)); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
