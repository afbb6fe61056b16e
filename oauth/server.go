package oauth

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/waybillhq/waybill/audit"
	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/internal/excerpt"
	"github.com/waybillhq/waybill/oauth/bearer"
)

// Lifetimes of what the server issues, unless its fields say otherwise.
const (
	DefaultAccessTokenTTL  = time.Hour
	DefaultRefreshTokenTTL = 30 * 24 * time.Hour
	DefaultCodeTTL         = 60 * time.Second
	// DefaultRefreshMaxAge is the absolute lifetime of a refresh token
	// family (see Server.RefreshMaxAge).
	DefaultRefreshMaxAge = 90 * 24 * time.Hour
)

// Server is the OAuth 2.1 token service: the grants, the authorization and
// consent flow, app registration, revocation and introspection. Its zero
// values are the documented defaults; Issuer, Keys, Store and Directory are
// required. Handler serves it over HTTP; the methods below serve it to Go
// callers (an admin command, a test) without HTTP.
type Server struct {
	// Issuer is the issuer URL, the iss claim and the base of the
	// endpoints in the RFC 8414 metadata, e.g. "https://tms.example.com".
	Issuer string
	// Keys sign the tokens.
	Keys *bearer.KeySet
	// Store keeps apps, codes, refresh tokens and grants.
	Store Store
	// Directory authenticates users and lists their organizations. Every
	// code exchange and refresh asks it whether the user is still a member
	// of the token's organization.
	Directory Directory
	// Now is the clock; nil means time.Now.
	Now func() time.Time
	// AccessTokenTTL, RefreshTokenTTL and CodeTTL are the lifetimes; zero
	// means the Default... constants.
	AccessTokenTTL, RefreshTokenTTL, CodeTTL time.Duration
	// RefreshMaxAge is the absolute lifetime of a refresh token family:
	// counted from the code exchange that began it, never extended by
	// rotation. Each refresh token lives RefreshTokenTTL, but none of the
	// family, and no access token issued from it, outlives the family;
	// after it the user must authorize the app again. Zero means
	// DefaultRefreshMaxAge.
	RefreshMaxAge time.Duration
	// DescribeScope puts a scope in words on the consent page; nil means
	// the package's DescribeScope.
	DescribeScope func(scope string) string
	// Logger receives the service's own log lines and the requests it
	// failed to serve (see apierrors.Writer); nil means slog.Default.
	// Secrets, codes and tokens are never logged.
	Logger *slog.Logger
	// Realm is the realm of the WWW-Authenticate challenges of failed
	// client authentication and of tokens refused; "" means the host of
	// Issuer (e.g. "tms.example.com").
	Realm string
	// SecureCookies marks the session and CSRF cookies Secure. Set it when
	// the issuer is https.
	SecureCookies bool
	// Paths are where Mount and Handler serve the endpoints; a zero field
	// means its default, so the zero Paths is the Path constants (see
	// Paths for what follows them). Set them before Mount.
	Paths Paths
	// ScopesSupported, when not empty, is listed as scopes_supported in
	// the authorization server metadata: the scopes of the resource
	// servers whose tokens this service issues.
	ScopesSupported []string
	// CutOffs, when set, are the cut-offs of disconnected apps (see
	// DisconnectApp and bearer.CutOffList): introspection answers a token
	// they refuse inactive, as the host's verifier refuses it, and a
	// refresh token of an authorization given before the app's cut-off
	// fails and has its family revoked (one saved by a code exchange
	// that raced the disconnection).
	CutOffs bearer.CutOffChecker
	// Resources are the resource indicators (RFC 8707) that clients may
	// name in the resource parameter of their authorization and token
	// requests: the identifiers of the APIs whose tokens this service
	// issues, as their protected resource metadata names them. A token
	// issued for one has aud ["authenticated", "<resource>"] (see
	// bearer.Claims.Resource), which a resource server that checks aud
	// against its own identifier (RFC 9068) accepts. A request naming any
	// other resource, or more than one, is refused with invalid_target;
	// empty refuses every resource parameter.
	Resources []string
	// Audit records the service's security-relevant actions (apps
	// registered, their secrets rotated, apps disconnected, consents given,
	// registration tokens made) in the organizations' audit log (package
	// audit): the Store appends each in the transaction of the action (see
	// AuditEntry).
	Audit bool
	// Registration says who may register clients through Dynamic Client
	// Registration (RFC 7591) at Paths.Register: nobody (RegistrationOff,
	// the zero value), holders of an initial access token, or anyone. The
	// Store must implement RegistrationStore for the other two. See
	// RegisterClient.
	Registration RegistrationMode
	// ClientMetadataDocuments, when set, accepts clients that nobody
	// registered and that identify themselves by a client_id that is an
	// https URL: the URL of their client metadata document, fetched and
	// checked as ClientMetadataDocuments says (through an SSRF guard,
	// small, quick, no redirects, cached). Such a client is a public client
	// (token_endpoint_auth_method none: the authorization-code grant with
	// PKCE, and refresh) of no organization; the URL is its client id
	// everywhere (oauth_client_id, introspection, connected apps), and the
	// consent page names it with the host of the URL, since its name is
	// its own claim. Its scopes are those its document's scope member
	// lists, which must all be in ScopesSupported, or else every scope of
	// ScopesSupported. A client_id whose document cannot be fetched or is
	// not valid is an unknown client: an error page at the authorization
	// endpoint, with the reason, and invalid_client at the token
	// endpoints. Nil turns the feature off: an https client_id is then an
	// unknown client like any other, and the metadata does not announce
	// client_id_metadata_document_supported.
	ClientMetadataDocuments *ClientMetadataDocuments
}

