package oauth

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"

	apierrors "github.com/waybillhq/waybill/errors"
)

// Audience and Role are the aud and role claims of every token.
const (
	Audience = "authenticated"
	Role     = "authenticated"
)

// KeySet is the set of HS256 keys: the current one signs, and every key in
// the set verifies, so keys rotate without downtime. Put the new key in
// Current and the old one in Previous until the last token it signed has
// expired (one access token lifetime).
type KeySet struct {
	current Key
	byID    map[string][]byte
}

// NewKeySet returns a key set that signs with current and verifies with
// current and previous. Every key needs an id, unique in the set, and a
// secret of at least MinKeyLength bytes.
func NewKeySet(current Key, previous ...Key) (*KeySet, error) {
	ks := &KeySet{current: current, byID: map[string][]byte{}}
	for _, k := range append([]Key{current}, previous...) {
		if k.ID == "" {
			return nil, errors.New("oauth: a key needs an id")
		}
		if len(k.Secret) < MinKeyLength {
			return nil, fmt.Errorf("oauth: key %q is %d bytes; HS256 keys need at least %d", k.ID, len(k.Secret), MinKeyLength)
		}
		if _, dup := ks.byID[k.ID]; dup {
			return nil, fmt.Errorf("oauth: key id %q is used twice", k.ID)
		}
		ks.byID[k.ID] = append([]byte(nil), k.Secret...)
	}
	return ks, nil
}

// The grants an OAuth access token comes from: the values of its
// oauth_grant_type claim.
const (
	// GrantClientCredentials is a token an app got for itself: its subject
	// is the app, and it may use only the branches of its
	// oauth_branch_ids, which it always carries, possibly empty.
	GrantClientCredentials = "client_credentials"
	// GrantAuthorizationCode is a token an app got for a user through the
	// authorization-code grant, or by refreshing one: its subject is the
	// user, it sees every branch of its organization, it carries no
	// oauth_branch_ids, and its jti names its refresh token family.
	GrantAuthorizationCode = "authorization_code"
)

// Claims are the claims of every token Waybill issues.
// Authorization-code tokens carry the user as subject and see every branch
// of their organization; client-credentials tokens carry the app as
// subject, its name in AppName, and the branches they may use in
// BranchIDs; product user tokens carry no ClientID. Grant says which grant
// an OAuth token came from.
type Claims struct {
	Issuer         string   `json:"iss"`
	Subject        string   `json:"sub"`
	Audience       string   `json:"aud"`
	Role           string   `json:"role"`
	ExpiresAt      int64    `json:"exp"`
	IssuedAt       int64    `json:"iat"`
	ID             string   `json:"jti"`
	OrganizationID string   `json:"organization_id,omitempty"`
	ClientID       string   `json:"oauth_client_id,omitempty"`
	Scopes         []string `json:"oauth_scopes,omitempty"`
	BranchIDs      []string `json:"oauth_branch_ids,omitempty"`
	AppName        string   `json:"oauth_app_name,omitempty"`
	// Grant is GrantClientCredentials or GrantAuthorizationCode for an
	// OAuth token, "" for a product user token; it is the
	// oauth_grant_type claim. Claims built without it (by hand, or read
	// from a token signed before the claim existed) are taken for client
	// credentials when they carry BranchIDs (even empty) or an AppName,
	// as such tokens always did, and for the authorization code otherwise;
	// the token service always sets it.
	Grant string `json:"oauth_grant_type,omitempty"`
}

// grant returns the grant of an OAuth token (see Grant), "" for a product
// user token.
func (c *Claims) grant() string {
	switch {
	case !c.OAuth():
		return ""
	case c.Grant != "":
		return c.Grant
	case c.BranchIDs != nil || c.AppName != "":
		return GrantClientCredentials
	}
	return GrantAuthorizationCode
}

// ClientCredentials reports whether the token was issued by the
// client-credentials grant, and so may use only BranchIDs.
func (c *Claims) ClientCredentials() bool { return c.grant() == GrantClientCredentials }

// checkGrant reports what is wrong with the grant of the claims, or "":
// an OAuth token's grant must be a known one, a client-credentials token
// must carry its branches (hasBranches, possibly none) and an
// authorization-code token must not; a product user token has no grant.
func (c *Claims) checkGrant(hasBranches bool) string {
	switch g := c.grant(); {
	case !c.OAuth() && c.Grant != "":
		return "a token without oauth_client_id has no oauth_grant_type"
	case !c.OAuth():
		return ""
	case g == GrantClientCredentials && !hasBranches:
		return "a client-credentials token lacks oauth_branch_ids"
	case g == GrantAuthorizationCode && hasBranches:
		return "an authorization-code token carries oauth_branch_ids"
	case g != GrantClientCredentials && g != GrantAuthorizationCode:
		return "the token's oauth_grant_type is unknown"
	}
	return ""
}

// OAuth reports whether the token is an OAuth access token, as opposed to a
// product user token.
func (c *Claims) OAuth() bool { return c.ClientID != "" }

// HasScope reports whether the token carries scope.
func (c *Claims) HasScope(scope string) bool {
	for _, s := range c.Scopes {
		if s == scope {
			return true
		}
	}
	return false
}

// FamilyID returns the refresh token family of an authorization-code
// token, which its jti names ("<family>.<random>"), or "".
func (c *Claims) FamilyID() string {
	if c.grant() != GrantAuthorizationCode {
		return ""
	}
	family, _, ok := strings.Cut(c.ID, ".")
	if !ok {
		return ""
	}
	return family
}

