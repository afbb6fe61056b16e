// Package bearer verifies the access tokens of Waybill's token service
// (package oauth) apart from the token service: it holds what a resource
// server needs to check a bearer token and nothing more — the Claims of a
// token, the HS256 Key and KeySet that sign and verify them, and the
// Verifier. A service that only checks tokens (the tenancy middleware, a
// service of its own) imports this package and not the token server, its
// templates or its store.
//
//	keys, err := bearer.NewKeySet(bearer.SecretKey(secret))
//	v := &bearer.Verifier{Keys: keys, Issuer: "https://tms.example.com", Families: store}
//	claims, err := v.Verify(ctx, token) // 401 invalid_token on any failure
//
// Tokens are HS256 JWTs for the audience "authenticated". The current key
// of a KeySet signs and every key in it verifies, so keys rotate without
// downtime; each token names its key in the kid header. A Verifier accepts
// only HS256 tokens signed by a known kid, for the audience and its Issuer,
// unexpired, whose grant fits their claims; with Families it also refuses
// the authorization-code tokens of a revoked refresh token family, whose
// jti names the family.
//
// Errors of Verify are *errors.Error values (import it as apierrors): 401
// invalid_token for a bad token, whose description never echoes it.
package bearer