// checkResource returns the resource indicator a request named, "" for
// none, or invalid_target: one of Resources, at most one (the same value
// repeated counts once).
func (s *Server) checkResource(values []string) (string, error) {
	var resource string
	for _, v := range values {
		switch {
		case resource != "" && v != resource:
			return "", apierrors.InvalidTarget("name at most one resource: this server issues each token for one")
		case !slices.Contains(s.Resources, v):
			return "", apierrors.InvalidTarget("the resource %q is not one this server issues tokens for", excerpt.Cut(v, 200))
		}
		resource = v
	}
	return resource, nil
}

// grantedResource returns the resource a token of a grant for granted
// ("" for none) is issued for when the token request names requested:
// requested when it is given (one of Resources, and granted's when the
// grant has one), else granted.
func (s *Server) grantedResource(granted, requested string) (string, error) {
	if requested == "" {
		return granted, nil
	}
	if _, err := s.checkResource([]string{requested}); err != nil {
		return "", err
	}
	if granted != "" && requested != granted {
		return "", apierrors.InvalidTarget("the grant was authorized for another resource")
	}
	return requested, nil
}

func (s *Server) now() time.Time {
	if s.Now != nil {
		return s.Now()
	}
	return time.Now()
}

// verifier returns a Verifier of the server's tokens on the server's clock,
// without the revocation check: set Families for that.
func (s *Server) verifier() *bearer.Verifier {
	return &bearer.Verifier{Keys: s.Keys, Issuer: s.Issuer, Now: s.Now}
}

func (s *Server) ttl(d, def time.Duration) time.Duration {
	if d > 0 {
		return d
	}
	return def
}

func (s *Server) logger() *slog.Logger {
	if s.Logger != nil {
		return s.Logger
	}
	return slog.Default()
}

// errorWriter is the Writer of the server's errors: it logs to the
// server's Logger and names its realm in challenges.
func (s *Server) errorWriter() apierrors.Writer {
	return apierrors.Writer{Logger: s.logger(), Realm: s.realm()}
}

// handle returns an http.Handler that runs h and answers its error with
// errorWriter. The Writer is made when a request is served, not when the
// endpoint is mounted: Issuer (which gives the default realm) and Logger
// may be set after Mount, as when the issuer is the URL of the server the
// handler was mounted on.
func (s *Server) handle(h apierrors.HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		s.errorWriter().Handle(h).ServeHTTP(w, r)
	})
}

func (s *Server) realm() string {
	if s.Realm != "" {
		return s.Realm
	}
	if u, err := url.Parse(s.Issuer); err == nil {
		return u.Host
	}
	return ""
}

// Token is what a successful grant issues.
type Token struct {
	AccessToken string
	// TokenType is "bearer".
	TokenType string
	// ExpiresIn is the access token's lifetime in seconds.
	ExpiresIn int
	// RefreshToken is set for the authorization-code and refresh grants.
	RefreshToken string
	// Scopes are the scopes granted.
	Scopes []string
	// Claims are the access token's claims.
	Claims *bearer.Claims
	// IDToken is the OpenID Connect id token: set by a code exchange
	// whose scopes hold openid on a server that speaks OpenID Connect
	// (see Server.OpenID), "" otherwise.
	IDToken string
}

// dummyHash is compared against when a client id is unknown, so that the
// time taken does not reveal which client ids exist.
var dummyHash = hashSecret("no such client")

// AuthenticateClient returns the app with clientID if secret is its
// secret. A failure is invalid_client, whose WWW-Authenticate challenge
// names scheme, the authentication scheme the client used ("Basic", or ""
// for credentials in the body).
func (s *Server) AuthenticateClient(ctx context.Context, clientID, secret, scheme string) (*App, error) {
	if clientID == "" {
		return nil, apierrors.InvalidClient(scheme, "client authentication is required")
	}
	app, err := s.app(ctx, clientID)
	var docErr *ClientMetadataError
	switch {
	case errors.Is(err, ErrNotFound):
		secretMatches(secret, dummyHash)
		return nil, apierrors.InvalidClient(scheme, "client authentication failed")
	case errors.Is(err, errTooManyFetches):
		return nil, apierrors.Unavailable("the server is fetching too many client metadata documents at once; try again in a moment")
	case errors.As(err, &docErr):
		return nil, apierrors.InvalidClient(scheme, "the client metadata document of client_id cannot be used: %s", docErr.Reason)
	case err != nil:
		return nil, apierrors.Internal(fmt.Errorf("oauth: load app: %w", err))
	}
	if app.Public {
		// A public client has no secret to prove: its client id names it,
		// and PKCE binds its codes. One that sends a secret is confused
		// about what it is, and is refused rather than half-trusted.
		if secret != "" {
			return nil, apierrors.InvalidClient(scheme, "the client is public (token_endpoint_auth_method none) and has no secret: send its client_id alone")
		}
		return app, nil
	}
	if !secretMatches(secret, app.SecretHash) {
		return nil, apierrors.InvalidClient(scheme, "client authentication failed")
	}
	return app, nil
}

