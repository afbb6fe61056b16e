package bearer_test

import (
	"context"
	"testing"
	"time"

	"github.com/golang-jwt/jwt/v5"

	"github.com/waybillhq/waybill/oauth/bearer"
)

// BenchmarkVerify is the bearer token check of every API request.
func BenchmarkVerify(b *testing.B) {
	ks := mustKeySet(b, testKey("k1", 1))
	token, err := ks.Sign(ccClaims(time.Now()))
	if err != nil {
		b.Fatal(err)
	}
	v := &bearer.Verifier{Keys: ks, Issuer: testIssuer}
	ctx := context.Background()
	b.ReportAllocs()
	for b.Loop() {
		if _, err := v.Verify(ctx, token); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkVerifyFloor is golang-jwt's own parse of the same token into the
// same claims, HS256 only.
func BenchmarkVerifyFloor(b *testing.B) {
	key := testKey("k1", 1)
	ks := mustKeySet(b, key)
	token, err := ks.Sign(ccClaims(time.Now()))
	if err != nil {
		b.Fatal(err)
	}
	keyFunc := func(*jwt.Token) (any, error) { return key.Secret, nil }
	b.ReportAllocs()
	for b.Loop() {
		var c bearer.Claims
		if _, err := jwt.ParseWithClaims(token, &c, keyFunc, jwt.WithValidMethods([]string{"HS256"})); err != nil {
			b.Fatal(err)
		}
	}
}
