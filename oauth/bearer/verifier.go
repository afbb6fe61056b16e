package bearer

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	apierrors "github.com/waybillhq/waybill/errors"
)

// FamilyChecker tells whether a refresh token family is revoked. The
// token service's store (an oauth.RefreshStore, so every oauth.Store) is
// one.
type FamilyChecker interface {
	FamilyRevoked(ctx context.Context, familyID string) (bool, error)
}

// KeySource finds the key that verifies the tokens of a kid: a *KeySet,
// which holds the keys, or *RemoteKeys, which reads the token service's
// published JSON Web Key Set. It fails with ErrUnknownKey (possibly
// wrapped) when no key has the kid.
type KeySource interface {
	VerificationKey(ctx context.Context, kid string) (VerificationKey, error)
}

// ErrUnknownKey is the error of a KeySource that has no key of a kid.
var ErrUnknownKey = errors.New("unknown kid")

// errNoKeys is the error of a nil KeySet.
var errNoKeys = errors.New("bearer: no keys")

// Verifier checks bearer tokens: signed by the key their kid names (in
// Keys, or found by Source), with exactly that key's algorithm, issued by
// Issuer, for the audience "authenticated", not expired. aud is
// "authenticated", or (an OAuth token issued for a resource indicator)
// ["authenticated", "<resource>"], the resource Resource when it is set. The token's alg
// header only has to agree with its key: a token is never verified with
// an algorithm its key was not made for, so an HS256 token keyed with an
// ES256 or EdDSA public key, alg none, a kid of a key of another
// algorithm and an unknown kid are all refused.
//
// An OAuth access token (one with oauth_client_id) must be typed at+jwt
// (RFC 9068 section 2.1; application/at+jwt too) and its client_id and
// scope claims, when present, must agree with oauth_client_id and
// oauth_scopes. Access tokens without the client_id claim, which the
// token service signed with an HS256 key before it typed them, are still
// accepted typed JWT, so that tokens issued before an upgrade keep working
// until they expire; a token of an asymmetric key gets no such leeway.
// Product user tokens are typed JWT or not at all.
//
// A Verifier is a plain struct: set its fields and call Verify. Keys (or
// Source) and Issuer are required (without either, Verify refuses every
// token with a 500 internal error rather than skip a check); the zero
// Families skips the revocation check and the zero Now is time.Now.
// Verify reads the fields on every call, so a change takes effect at the
// next one; a Verifier is safe for concurrent use while its fields are
// left alone.
type Verifier struct {
	// Keys verify the signature. Required unless Source is set.
	Keys *KeySet
	// Source, when set, finds the keys instead of Keys: a *RemoteKeys
	// for a service that verifies against the token service's JWKS URL.
	Source KeySource
	// Issuer is the required iss claim. Required.
	Issuer string
	// Families, when set, refuses authorization-code tokens whose refresh
	// family was revoked (a replayed code, a reused refresh token). Nil
	// skips the check, which then costs nothing.
	Families FamilyChecker
	// CutOffs, when set, refuses OAuth tokens of an app issued before it
	// was cut off from the token's organization (see CutOffList). It is
	// asked from memory on every call; nil skips the check.
	CutOffs CutOffChecker
	// Resource, when set, is the resource identifier (RFC 8707) of the
	// API the Verifier guards, as its protected resource metadata names
	// it: a token whose aud names a resource (beside "authenticated") must
	// name this one. A token without a resource is accepted either way;
	// "" accepts any resource.
	Resource string
	// Now is the clock that decides whether a token has expired; nil means
	// time.Now.
	Now func() time.Time
}

// validMethods are every algorithm a key may have; the key of the token's
// kid then narrows them to its own.
var validMethods = []string{HS256, ES256, EdDSA}

func (v *Verifier) parser() *jwt.Parser {
	now := v.Now
	if now == nil {
		now = time.Now
	}
	return jwt.NewParser(
		jwt.WithValidMethods(validMethods),
		jwt.WithAudience(Audience),
		jwt.WithIssuer(v.Issuer),
		jwt.WithExpirationRequired(),
		jwt.WithTimeFunc(now),
	)
}

// verifiedClaims are the claims as Verify reads them: Claims, the RFC
// 9068 claims that repeat two of them, and aud as a string or an array
// (Claims.Audience and Claims.Resource are set from it).
type verifiedClaims struct {
	Claims
	Aud         jwt.ClaimStrings `json:"aud"`
	RFCClientID *string          `json:"client_id"`
	RFCScope    *string          `json:"scope"`
}

// GetAudience implements jwt.Claims: aud as the token has it.
func (vc *verifiedClaims) GetAudience() (jwt.ClaimStrings, error) { return vc.Aud, nil }

// audience sets the Audience and Resource of the claims from aud, which
// holds Audience (the parser checked it): at most one other value, the
// resource, and when resource is set, that one. It reports what is wrong,
// or "".
func (vc *verifiedClaims) audience(resource string) string {
	vc.Audience = Audience
	for _, a := range vc.Aud {
		switch {
		case a == Audience:
		case vc.Resource != "":
			return "the token names more than one resource"
		case !vc.OAuth():
			return "a token without oauth_client_id names a resource"
		default:
			vc.Resource = a
		}
	}
	if resource != "" && vc.Resource != "" && vc.Resource != resource {
		return "the token is for another resource"
	}
	return ""
}