// app returns the app of clientID: the one authenticated for this request
// (IdentifyClient) when it is that client's, else lookupApp's.
func (s *Server) app(ctx context.Context, clientID string) (*App, error) {
	if app, ok := AuthenticatedApp(ctx); ok && app.ClientID == clientID {
		return app, nil
	}
	return s.lookupApp(ctx, clientID)
}

// lookupApp returns the app of clientID: when ClientMetadataDocuments is
// set and clientID is an https URL, the public client its metadata
// document describes (or a *ClientMetadataError); else the store's app (or
// ErrNotFound). A URL is never looked for in the store, whose client ids
// this server makes.
func (s *Server) lookupApp(ctx context.Context, clientID string) (*App, error) {
	if d := s.ClientMetadataDocuments; d != nil && IsClientMetadataURL(clientID) {
		now := s.now
		if d.Now != nil {
			now = d.Now
		}
		doc, err := d.resolve(ctx, clientID, now)
		if err != nil {
			return nil, err
		}
		return doc.app(s.registrableScopes())
	}
	return s.Store.App(ctx, clientID)
}

// clientHost returns the host of the client id of app when app comes from
// a client metadata document, else "": the consent and sign-in pages show
// it beside the name, which such a client claims for itself.
func (s *Server) clientHost(app *App) string {
	if s.ClientMetadataDocuments == nil || !IsClientMetadataURL(app.ClientID) {
		return ""
	}
	u, err := url.Parse(app.ClientID)
	if err != nil {
		return ""
	}
	return u.Host
}

// ClientCredentials runs the client-credentials grant for an authenticated
// app. scope, when not empty, narrows the token to a subset of the app's
// scopes (invalid_scope otherwise); empty means all of them. resource,
// when not empty, is the resource indicator the token is for (one of
// Resources; invalid_target otherwise). The token may
// use only the app's BranchIDs: an app whose BranchIDs is nil, which says
// nothing of its branches, is refused (unauthorized_client); one with an
// empty list gets a token that reaches no branch. A public app is refused
// (unauthorized_client).
func (s *Server) ClientCredentials(ctx context.Context, app *App, scope, resource string) (*Token, error) {
	if app.Public {
		return nil, apierrors.UnauthorizedClient("a public client may not use the client-credentials grant: it has no secret to prove who asks")
	}
	if len(app.RegistrationTokenHash) > 0 {
		return nil, apierrors.UnauthorizedClient("a dynamically registered client may not use the client-credentials grant: it belongs to no organization, and acts only for the users who approve it")
	}
	if app.BranchIDs == nil {
		return nil, apierrors.UnauthorizedClient("the app has no branch list, so it may not use the client-credentials grant")
	}
	resource, err := s.grantedResource("", resource)
	if err != nil {
		return nil, err
	}
	scopes := app.Scopes
	if s.OpenID() {
		// The identity scopes name a user; a client-credentials token has
		// none, even when the app's list names them.
		scopes = withoutIdentityScopes(scopes)
	}
	if scope != "" {
		requested := ParseScope(scope)
		if s.OpenID() && len(requested) != len(withoutIdentityScopes(requested)) {
			return nil, apierrors.InvalidScope("openid, profile and email are scopes of a user, for the authorization-code flow; a client-credentials token has none")
		}
		if missing := missingScopes(requested, app.Scopes); len(missing) > 0 {
			return nil, apierrors.InvalidScope("the app may not request %s", strings.Join(missing, " "))
		}
		scopes = requested
	}
	now := s.now()
	ttl := s.ttl(s.AccessTokenTTL, DefaultAccessTokenTTL)
	c := &bearer.Claims{
		Issuer: s.Issuer, Subject: app.ID, Audience: bearer.Audience, Role: bearer.Role,
		IssuedAt: now.Unix(), ExpiresAt: now.Add(ttl).Unix(), ID: newID(),
		OrganizationID: app.OrganizationID, ClientID: app.ClientID, Scopes: scopes,
		BranchIDs: app.BranchIDs, AppName: app.Name, Grant: bearer.GrantClientCredentials, Resource: resource,
	}
	s.recordUse(ctx, app.ClientID, app.OrganizationID, now)
	return s.issue(c, ttl, "")
}

