package oauth

import (
	"context"
	"errors"
	"time"
)

// Errors that stores return, and that callers test with errors.Is.
var (
	// ErrNotFound is returned for an app, code or token that does not exist.
	ErrNotFound = errors.New("oauth: not found")
	// ErrSpent is returned for an authorization code or refresh token that
	// was used before.
	ErrSpent = errors.New("oauth: already used")
	// ErrRevoked is returned for a refresh token whose family is revoked.
	ErrRevoked = errors.New("oauth: revoked")
	// ErrDuplicate is returned when a record with the same key exists.
	ErrDuplicate = errors.New("oauth: duplicate")
)

// App is a registered OAuth client ("app"): a confidential client of one
// organization, with the scopes it may ever be granted, the branches its
// client-credentials tokens may use, and the redirect URIs of its
// authorization-code flow.
type App struct {
	// ID is the app's id, the subject of its client-credentials tokens.
	ID string
	// ClientID is the public client identifier.
	ClientID string
	// Name is shown on the consent page and carried in oauth_app_name.
	Name string
	// OrganizationID is the organization that registered the app; its
	// client-credentials tokens are bound to it.
	OrganizationID string
	// Scopes are the scopes the app may be granted.
	Scopes []string
	// BranchIDs are the branches its client-credentials tokens may use; an
	// empty list reaches no branch. Nil says nothing of the app's branches,
	// and Server.ClientCredentials refuses such an app; a Store returns an
	// empty list, never nil.
	BranchIDs []string
	// RedirectURIs are the exact redirect URIs of its authorization requests.
	RedirectURIs []string
	// SecretHash is the SHA-256 of the client secret; empty for a public
	// client.
	SecretHash []byte
	// Public marks a public client (token_endpoint_auth_method none): an
	// app that cannot keep a secret (a desktop or mobile app, an agent),
	// which has none, identifies itself by its client id alone, and may use
	// only the authorization-code grant (with PKCE, as every client) and
	// refresh.
	Public bool
	// RegistrationTokenHash is the SHA-256 of the registration access
	// token of a client that registered itself through Dynamic Client
	// Registration (RFC 7591), which manages its registration (RFC 7592);
	// empty for an app registered otherwise. Such a client belongs to no
	// organization (OrganizationID is empty) and may use only the
	// authorization-code grant and refresh.
	RegistrationTokenHash []byte
	// TokenEndpointAuthMethod is the token_endpoint_auth_method a
	// dynamically registered client chose (none, client_secret_basic or
	// client_secret_post); empty for other apps. Either secret method
	// works for every confidential client: it is kept to answer the
	// client's registration as it was made.
	TokenEndpointAuthMethod string
	// CreatedAt is when the app was registered.
	CreatedAt time.Time
}

// Code is an issued authorization code, stored by the SHA-256 of its value.
type Code struct {
	Hash           []byte
	ClientID       string
	UserID         string
	OrganizationID string
	RedirectURI    string
	// Challenge is the PKCE S256 code challenge.
	Challenge string
	Scopes    []string
	ExpiresAt time.Time
	// FamilyID is the refresh token family issued when the code was
	// redeemed; empty before that.
	FamilyID string
	// Resource is the resource indicator (RFC 8707) of the authorization
	// request, "" for none.
	Resource string
	// Nonce is the OpenID Connect nonce of the authorization request, ""
	// for none; the id token of the code's exchange carries it.
	Nonce string
	// AuthTime is when the user signed in to the browser session that
	// approved the request (the id token's auth_time); zero when unknown.
	AuthTime time.Time
}

// RefreshToken is an issued refresh token, stored by the SHA-256 of its
// value. Tokens that descend from one authorization share a FamilyID.
type RefreshToken struct {
	Hash           []byte
	FamilyID       string
	ClientID       string
	UserID         string
	OrganizationID string
	Scopes         []string
	ExpiresAt      time.Time
	// Resource is the resource indicator (RFC 8707) the family was
	// authorized for, "" for none; rotation keeps it.
	Resource string
	// AuthorizedAt is when the family began: the code exchange that issued
	// its first token. SaveRefreshToken records it with the family (zero
	// means the current time) and every token of the family reports it, so
	// that rotation never moves it; the family's absolute lifetime counts
	// from it.
	AuthorizedAt time.Time
	// Spent is set by the store when the token was rotated.
	Spent bool
}

// Grant records a user's consent: the app may act for the user in the
// organization with these scopes.
type Grant struct {
	ClientID       string
	UserID         string
	OrganizationID string
	Scopes         []string
	CreatedAt      time.Time
}

// AppStore keeps the registered apps.
type AppStore interface {
	// App returns the app with the client id, or ErrNotFound.
	App(ctx context.Context, clientID string) (*App, error)
	// CreateApp stores a new app; ErrDuplicate if the client id exists.
	CreateApp(ctx context.Context, app *App) error
	// SetSecretHash replaces the app's secret hash; ErrNotFound if there is
	// no such app.
	SetSecretHash(ctx context.Context, clientID string, hash []byte) error
}

