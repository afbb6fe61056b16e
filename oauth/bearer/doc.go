// Package bearer verifies the access tokens of Waybill's token service
// (package oauth) apart from the token service: it holds what a resource
// server needs to check a bearer token and nothing more — the Claims of a
// token, the Key and KeySet that sign and verify them, the Verifier, and
// RemoteKeys, which verifies against a published JSON Web Key Set. A
// service that only checks tokens (the tenancy middleware, a service of
// its own) imports this package and not the token server, its templates
// or its store.
//
//	keys, err := bearer.NewKeySet(bearer.SecretKey(secret))
//	v := &bearer.Verifier{Keys: keys, Issuer: "https://tms.example.com", Families: store}
//	claims, err := v.Verify(ctx, token) // 401 invalid_token on any failure
//
// Tokens are JWTs for the audience "authenticated", signed with HS256 (a
// shared secret, the default), ES256 or EdDSA (a private key, whose public
// key KeySet.JWKS publishes, so that services verify without being able to
// sign). A private key is generated (GenerateKeyFor) or read from a PEM
// file (ParsePrivateKeyPEM, named by its RFC 7638 thumbprint). The
// current key of a KeySet signs and every key in it verifies,
// so keys rotate without downtime; each token names its key in the kid
// header. A Verifier accepts a token only when the key its kid names is
// known and has exactly the token's algorithm, for the audience and its
// Issuer, unexpired, whose grant fits its claims; OAuth access tokens are
// typed at+jwt and carry the client_id and scope claims of RFC 9068 beside
// Waybill's own. With Families it also refuses the authorization-code
// tokens of a revoked refresh token family, whose jti names the family.
//
// With CutOffs, a Verifier also refuses the tokens of an app issued before
// the app was disconnected from their organization; a CutOffList answers
// that from memory and reloads the cut-offs from the token service's store
// in the background (CutOffList.Run), so that the check costs no database
// lookup; its OnCutOff hands each new cut-off to what else must end with
// it (the reference server disables the app's webhook endpoints there).
//
// Errors of Verify are *errors.Error values (import it as apierrors): 401
// invalid_token for a bad token, whose description never echoes it.
package bearer