// ExchangeCode runs the authorization-code grant for an authenticated app:
// the code must be issued to this app for this redirect URI, verifier must
// match its PKCE challenge, and it must be unexpired and unused. These
// bindings are checked before the code is spent, so a request that fails
// them (another client's, above all) neither spends the code nor revokes
// anything. The code is then spent atomically: of concurrent exchanges
// exactly one succeeds. A second use of a code by its own client, with its
// redirect URI and verifier, is a replay: it fails and revokes every token
// issued from the code. The user must still be a member of the code's
// organization; if not, the tokens are revoked and the grant fails.
//
// The tokens are for the resource indicator of the authorization request
// (Code.Resource), or for resource when it is given: one of Resources, and
// the code's when the code has one (invalid_target otherwise). The refresh
// token family keeps the code's resource, or resource when the code has
// none.
//
// When the code's scopes hold openid and the server speaks OpenID Connect
// (OpenID), the token carries an id token too (see Token.IDToken); a code
// issued while the server signed with HS256 has no openid scope.
func (s *Server) ExchangeCode(ctx context.Context, app *App, code, redirectURI, verifier, resource string) (*Token, error) {
	switch {
	case code == "":
		return nil, apierrors.InvalidRequest("code is required")
	case verifier == "":
		return nil, apierrors.InvalidRequest("code_verifier is required (PKCE)")
	}
	now := s.now()
	hash := hashSecret(code)
	c, err := s.Store.Code(ctx, hash)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil, apierrors.InvalidGrant("the authorization code is invalid")
	case err != nil:
		return nil, apierrors.Internal(fmt.Errorf("oauth: load code: %w", err))
	case c.ClientID != app.ClientID:
		return nil, apierrors.InvalidGrant("the authorization code was issued to another client")
	case redirectURI != c.RedirectURI:
		return nil, apierrors.InvalidGrant("redirect_uri does not match the authorization request")
	case !verifierMatches(verifier, c.Challenge):
		return nil, apierrors.InvalidGrant("code_verifier does not match the code challenge")
	case c.FamilyID == "" && !now.Before(c.ExpiresAt):
		return nil, apierrors.InvalidGrant("the authorization code has expired")
	}
	resource, err = s.grantedResource(c.Resource, resource)
	if err != nil {
		return nil, err
	}
	family := newID()
	c, err = s.Store.RedeemCode(ctx, hash, family, now)
	switch {
	case errors.Is(err, ErrSpent):
		if c != nil && c.FamilyID != "" {
			if err := s.Store.RevokeFamily(ctx, c.FamilyID, now); err != nil {
				return nil, apierrors.Internal(fmt.Errorf("oauth: revoke after code replay: %w", err))
			}
		}
		s.logger().WarnContext(ctx, "authorization code replayed; its tokens are revoked", "client_id", app.ClientID)
		return nil, apierrors.InvalidGrant("the authorization code was already used; the tokens issued from it are revoked")
	case errors.Is(err, ErrNotFound):
		return nil, apierrors.InvalidGrant("the authorization code is invalid")
	case err != nil:
		return nil, apierrors.Internal(fmt.Errorf("oauth: redeem code: %w", err))
	}
	end := now.Add(s.ttl(s.RefreshMaxAge, DefaultRefreshMaxAge))
	refresh := NewSecret()
	rt := &RefreshToken{
		Hash: hashSecret(refresh), FamilyID: family, ClientID: app.ClientID, UserID: c.UserID,
		OrganizationID: c.OrganizationID, Scopes: c.Scopes, Resource: resource,
		ExpiresAt: earliest(now.Add(s.ttl(s.RefreshTokenTTL, DefaultRefreshTokenTTL)), end), AuthorizedAt: now,
	}
	if err := s.Store.SaveRefreshToken(ctx, rt); err != nil {
		return nil, apierrors.Internal(fmt.Errorf("oauth: save refresh token: %w", err))
	}
	// The membership is checked after the family is saved: offboarding
	// ends the membership before it revokes the user's families, so either
	// this check sees the membership gone or the revocation sees the family.
	if err := s.requireMember(ctx, rt, now); err != nil {
		return nil, err
	}
	s.recordUse(ctx, rt.ClientID, rt.OrganizationID, now)
	tok, err := s.userToken(rt, refresh, resource, now, end)
	if err != nil {
		return nil, err
	}
	if s.OpenID() && slices.Contains(c.Scopes, ScopeOpenID) {
		if tok.IDToken, err = s.idToken(ctx, c, tok); err != nil {
			return nil, err
		}
	}
	return tok, nil
}