// MarshalJSON writes the claims. An OAuth token always carries
// oauth_scopes and oauth_grant_type; a client-credentials token always
// carries oauth_branch_ids, empty or not, and an authorization-code token
// never does.
func (c Claims) MarshalJSON() ([]byte, error) {
	type plain Claims // without this method
	if !c.OAuth() {
		return json.Marshal(plain(c))
	}
	scopes := c.Scopes
	if scopes == nil {
		scopes = []string{}
	}
	grant := c.grant()
	if grant != GrantClientCredentials {
		return json.Marshal(struct {
			plain
			Scopes    []string `json:"oauth_scopes"`
			BranchIDs []string `json:"oauth_branch_ids,omitempty"`
			Grant     string   `json:"oauth_grant_type"`
		}{plain(c), scopes, nil, grant})
	}
	branches := c.BranchIDs
	if branches == nil {
		branches = []string{}
	}
	return json.Marshal(struct {
		plain
		Scopes    []string `json:"oauth_scopes"`
		BranchIDs []string `json:"oauth_branch_ids"`
		Grant     string   `json:"oauth_grant_type"`
	}{plain(c), scopes, branches, grant})
}

// GetExpirationTime implements jwt.Claims; a token without exp has none.
func (c *Claims) GetExpirationTime() (*jwt.NumericDate, error) {
	return numericDate(c.ExpiresAt), nil
}

// GetIssuedAt implements jwt.Claims.
func (c *Claims) GetIssuedAt() (*jwt.NumericDate, error) {
	return numericDate(c.IssuedAt), nil
}

func numericDate(unix int64) *jwt.NumericDate {
	if unix == 0 {
		return nil
	}
	return jwt.NewNumericDate(time.Unix(unix, 0))
}

// GetNotBefore implements jwt.Claims; Waybill tokens have no nbf.
func (c *Claims) GetNotBefore() (*jwt.NumericDate, error) { return nil, nil }

// GetIssuer implements jwt.Claims.
func (c *Claims) GetIssuer() (string, error) { return c.Issuer, nil }

// GetSubject implements jwt.Claims.
func (c *Claims) GetSubject() (string, error) { return c.Subject, nil }

// GetAudience implements jwt.Claims.
func (c *Claims) GetAudience() (jwt.ClaimStrings, error) {
	return jwt.ClaimStrings{c.Audience}, nil
}

// Sign signs claims with the current key, naming it in the kid header. It
// refuses claims whose grant does not fit them: a Grant on a token without
// ClientID, an unknown Grant, or BranchIDs on an authorization-code token.
func (ks *KeySet) Sign(c *Claims) (string, error) {
	if problem := c.checkGrant(c.grant() == GrantClientCredentials || c.BranchIDs != nil); problem != "" {
		return "", fmt.Errorf("oauth: sign: %s", problem)
	}
	t := jwt.NewWithClaims(jwt.SigningMethodHS256, c)
	t.Header["kid"] = ks.current.ID
	s, err := t.SignedString(ks.current.Secret)
	if err != nil {
		return "", fmt.Errorf("oauth: sign: %w", err)
	}
	return s, nil
}

// FamilyChecker tells whether a refresh token family is revoked. A
// RefreshStore is one.
type FamilyChecker interface {
	FamilyRevoked(ctx context.Context, familyID string) (bool, error)
}

// Verifier checks bearer tokens: HS256 only, signed by a key of the set
// (named by kid), issued by Issuer, for the audience "authenticated", not
// expired. Every other algorithm, none included, is refused.
type Verifier struct {
	// Keys verify the signature.
	Keys *KeySet
	// Issuer is the required iss claim.
	Issuer string
	// Families, when set, refuses authorization-code tokens whose refresh
	// family was revoked (a replayed code, a reused refresh token). Nil
	// skips the check, which then costs nothing.
	Families FamilyChecker
	// Now is the clock; nil means time.Now.
	Now func() time.Time

	parser *jwt.Parser
}

var validMethods = []string{jwt.SigningMethodHS256.Alg()}

// NewVerifier returns a Verifier for tokens of issuer signed by keys. Set
// Families and Now before the first Verify, if at all.
func NewVerifier(keys *KeySet, issuer string) *Verifier {
	v := &Verifier{Keys: keys, Issuer: issuer}
	v.parser = v.newParser()
	return v
}

func (v *Verifier) newParser() *jwt.Parser {
	return jwt.NewParser(
		jwt.WithValidMethods(validMethods),
		jwt.WithAudience(Audience),
		jwt.WithIssuer(v.Issuer),
		jwt.WithExpirationRequired(),
		jwt.WithTimeFunc(v.now),
	)
}

func (v *Verifier) now() time.Time {
	if v.Now != nil {
		return v.Now()
	}
	return time.Now()
}

// Verify checks token and returns its claims, whose Grant it sets. The
// grant must fit the claims: a client-credentials token carries
// oauth_branch_ids (possibly empty), an authorization-code token does not,
// and a product user token names no grant. Every failure is a 401
// invalid_token *apierrors.Error whose description says what is wrong
// without echoing the token.
func (v *Verifier) Verify(ctx context.Context, token string) (*Claims, error) {
	p := v.parser
	if p == nil { // a Verifier literal
		p = v.newParser()
	}
	var c Claims
	if _, err := p.ParseWithClaims(token, &c, v.key); err != nil {
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
				return nil, apierrors.Internal(fmt.Errorf("oauth: check token family: %w", err))
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