// CodeStore keeps authorization codes.
type CodeStore interface {
	// SaveCode stores a new code; ErrDuplicate if the hash exists.
	SaveCode(ctx context.Context, c *Code) error
	// RedeemCode atomically marks the code with this hash used, records
	// familyID as the refresh token family issued from it, and returns the
	// code. For a code used before it returns the code as first redeemed
	// (with that FamilyID) and ErrSpent; for an unknown one ErrNotFound.
	// Expiry and bindings are the caller's to check.
	RedeemCode(ctx context.Context, hash []byte, familyID string, now time.Time) (*Code, error)
	// Code returns the code with this hash, redeemed or not (a redeemed
	// code has its FamilyID), or ErrNotFound. It spends nothing: the token
	// service checks a code's bindings with it before RedeemCode.
	Code(ctx context.Context, hash []byte) (*Code, error)
}

// RefreshStore keeps refresh tokens and their families.
type RefreshStore interface {
	// SaveRefreshToken stores the first token of a new family;
	// ErrDuplicate if the hash exists.
	SaveRefreshToken(ctx context.Context, t *RefreshToken) error
	// RotateRefreshToken atomically spends the token with hash and stores
	// its successor, newHash, in the same family with the same client,
	// user, organization and scopes, expiring at expiresAt. It returns the
	// spent token. Of concurrent rotations of one token exactly one
	// succeeds. Revocation is checked first: a token of a revoked family
	// gives the token and ErrRevoked. A token spent before is reuse: the
	// store revokes the whole family and returns the token and ErrSpent. An
	// unknown token gives ErrNotFound; a newHash that exists ErrDuplicate,
	// with the old token left unspent. Expiry is the caller's to check.
	RotateRefreshToken(ctx context.Context, hash, newHash []byte, expiresAt, now time.Time) (*RefreshToken, error)
	// RefreshToken returns the token with hash, spent or not (Spent says
	// which), or ErrNotFound.
	RefreshToken(ctx context.Context, hash []byte) (*RefreshToken, error)
	// RevokeFamily revokes every token of the family, now and later: a
	// family that has no token yet is recorded revoked, so that tokens
	// saved in it afterwards are revoked too (a replayed code may be
	// detected before its first redemption has saved its token).
	RevokeFamily(ctx context.Context, familyID string, now time.Time) error
	// RevokeUserFamilies revokes every family of the user in the
	// organization, or in every organization when organizationID is "",
	// and returns how many it revoked (families revoked before do not
	// count). Every family whose first token was saved before the call is
	// revoked: offboarding ends the membership first and revokes second,
	// and a code exchange saves its token first and checks the membership
	// second, so that no family escapes.
	RevokeUserFamilies(ctx context.Context, userID, organizationID string, now time.Time) (int, error)
	// FamilyRevoked reports whether the family is revoked. An unknown
	// family is not.
	FamilyRevoked(ctx context.Context, familyID string) (bool, error)
	// RevokeClientFamilies revokes every family of the client (every
	// family whose first token was saved for it) and returns how many it
	// revoked; families revoked before do not count.
	RevokeClientFamilies(ctx context.Context, clientID string, now time.Time) (int, error)
}

// GrantStore keeps consent grants.
type GrantStore interface {
	// SaveGrant records a consent. Consent is asked at every
	// authorization, so the same consent may be saved many times.
	SaveGrant(ctx context.Context, g *Grant) error
}

// Store is every storage the token service needs. Times go in and come
// back in UTC, to the microsecond; lists come back non-nil. Package
// github.com/waybillhq/waybill/oauth/sqlstore implements it on PostgreSQL
// and SQLite; package oauthtest holds the conformance suite any other
// implementation must pass.
type Store interface {
	AppStore
	CodeStore
	RefreshStore
	GrantStore
}

// User is a product user, as the token service sees one.
type User struct {
	ID    string
	Email string
	// Name is the user's full name, for the name claim of OpenID Connect
	// (the profile scope); "" when the directory knows none.
	Name string
	// EmailVerified says whether the directory verified that Email is the
	// user's (the email_verified claim); nil when it does not know, and
	// the claim is then left out.
	EmailVerified *bool
}

// UserLookup is what a Directory may also implement: the token service
// looks users up by id for the claims of OpenID Connect (the email and
// name of the id token and of the UserInfo endpoint). A Directory without
// it gives id tokens and UserInfo answers that carry sub alone.
type UserLookup interface {
	// User returns the user with userID, or an error wrapping ErrNotFound
	// for an unknown one.
	User(ctx context.Context, userID string) (User, error)
}

// Membership is one organization a user belongs to.
type Membership struct {
	OrganizationID string
	Name           string
	// Admin users may register apps for the organization.
	Admin bool
}

// ErrBadCredentials is what a Directory returns, possibly wrapped, for an
// unknown email or a wrong password.
var ErrBadCredentials = errors.New("oauth: bad credentials")

// Directory is what the token service needs of the host application's
// users and organizations. The host owns them; the token service only asks.
type Directory interface {
	// Authenticate returns the user with this email and password, or an
	// error wrapping ErrBadCredentials.
	Authenticate(ctx context.Context, email, password string) (User, error)
	// Memberships lists the organizations the user belongs to.
	Memberships(ctx context.Context, userID string) ([]Membership, error)
	// Branches lists the branch ids of an organization.
	Branches(ctx context.Context, organizationID string) ([]string, error)
}