// Refresh runs the refresh-token grant. clientID is the client the request
// authenticated as or named, or "" when it named none (the token is bound
// to its client); a token of another client is invalid_grant. The token is
// spent and a new one returned in the same family; reusing a spent token
// fails and revokes the whole family. A token whose user is no longer a
// member of its organization fails and has its family revoked; one whose
// family is older than RefreshMaxAge fails. The access token is for the
// family's resource indicator, or for resource when it is given: one of
// Resources, and the family's when it has one (invalid_target otherwise,
// and the token is not spent).
//
// A refresh answers no id token, even for a family whose scopes hold
// openid: OpenID Connect Core section 12.2 leaves it to the server, and
// the user did not sign in again; the client keeps the id token of the
// code exchange, and asks UserInfo for the user's current claims.
func (s *Server) Refresh(ctx context.Context, clientID, refresh, resource string) (*Token, error) {
	if refresh == "" {
		return nil, apierrors.InvalidRequest("refresh_token is required")
	}
	now := s.now()
	hash := hashSecret(refresh)
	old, err := s.Store.RefreshToken(ctx, hash)
	switch {
	case errors.Is(err, ErrNotFound):
		return nil, apierrors.InvalidGrant("the refresh token is invalid")
	case err != nil:
		return nil, apierrors.Internal(fmt.Errorf("oauth: load refresh token: %w", err))
	case clientID != "" && old.ClientID != clientID:
		return nil, apierrors.InvalidGrant("the refresh token was issued to another client")
	}
	resource, err = s.grantedResource(old.Resource, resource)
	if err != nil {
		return nil, err
	}
	end := old.AuthorizedAt.Add(s.ttl(s.RefreshMaxAge, DefaultRefreshMaxAge))
	switch {
	case !now.Before(end):
		return nil, apierrors.InvalidGrant("the authorization has reached its maximum age; the user must authorize the app again")
	case !now.Before(old.ExpiresAt):
		return nil, apierrors.InvalidGrant("the refresh token has expired")
	}
	if err := s.requireMember(ctx, old, now); err != nil {
		return nil, err
	}
	if s.CutOffs != nil && s.CutOffs.CutOff(old.OrganizationID, old.ClientID, old.AuthorizedAt) {
		// A family that a code exchange saved while the app was being
		// disconnected, after the disconnection revoked the others.
		if err := s.Store.RevokeFamily(ctx, old.FamilyID, now); err != nil {
			return nil, apierrors.Internal(fmt.Errorf("oauth: revoke the family of a disconnected app: %w", err))
		}
		return nil, apierrors.InvalidGrant("the app was disconnected from the organization; the user must authorize it again")
	}
	next := NewSecret()
	expires := earliest(now.Add(s.ttl(s.RefreshTokenTTL, DefaultRefreshTokenTTL)), end)
	spent, err := s.Store.RotateRefreshToken(ctx, hash, hashSecret(next), expires, now)
	switch {
	case errors.Is(err, ErrSpent):
		s.logger().WarnContext(ctx, "refresh token reused; its family is revoked", "client_id", old.ClientID)
		return nil, apierrors.InvalidGrant("the refresh token was already used; its family is revoked")
	case errors.Is(err, ErrRevoked):
		return nil, apierrors.InvalidGrant("the refresh token was revoked")
	case errors.Is(err, ErrNotFound):
		return nil, apierrors.InvalidGrant("the refresh token is invalid")
	case err != nil:
		return nil, apierrors.Internal(fmt.Errorf("oauth: rotate refresh token: %w", err))
	}
	s.recordUse(ctx, spent.ClientID, spent.OrganizationID, now)
	return s.userToken(spent, next, resource, now, end)
}

// requireMember checks that the user of rt is still a member of its
// organization. If not, it revokes the family and returns invalid_grant.
func (s *Server) requireMember(ctx context.Context, rt *RefreshToken, now time.Time) error {
	ms, err := s.Directory.Memberships(ctx, rt.UserID)
	if err != nil {
		return apierrors.Internal(fmt.Errorf("oauth: memberships: %w", err))
	}
	if slices.ContainsFunc(ms, func(m Membership) bool { return m.OrganizationID == rt.OrganizationID }) {
		return nil
	}
	if err := s.Store.RevokeFamily(ctx, rt.FamilyID, now); err != nil {
		return apierrors.Internal(fmt.Errorf("oauth: revoke the family of a former member: %w", err))
	}
	s.logger().InfoContext(ctx, "the user left the organization; the refresh token family is revoked", "client_id", rt.ClientID)
	return apierrors.InvalidGrant("the user is no longer a member of the organization; the tokens are revoked")
}

// userToken signs the access token of an authorization-code or refresh
// grant, for resource, expiring no later than end, the end of its family.
// Its jti names the refresh family, so that revoking the family revokes it
// too (see bearer.Verifier.Families).
func (s *Server) userToken(rt *RefreshToken, refresh, resource string, now, end time.Time) (*Token, error) {
	ttl := min(s.ttl(s.AccessTokenTTL, DefaultAccessTokenTTL), end.Sub(now).Truncate(time.Second))
	c := &bearer.Claims{
		Issuer: s.Issuer, Subject: rt.UserID, Audience: bearer.Audience, Role: bearer.Role,
		IssuedAt: now.Unix(), ExpiresAt: now.Add(ttl).Unix(), ID: rt.FamilyID + "." + NewSecret()[:16],
		OrganizationID: rt.OrganizationID, ClientID: rt.ClientID, Scopes: nonNil(rt.Scopes),
		Grant: bearer.GrantAuthorizationCode, Resource: resource,
	}
	return s.issue(c, ttl, refresh)
}