// Verify checks token and returns its claims, whose Grant it sets. The
// grant must fit the claims: a client-credentials token carries
// oauth_branch_ids (possibly empty), an authorization-code token does not,
// and a product user token names no grant. Every failure is a 401
// invalid_token *apierrors.Error whose description says what is wrong
// without echoing the token; a KeySource that fails otherwise than with
// ErrUnknownKey (a JWKS URL that does not answer) is a 503.
func (v *Verifier) Verify(ctx context.Context, token string) (*Claims, error) {
	var source KeySource = v.Keys
	if v.Source != nil {
		source = v.Source
	} else if v.Keys == nil {
		source = nil
	}
	if source == nil || v.Issuer == "" {
		return nil, apierrors.Internal(errors.New("bearer: a Verifier needs Keys (or Source) and Issuer"))
	}
	var vc verifiedClaims
	tok, err := v.parser().ParseWithClaims(token, &vc, func(t *jwt.Token) (any, error) {
		kid, _ := t.Header["kid"].(string)
		vk, err := source.VerificationKey(ctx, kid)
		if err != nil {
			if errors.Is(err, ErrUnknownKey) {
				return nil, ErrUnknownKey
			}
			return nil, sourceError{err}
		}
		if t.Method.Alg() != vk.Alg {
			return nil, errAlgMismatch
		}
		return vk.Key, nil
	})
	if err != nil {
		return nil, verifyError(err)
	}
	c := &vc.Claims
	if c.Subject == "" || c.ID == "" {
		return nil, apierrors.InvalidToken("the token lacks sub or jti")
	}
	if problem := vc.checkRFC9068(tok.Header["typ"], tok.Method.Alg()); problem != "" {
		return nil, apierrors.InvalidToken("%s", problem)
	}
	if problem := vc.audience(v.Resource); problem != "" {
		return nil, apierrors.InvalidToken("%s", problem)
	}
	if problem := c.checkGrant(c.BranchIDs != nil); problem != "" {
		return nil, apierrors.InvalidToken("%s", problem)
	}
	c.Grant = c.grant()
	if v.CutOffs != nil && c.OAuth() && v.CutOffs.CutOff(c.OrganizationID, c.ClientID, time.Unix(c.IssuedAt, 0)) {
		return nil, apierrors.InvalidToken("the app was disconnected from the organization")
	}
	if v.Families != nil {
		if family := c.FamilyID(); family != "" {
			revoked, err := v.Families.FamilyRevoked(ctx, family)
			if err != nil {
				return nil, apierrors.Internal(fmt.Errorf("bearer: check token family: %w", err))
			}
			if revoked {
				return nil, apierrors.InvalidToken("the token was revoked")
			}
		}
	}
	return c, nil
}

// verifyError is the error of Verify for an error of golang-jwt's parser:
// a 401 invalid_token for a bad token, a 503 when the KeySource failed, a
// 500 for a nil KeySet.
func verifyError(err error) error {
	var se sourceError
	if errors.As(err, &se) {
		if errors.Is(se.err, errNoKeys) {
			return apierrors.Internal(se.err)
		}
		return apierrors.Unavailable("the keys that verify tokens are unavailable").Wrap(se.err)
	}
	return apierrors.InvalidToken("%s", describeJWTError(err))
}

// checkRFC9068 reports what is wrong with the typ header (typ) and the RFC
// 9068 claims of a token that a key of keyAlg verified, or "" (see
// Verifier).
func (vc *verifiedClaims) checkRFC9068(typ any, keyAlg string) string {
	t, _ := typ.(string)
	if !vc.OAuth() {
		if vc.RFCClientID != nil {
			return "a token without oauth_client_id carries client_id"
		}
		if typ != nil && !strings.EqualFold(t, typJWT) {
			return "a product user token must be typed JWT"
		}
		return ""
	}
	if vc.RFCClientID != nil && *vc.RFCClientID != vc.ClientID {
		return "the token's client_id and oauth_client_id differ"
	}
	if vc.RFCScope != nil && *vc.RFCScope != strings.Join(vc.Scopes, " ") {
		return "the token's scope and oauth_scopes differ"
	}
	if strings.EqualFold(t, typAccessToken) || strings.EqualFold(t, "application/"+typAccessToken) {
		return ""
	}
	if vc.RFCClientID == nil && keyAlg == HS256 && (typ == nil || strings.EqualFold(t, typJWT)) {
		return "" // signed before access tokens were typed
	}
	return "an access token must be typed at+jwt"
}

var errAlgMismatch = errors.New("the token's alg is not its key's")

// sourceError is a failure of the KeySource other than an unknown kid.
type sourceError struct{ err error }

func (e sourceError) Error() string { return e.err.Error() }
func (e sourceError) Unwrap() error { return e.err }

// describeJWTError turns golang-jwt's errors into a short description.
func describeJWTError(err error) string {
	switch {
	case errors.Is(err, jwt.ErrTokenMalformed):
		return "the token is malformed"
	case errors.Is(err, ErrUnknownKey):
		return "the token is signed with an unknown key"
	case errors.Is(err, errAlgMismatch):
		return "the token's algorithm is not its key's (signature is invalid)"
	case errors.Is(err, jwt.ErrTokenSignatureInvalid), errors.Is(err, jwt.ErrTokenUnverifiable):
		return "the token signature is invalid or uses an algorithm other than its key's"
	case errors.Is(err, jwt.ErrTokenExpired):
		return "the token has expired"
	case errors.Is(err, jwt.ErrTokenInvalidAudience):
		return "the token is not for this audience"
	case errors.Is(err, jwt.ErrTokenInvalidIssuer):
		return "the token is from another issuer"
	case errors.Is(err, jwt.ErrTokenRequiredClaimMissing):
		return "the token lacks a required claim"
	}
	return "the token is invalid"
}
