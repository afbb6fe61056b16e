package bearer

import (
	"encoding/json"
	"strings"
	"time"

	"github.com/golang-jwt/jwt/v5"
)

// Audience and Role are the aud and role claims of every token.
const (
	Audience = "authenticated"
	Role     = "authenticated"
)

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
	Issuer   string `json:"iss"`
	Subject  string `json:"sub"`
	Audience string `json:"aud"`
	// Resource is the resource indicator (RFC 8707) the token was issued
	// for, "" for none: the token's aud claim is then the array
	// [Audience, Resource] instead of Audience alone. A resource server
	// that checks aud against its own identifier (RFC 9068) finds it there,
	// and one that checks "authenticated" still does.
	Resource       string   `json:"-"`
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

// MarshalJSON writes the claims. aud is Audience, or [Audience, Resource]
// when Resource is set (an OAuth token only). An OAuth token always carries
// oauth_scopes and oauth_grant_type, and the RFC 9068 client_id (the
// oauth_client_id) and scope (the oauth_scopes separated by spaces); a
// client-credentials token always carries oauth_branch_ids, empty or not,
// and an authorization-code token never does.
func (c Claims) MarshalJSON() ([]byte, error) {
	type plain Claims // without this method
	if !c.OAuth() {
		return json.Marshal(plain(c))
	}
	scopes := c.Scopes
	if scopes == nil {
		scopes = []string{}
	}
	var aud any = c.Audience
	if c.Resource != "" {
		aud = []string{c.Audience, c.Resource}
	}
	grant := c.grant()
	if grant != GrantClientCredentials {
		return json.Marshal(struct {
			plain
			Aud       any      `json:"aud"`
			Scopes    []string `json:"oauth_scopes"`
			BranchIDs []string `json:"oauth_branch_ids,omitempty"`
			Grant     string   `json:"oauth_grant_type"`
			ClientID  string   `json:"client_id"`
			Scope     string   `json:"scope"`
		}{plain(c), aud, scopes, nil, grant, c.ClientID, strings.Join(scopes, " ")})
	}
	branches := c.BranchIDs
	if branches == nil {
		branches = []string{}
	}
	return json.Marshal(struct {
		plain
		Aud       any      `json:"aud"`
		Scopes    []string `json:"oauth_scopes"`
		BranchIDs []string `json:"oauth_branch_ids"`
		Grant     string   `json:"oauth_grant_type"`
		ClientID  string   `json:"client_id"`
		Scope     string   `json:"scope"`
	}{plain(c), aud, scopes, branches, grant, c.ClientID, strings.Join(scopes, " ")})
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
	if c.Resource != "" {
		return jwt.ClaimStrings{c.Audience, c.Resource}, nil
	}
	return jwt.ClaimStrings{c.Audience}, nil
}