// earliest returns the earlier of a and b.
func earliest(a, b time.Time) time.Time {
	if b.Before(a) {
		return b
	}
	return a
}

func (s *Server) issue(c *bearer.Claims, ttl time.Duration, refresh string) (*Token, error) {
	access, err := s.Keys.Sign(c)
	if err != nil {
		return nil, apierrors.Internal(err)
	}
	return &Token{
		AccessToken: access, TokenType: "bearer", ExpiresIn: int(ttl / time.Second),
		RefreshToken: refresh, Scopes: c.Scopes, Claims: c,
	}, nil
}

// signInUser authenticates a product user by email and password and
// returns a product user token: signed like the others, without
// oauth_client_id, so the API refuses it (invalid_token_type) while app
// registration takes it.
func (s *Server) signInUser(ctx context.Context, email, password string) (*Token, error) {
	u, err := s.Directory.Authenticate(ctx, email, password)
	switch {
	case errors.Is(err, ErrBadCredentials):
		return nil, apierrors.InvalidGrant("invalid email or password")
	case err != nil:
		return nil, apierrors.Internal(fmt.Errorf("oauth: authenticate user: %w", err))
	}
	now := s.now()
	ttl := s.ttl(s.AccessTokenTTL, DefaultAccessTokenTTL)
	c := &bearer.Claims{
		Issuer: s.Issuer, Subject: u.ID, Audience: bearer.Audience, Role: bearer.Role,
		IssuedAt: now.Unix(), ExpiresAt: now.Add(ttl).Unix(), ID: newID(),
	}
	return s.issue(c, ttl, "")
}

// AuthorizationRequest is the request of GET /authorize (RFC 6749 section
// 4.1.1 with PKCE, RFC 7636).
type AuthorizationRequest struct {
	ClientID            string
	RedirectURI         string
	ResponseType        string
	CodeChallenge       string
	CodeChallengeMethod string
	Scope               string
	State               string
	// Resource is the resource indicator (RFC 8707), "" for none.
	Resource string
	// Nonce is OpenID Connect's nonce, "" for none: at most maxNonceLength
	// bytes, kept with the code and returned in the id token, where the
	// client checks it.
	Nonce string
	// Prompt is OpenID Connect's prompt: space-separated, of none (answer
	// without showing a page: login_required or consent_required, since
	// consent is asked at every authorization), login (sign in again)
	// and consent and select_account (the consent page, which is always
	// shown and offers another account, does both); none goes alone.
	// Other values are ignored.
	Prompt string
	// MaxAge is OpenID Connect's max_age, "" for none: the most seconds
	// since the user signed in; an older sign-in must be done again (0 is
	// prompt=login).
	MaxAge string
	// AuthTime is no request parameter: when the user who approves the
	// request signed in, which IssueCode keeps with the code for the id
	// token's auth_time. The consent flow sets it from the session; zero
	// means the time of IssueCode (a host that authenticates the user
	// itself, just before).
	AuthTime time.Time
	// resources are the resource parameters as the request gave them (nil
	// for a request built by hand, which names Resource alone).
	resources []string
}

// authorizationRequestFrom reads an authorization request from values.
func authorizationRequestFrom(v url.Values) AuthorizationRequest {
	return AuthorizationRequest{
		ClientID: v.Get("client_id"), RedirectURI: v.Get("redirect_uri"),
		ResponseType: v.Get("response_type"), CodeChallenge: v.Get("code_challenge"),
		CodeChallengeMethod: v.Get("code_challenge_method"), Scope: v.Get("scope"), State: v.Get("state"),
		Resource: v.Get("resource"), resources: v["resource"],
		Nonce: v.Get("nonce"), Prompt: v.Get("prompt"), MaxAge: v.Get("max_age"),
	}
}

// values returns the request as query parameters.
func (r AuthorizationRequest) values() url.Values {
	v := url.Values{}
	set := func(k, val string) {
		if val != "" {
			v.Set(k, val)
		}
	}
	set("client_id", r.ClientID)
	set("redirect_uri", r.RedirectURI)
	set("response_type", r.ResponseType)
	set("code_challenge", r.CodeChallenge)
	set("code_challenge_method", r.CodeChallengeMethod)
	set("scope", r.Scope)
	set("state", r.State)
	set("resource", r.Resource)
	set("nonce", r.Nonce)
	set("prompt", r.Prompt)
	set("max_age", r.MaxAge)
	return v
}

