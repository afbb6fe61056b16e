package bearer

import (
	"context"
	"errors"
	"fmt"
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

// Verifier checks bearer tokens: HS256 only, signed by a key of Keys
// (named by kid), issued by Issuer, for the audience "authenticated", not
// expired. Every other algorithm, none included, is refused.
//
// A Verifier is a plain struct: set its fields and call Verify. Keys and
// Issuer are required (without either, Verify refuses every token with a
// 500 internal error rather than skip a check); the zero Families skips
// the revocation check and the zero Now is time.Now. Verify reads the
// fields on every call, so a change takes effect at the next one; a
// Verifier is safe for concurrent use while its fields are left alone.
type Verifier struct {
	// Keys verify the signature. Required.
	Keys *KeySet
	// Issuer is the required iss claim. Required.
	Issuer string
	// Families, when set, refuses authorization-code tokens whose refresh
	// family was revoked (a replayed code, a reused refresh token). Nil
	// skips the check, which then costs nothing.
	Families FamilyChecker
	// Now is the clock that decides whether a token has expired; nil means
	// time.Now.
	Now func() time.Time
}

var validMethods = []string{jwt.SigningMethodHS256.Alg()}

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

// Verify checks token and returns its claims, whose Grant it sets. The
// grant must fit the claims: a client-credentials token carries
// oauth_branch_ids (possibly empty), an authorization-code token does not,
// and a product user token names no grant. Every failure is a 401
// invalid_token *apierrors.Error whose description says what is wrong
// without echoing the token.
func (v *Verifier) Verify(ctx context.Context, token string) (*Claims, error) {
	if v.Keys == nil || v.Issuer == "" {
		return nil, apierrors.Internal(errors.New("bearer: a Verifier needs Keys and Issuer"))
	}
	var c Claims
	if _, err := v.parser().ParseWithClaims(token, &c, v.key); err != nil {
		return nil, apierrors.InvalidToken("%s", describeJWTError(err))
	}
	if c.Subject == "" || c.ID == "" {
		return nil, apierrors.InvalidToken("the token lacks sub or jti")
	}
	if problem := c.checkGrant(c.BranchIDs != nil); problem != "" {
		return nil, apierrors.InvalidToken("%s", problem)
	}
	c.Grant = c.grant()
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
	return &c, nil
}

func (v *Verifier) key(t *jwt.Token) (any, error) {
	kid, _ := t.Header["kid"].(string)
	secret, ok := v.Keys.byID[kid]
	if !ok {
		return nil, errUnknownKey
	}
	return secret, nil
}

var errUnknownKey = errors.New("unknown kid")

// describeJWTError turns golang-jwt's errors into a short description.
func describeJWTError(err error) string {
	switch {
	case errors.Is(err, jwt.ErrTokenMalformed):
		return "the token is malformed"
	case errors.Is(err, errUnknownKey):
		return "the token is signed with an unknown key"
	case errors.Is(err, jwt.ErrTokenSignatureInvalid), errors.Is(err, jwt.ErrTokenUnverifiable):
		return "the token signature is invalid or uses an algorithm other than HS256"
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