// CheckAuthorization validates an authorization request. The app is
// returned whenever the client and redirect URI are valid. A failure with a
// nil app must be shown to the user and never redirected (unknown client,
// redirect URI that does not match exactly); a failure with an app goes
// back to the redirect URI as error and error_description.
//
// The scopes must be the app's, or, on a server that speaks OpenID
// Connect (OpenID), the identity scopes openid, profile and email, which
// every app may ask for; with HS256 openid is invalid_scope. A nonce
// longer than 512 bytes, prompt=none with another prompt value, and a
// max_age that is not a number of seconds are invalid_request.
func (s *Server) CheckAuthorization(ctx context.Context, r AuthorizationRequest) (*App, []string, error) {
	if r.ClientID == "" {
		return nil, nil, apierrors.InvalidRequest("client_id is required")
	}
	app, err := s.lookupApp(ctx, r.ClientID)
	var docErr *ClientMetadataError
	switch {
	case errors.Is(err, ErrNotFound):
		return nil, nil, apierrors.InvalidRequest("unknown client_id")
	case errors.Is(err, errTooManyFetches):
		return nil, nil, apierrors.Unavailable("the server is fetching too many client metadata documents at once; try again in a moment")
	case errors.As(err, &docErr):
		return nil, nil, apierrors.InvalidRequest("unknown client_id: its client metadata document cannot be used: %s", docErr.Reason)
	case err != nil:
		return nil, nil, apierrors.Internal(fmt.Errorf("oauth: load app: %w", err))
	case r.RedirectURI == "":
		return nil, nil, apierrors.InvalidRequest("redirect_uri is required")
	case !slices.Contains(app.RedirectURIs, r.RedirectURI):
		return nil, nil, apierrors.InvalidRequest("redirect_uri is not registered for this client")
	case CheckRedirectURI(r.RedirectURI) != nil:
		// Registered before the rules of CheckRedirectURI: never redirect there.
		return nil, nil, apierrors.InvalidRequest("redirect_uri is registered but not allowed: %s", CheckRedirectURI(r.RedirectURI))
	}
	switch {
	case r.ResponseType != "code":
		return app, nil, apierrors.UnsupportedResponseType("response_type must be code")
	case r.CodeChallengeMethod != "S256":
		return app, nil, apierrors.InvalidRequest("code_challenge_method must be S256; plain is not supported")
	case !validChallenge(r.CodeChallenge):
		return app, nil, apierrors.InvalidRequest("code_challenge must be the base64url SHA-256 of the code verifier")
	}
	if err := checkOpenIDParams(r); err != nil {
		return app, nil, err
	}
	scopes := ParseScope(r.Scope)
	if len(scopes) == 0 {
		return app, nil, apierrors.InvalidScope("scope is required")
	}
	for _, sc := range scopes {
		if !validScopeToken(sc) {
			return app, nil, apierrors.InvalidScope("scope %q is malformed", sc)
		}
	}
	allowed := app.Scopes
	switch {
	case s.OpenID():
		allowed = append(slices.Clip(allowed), identityScopes...)
	case slices.Contains(scopes, ScopeOpenID):
		return app, nil, apierrors.InvalidScope("openid needs a server that signs its tokens with a public key (ES256 or EdDSA); this one signs with a shared secret (HS256)")
	}
	if missing := missingScopes(scopes, allowed); len(missing) > 0 {
		return app, nil, apierrors.InvalidScope("the app may not request %s", strings.Join(missing, " "))
	}
	resources := r.resources
	if resources == nil && r.Resource != "" {
		resources = []string{r.Resource}
	}
	if _, err := s.checkResource(resources); err != nil {
		return app, nil, err
	}
	return app, scopes, nil
}

// IssueCode records the user's consent for the organization and returns a
// new authorization code for the (already checked) request. The code keeps
// the request's Nonce and AuthTime for the id token of its exchange.
func (s *Server) IssueCode(ctx context.Context, app *App, r AuthorizationRequest, scopes []string, userID, organizationID string) (string, error) {
	now := s.now()
	granted := s.withAudit(ctx, audit.ConsentGranted, organizationID, appTarget(app.ClientID), map[string]any{"user_id": userID, "scopes": scopes})
	if err := s.Store.SaveGrant(granted, &Grant{
		ClientID: app.ClientID, UserID: userID, OrganizationID: organizationID, Scopes: scopes, CreatedAt: now,
	}); err != nil {
		return "", apierrors.Internal(fmt.Errorf("oauth: save grant: %w", err))
	}
	code := NewSecret()
	authTime := r.AuthTime
	if authTime.IsZero() {
		authTime = now
	}
	if err := s.Store.SaveCode(ctx, &Code{
		Hash: hashSecret(code), ClientID: app.ClientID, UserID: userID, OrganizationID: organizationID,
		RedirectURI: r.RedirectURI, Challenge: r.CodeChallenge, Scopes: scopes, Resource: r.Resource,
		ExpiresAt: now.Add(s.ttl(s.CodeTTL, DefaultCodeTTL)), Nonce: r.Nonce, AuthTime: authTime.UTC(),
	}); err != nil {
		return "", apierrors.Internal(fmt.Errorf("oauth: save code: %w", err))
	}
	return code, nil
}

// NewApp describes an app to register.
type NewApp struct {
	OrganizationID string
	Name           string
	Scopes         []string
	BranchIDs      []string
	RedirectURIs   []string
	// Public registers a public client (see App.Public): no secret, no
	// branches (it has no client-credentials grant), at least one redirect
	// URI.
	Public bool
}

// RegisterApp registers an app for its organization and returns it with
// its client secret, which is shown this once and stored only as a hash.
// Every branch must belong to the organization; every redirect URI must
// pass CheckRedirectURI (https, http on a loopback host, or a private-use
// scheme; no fragment).
func (s *Server) RegisterApp(ctx context.Context, n NewApp) (*App, string, error) {
	switch {
	case n.OrganizationID == "":
		return nil, "", apierrors.InvalidRequest("organization is required")
	case strings.TrimSpace(n.Name) == "":
		return nil, "", apierrors.InvalidRequest("name is required")
	case len(n.Name) > 200:
		return nil, "", apierrors.InvalidRequest("name is longer than 200 bytes")
	case len(n.Scopes) == 0:
		return nil, "", apierrors.InvalidRequest("at least one scope is required")
	case n.Public && len(n.BranchIDs) > 0:
		return nil, "", apierrors.InvalidRequest("a public client has no branches: it may not use the client-credentials grant, whose tokens the branches bound")
	case n.Public && len(n.RedirectURIs) == 0:
		return nil, "", apierrors.InvalidRequest("a public client needs a redirect URI: it may use only the authorization-code grant")
	}
	for _, sc := range n.Scopes {
		if !validScopeToken(sc) {
			return nil, "", apierrors.InvalidRequest("scope %q is malformed", sc)
		}
	}
	for _, u := range n.RedirectURIs {
		if err := checkRedirectURI(u); err != nil {
			return nil, "", err
		}
	}
	if len(n.BranchIDs) > 0 {
		branches, err := s.Directory.Branches(ctx, n.OrganizationID)
		if err != nil {
			return nil, "", apierrors.Internal(fmt.Errorf("oauth: list branches: %w", err))
		}
		for _, b := range n.BranchIDs {
			if !slices.Contains(branches, b) {
				return nil, "", apierrors.InvalidRequest("branch %q is not a branch of the organization", b)
			}
		}
	}
	secret, hash := "", []byte{}
	if !n.Public {
		secret = NewSecret()
		hash = hashSecret(secret)
	}
	app := &App{
		ID: newID(), ClientID: newID(), Name: strings.TrimSpace(n.Name),
		OrganizationID: n.OrganizationID, Scopes: dedupe(n.Scopes), BranchIDs: dedupe(n.BranchIDs),
		RedirectURIs: dedupe(n.RedirectURIs), SecretHash: hash, CreatedAt: s.now().UTC(), Public: n.Public,
	}
	ctx = s.withAudit(ctx, audit.AppCreated, app.OrganizationID, appTarget(app.ClientID),
		map[string]any{"name": app.Name, "scopes": app.Scopes, "branch_ids": app.BranchIDs, "public": app.Public})
	if err := s.Store.CreateApp(ctx, app); err != nil {
		return nil, "", apierrors.Internal(fmt.Errorf("oauth: create app: %w", err))
	}
	return app, secret, nil
}

// rotateSecret gives the app a new client secret, shown this once; the old
// one stops working at once. A public app has none to rotate.
func (s *Server) rotateSecret(ctx context.Context, clientID string) (string, error) {
	app, err := s.Store.App(ctx, clientID)
	switch {
	case errors.Is(err, ErrNotFound):
		return "", apierrors.NotFound("no app with client_id %q", clientID)
	case err != nil:
		return "", apierrors.Internal(fmt.Errorf("oauth: rotate secret: %w", err))
	case app.Public:
		return "", apierrors.InvalidRequest("the app is a public client: it has no secret to rotate")
	}
	secret := NewSecret()
	ctx = s.withAudit(ctx, audit.AppSecretRotated, app.OrganizationID, appTarget(clientID), nil)
	err = s.Store.SetSecretHash(ctx, clientID, hashSecret(secret))
	switch {
	case errors.Is(err, ErrNotFound):
		return "", apierrors.NotFound("no app with client_id %q", clientID)
	case err != nil:
		return "", apierrors.Internal(fmt.Errorf("oauth: rotate secret: %w", err))
	}
	return secret, nil
}

// checkRedirectURI is CheckRedirectURI as an invalid_request.
func checkRedirectURI(raw string) error {
	if err := CheckRedirectURI(raw); err != nil {
		return apierrors.InvalidRequest("%s", err.Error())
	}
	return nil
}

func dedupe(list []string) []string {
	out := []string{}
	for _, s := range list {
		if s != "" && !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

func nonNil(list []string) []string {
	if list == nil {
		return []string{}
	}
	return list
}
