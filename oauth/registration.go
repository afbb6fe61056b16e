package oauth

import (
	"bytes"
	"context"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"time"

	"github.com/waybillhq/waybill/audit"
	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/internal/excerpt"
	"github.com/waybillhq/waybill/internal/httpbody"
)

// This file is Dynamic Client Registration (RFC 7591) and its management
// protocol (RFC 7592): clients that register themselves, as AI agents,
// MCP clients, desktop tools and mobile apps do, instead of an
// organization's admin registering them.
//
//	POST   Paths.Register               register a client (RFC 7591)
//	GET    Paths.Register/{client_id}   read its registration (RFC 7592)
//	PUT    Paths.Register/{client_id}   replace its metadata
//	DELETE Paths.Register/{client_id}   delete it
//
// (by default /auth/v1/oauth/register). Decisions:
//
//   - Server.Registration says who may register: nobody (RegistrationOff,
//     the default: the endpoints answer 404 not_found and the metadata names
//     no registration_endpoint), the holders of an initial access token
//     (RegistrationToken: Authorization: Bearer <token>, made by
//     CreateInitialAccessToken), or anyone (RegistrationOpen).
//   - An initial access token may register any number of clients until it
//     expires; it is stored as its SHA-256 alone.
//   - A registered client belongs to no organization: it gets the
//     authorization-code grant (with PKCE) and refresh only, and each user
//     who approves it chooses the organization at consent. The
//     client-credentials grant is refused (unauthorized_client).
//   - The request's client_name and redirect_uris are required (the consent
//     page names the client; the code grant needs a redirect URI). Each
//     redirect URI must pass CheckRedirectURI (invalid_redirect_uri).
//     token_endpoint_auth_method is none (a public client, no secret),
//     client_secret_basic (the default, as RFC 7591 says) or
//     client_secret_post; grant_types may name authorization_code and
//     refresh_token alone, response_types code alone; scope, when given,
//     names scopes of Server.ScopesSupported (or the OpenID Connect scopes),
//     and when absent the client may request every one of them. Any other
//     value is invalid_client_metadata. Metadata the server does not use
//     (logo_uri, contacts, software_id, ...) is ignored and not stored, as
//     RFC 7591 section 2 allows; the answer holds what is stored.
//   - The answer (201) holds client_id, client_secret (not for none, with
//     client_secret_expires_at 0: it does not expire), client_id_issued_at,
//     registration_access_token and registration_client_uri. Secrets and
//     registration access tokens are shown this once and stored as hashes,
//     so the RFC 7592 read and update answers do not repeat them.
//   - The management endpoints take the registration access token as a
//     Bearer token. A wrong token, or a client that does not exist or was
//     not registered this way, is 401 invalid_token alike, so that nobody
//     learns which clients exist. Update replaces the metadata as
//     registration set it (an omitted field takes its default); it may not
//     change the client's token_endpoint_auth_method (public stays public,
//     confidential stays confidential), and a client_secret in its body
//     must be the client's. Delete removes the client and revokes every
//     refresh token family issued to it; its access tokens stop working
//     with their family.
//   - Rate limiting is the host's: wrap the endpoint in a limit per remote
//     address (the reference server uses its sign-in limit).

// RegistrationMode says who may register clients through Dynamic Client
// Registration; see Server.Registration.
type RegistrationMode int

// The registration modes.
const (
	// RegistrationOff: nobody; the registration endpoints answer 404.
	RegistrationOff RegistrationMode = iota
	// RegistrationToken: holders of an initial access token
	// (CreateInitialAccessToken), sent as a Bearer token.
	RegistrationToken
	// RegistrationOpen: anyone.
	RegistrationOpen
)

// String returns "off", "token" or "open".
func (m RegistrationMode) String() string {
	switch m {
	case RegistrationToken:
		return "token"
	case RegistrationOpen:
		return "open"
	}
	return "off"
}

// ParseRegistrationMode parses "off", "token" or "open".
func ParseRegistrationMode(s string) (RegistrationMode, error) {
	for _, m := range []RegistrationMode{RegistrationOff, RegistrationToken, RegistrationOpen} {
		if s == m.String() {
			return m, nil
		}
	}
	return RegistrationOff, fmt.Errorf("oauth: registration mode %q is not off, token or open", s)
}

// DefaultInitialAccessTokenTTL is how long an initial access token lasts
// when CreateInitialAccessToken is given no lifetime.
const DefaultInitialAccessTokenTTL = 24 * time.Hour

// InitialAccessToken is an initial access token of Dynamic Client
// Registration, stored by the SHA-256 of its value.
type InitialAccessToken struct {
	Hash      []byte
	ExpiresAt time.Time
	CreatedAt time.Time
}

// RegistrationStore keeps what Dynamic Client Registration needs beyond a
// Store: initial access tokens, and the update and deletion of registered
// clients. A Store that implements it (package oauth/sqlstore does) may
// serve registration; without it the registration endpoints answer 500.
// oauthtest.TestRegistrationStore is its conformance suite.
type RegistrationStore interface {
	// SaveInitialAccessToken stores a new initial access token;
	// ErrDuplicate if the hash exists.
	SaveInitialAccessToken(ctx context.Context, t *InitialAccessToken) error
	// InitialAccessToken returns the token with hash, expired or not, or
	// ErrNotFound.
	InitialAccessToken(ctx context.Context, hash []byte) (*InitialAccessToken, error)
	// UpdateApp replaces the name, scopes and redirect URIs of the app
	// with app.ClientID; ErrNotFound if there is none.
	UpdateApp(ctx context.Context, app *App) error
	// DeleteApp deletes the app with the client id; ErrNotFound if there
	// is none. Its codes, tokens and grants are the caller's to revoke.
	DeleteApp(ctx context.Context, clientID string) error
}

// registrationStore returns the store's RegistrationStore, or a 500 error.
func (s *Server) registrationStore() (RegistrationStore, error) {
	rs, ok := s.Store.(RegistrationStore)
	if !ok {
		return nil, apierrors.Internal(errors.New("oauth: the store keeps no registrations (it does not implement RegistrationStore)"))
	}
	return rs, nil
}

// CreateInitialAccessToken makes an initial access token, which lets its
// holder register clients until it expires, ttl from now (zero means
// DefaultInitialAccessTokenTTL). The token is returned this once and
// stored as its hash.
func (s *Server) CreateInitialAccessToken(ctx context.Context, ttl time.Duration) (token string, expiresAt time.Time, err error) {
	if ttl < 0 {
		return "", time.Time{}, apierrors.InvalidRequest("the lifetime of an initial access token must be positive")
	}
	rs, err := s.registrationStore()
	if err != nil {
		return "", time.Time{}, err
	}
	now := s.now().UTC().Truncate(time.Second)
	token = NewSecret()
	t := &InitialAccessToken{Hash: hashSecret(token), ExpiresAt: now.Add(s.ttl(ttl, DefaultInitialAccessTokenTTL)), CreatedAt: now}
	ctx = s.withAudit(ctx, audit.RegistrationTokenCreated, "", audit.Target{Kind: "registration_token", ID: hex.EncodeToString(t.Hash[:8])},
		map[string]any{"expires_at": t.ExpiresAt})
	if err := rs.SaveInitialAccessToken(ctx, t); err != nil {
		return "", time.Time{}, apierrors.Internal(fmt.Errorf("oauth: save initial access token: %w", err))
	}
	return token, t.ExpiresAt, nil
}

// ClientMetadata is the metadata of a client in Dynamic Client
// Registration (RFC 7591 section 2), as far as the server uses it.
type ClientMetadata struct {
	ClientName   string   `json:"client_name"`
	RedirectURIs []string `json:"redirect_uris"`
	// TokenEndpointAuthMethod is none (a public client),
	// client_secret_basic or client_secret_post.
	TokenEndpointAuthMethod string `json:"token_endpoint_auth_method"`
	// GrantTypes are authorization_code and refresh_token.
	GrantTypes []string `json:"grant_types"`
	// ResponseTypes are code.
	ResponseTypes []string `json:"response_types"`
	// Scope is the space-separated scopes the client may request.
	Scope string `json:"scope"`
}

// ClientInformation is the answer of registration, and of its read and
// update (RFC 7591 section 3.2.1, RFC 7592 section 3): the client's id,
// its secret and registration access token when they are issued, and its
// metadata as stored.
type ClientInformation struct {
	ClientID string `json:"client_id"`
	// ClientSecret is shown at registration alone, and never to a public
	// client.
	ClientSecret string `json:"client_secret,omitempty"`
	// ClientSecretExpiresAt is 0 (the secret does not expire) whenever a
	// secret is shown.
	ClientSecretExpiresAt *int64 `json:"client_secret_expires_at,omitempty"`
	ClientIDIssuedAt      int64  `json:"client_id_issued_at"`
	// RegistrationAccessToken is shown at registration alone.
	RegistrationAccessToken string `json:"registration_access_token,omitempty"`
	RegistrationClientURI   string `json:"registration_client_uri"`
	ClientMetadata
}

// ParseClientMetadata reads the JSON body of a registration or update
// request. Fields the server does not use are ignored; a field it uses
// with the wrong type is invalid_client_metadata, and so is a body that is
// not one JSON object.
func ParseClientMetadata(body []byte) (ClientMetadata, error) {
	var m ClientMetadata
	dec := json.NewDecoder(bytes.NewReader(body))
	if err := dec.Decode(&m); err != nil {
		var typeErr *json.UnmarshalTypeError
		if errors.As(err, &typeErr) && typeErr.Field != "" {
			return ClientMetadata{}, apierrors.InvalidClientMetadata("%s has the wrong type: %s expected", excerpt.Cut(typeErr.Field, 64), typeErr.Type)
		}
		return ClientMetadata{}, apierrors.InvalidClientMetadata("the body must be one JSON object of client metadata")
	}
	if dec.More() || bytes.TrimSpace(body)[0] != '{' {
		return ClientMetadata{}, apierrors.InvalidClientMetadata("the body must be one JSON object of client metadata")
	}
	return m, nil
}

// checkClientMetadata validates m and fills its defaults: the client's
// metadata as it would be stored, or invalid_redirect_uri or
// invalid_client_metadata.
func (s *Server) checkClientMetadata(m ClientMetadata) (ClientMetadata, error) {
	name, err := checkClientName(m.ClientName)
	if err != nil {
		return m, apierrors.InvalidClientMetadata("%s", err)
	}
	m.ClientName = name
	if err := checkClientRedirectURIs(m.RedirectURIs); err != nil {
		return m, apierrors.InvalidRedirectURI("%s", err)
	}
	m.RedirectURIs = dedupe(m.RedirectURIs)
	switch m.TokenEndpointAuthMethod {
	case "":
		m.TokenEndpointAuthMethod = "client_secret_basic"
	case "none", "client_secret_basic", "client_secret_post":
	default:
		return m, apierrors.InvalidClientMetadata("token_endpoint_auth_method must be none, client_secret_basic or client_secret_post")
	}
	if err := checkClientGrants(m.GrantTypes, m.ResponseTypes); err != nil {
		return m, apierrors.InvalidClientMetadata("%s", err)
	}
	m.GrantTypes, m.ResponseTypes = []string{"authorization_code", "refresh_token"}, []string{"code"}
	allowed := s.registrableScopes()
	scopes := ParseScope(m.Scope)
	if err := checkClientScopes(scopes, allowed); err != nil {
		return m, apierrors.InvalidClientMetadata("%s", err)
	}
	if len(scopes) == 0 {
		scopes = allowed
	}
	if len(scopes) == 0 {
		return m, apierrors.InvalidClientMetadata("this server lists no scopes a registered client may request")
	}
	m.Scope = formatScope(dedupe(scopes))
	return m, nil
}

// registrableScopes are the scopes a registered client may request:
// ScopesSupported, and the OpenID Connect scopes when the server issues ID
// tokens (the metadata's scopes_supported).
func (s *Server) registrableScopes() []string {
	if s.OpenID() {
		return append(slices.Clone(identityScopes), withoutIdentityScopes(s.ScopesSupported)...)
	}
	return slices.Clone(s.ScopesSupported)
}

// RegisterClient registers a client whose metadata m was sent to the
// registration endpoint (see the decisions at the top of this file), and
// returns its client information with its secret (not for a public
// client) and registration access token, which are shown this once.
func (s *Server) RegisterClient(ctx context.Context, m ClientMetadata) (*ClientInformation, error) {
	m, err := s.checkClientMetadata(m)
	if err != nil {
		return nil, err
	}
	if _, err := s.registrationStore(); err != nil {
		return nil, err
	}
	secret, hash := "", []byte{}
	public := m.TokenEndpointAuthMethod == "none"
	if !public {
		secret = NewSecret()
		hash = hashSecret(secret)
	}
	regToken := NewSecret()
	app := &App{
		ID: newID(), ClientID: newID(), Name: m.ClientName, Scopes: ParseScope(m.Scope), BranchIDs: []string{},
		RedirectURIs: m.RedirectURIs, SecretHash: hash, Public: public, CreatedAt: s.now().UTC().Truncate(time.Second),
		RegistrationTokenHash: hashSecret(regToken), TokenEndpointAuthMethod: m.TokenEndpointAuthMethod,
	}
	if err := s.Store.CreateApp(ctx, app); err != nil {
		return nil, apierrors.Internal(fmt.Errorf("oauth: create registered client: %w", err))
	}
	info := s.clientInformation(app)
	info.ClientSecret = secret
	if secret != "" {
		zero := int64(0)
		info.ClientSecretExpiresAt = &zero
	}
	info.RegistrationAccessToken = regToken
	return info, nil
}

// clientInformation is the client information of a registered app,
// without its secrets.
func (s *Server) clientInformation(app *App) *ClientInformation {
	return &ClientInformation{
		ClientID: app.ClientID, ClientIDIssuedAt: app.CreatedAt.Unix(),
		RegistrationClientURI: strings.TrimSuffix(s.Issuer, "/") + s.paths().Register + "/" + app.ClientID,
		ClientMetadata: ClientMetadata{
			ClientName: app.Name, RedirectURIs: nonNil(app.RedirectURIs), TokenEndpointAuthMethod: authMethod(app),
			GrantTypes: []string{"authorization_code", "refresh_token"}, ResponseTypes: []string{"code"},
			Scope: formatScope(app.Scopes),
		},
	}
}

// registeredClient returns the dynamically registered app that the request's
// Bearer registration access token manages; anything else (no token, a
// wrong one, an unknown client, an app registered otherwise) is 401
// invalid_token alike.
func (s *Server) registeredClient(r *http.Request) (*App, error) {
	refused := apierrors.InvalidToken("the registration access token is not valid for this client")
	raw, ok := bearerToken(r)
	if !ok {
		return nil, apierrors.InvalidToken("the registration access token is required as a Bearer token")
	}
	app, err := s.Store.App(r.Context(), r.PathValue("client_id"))
	switch {
	case errors.Is(err, ErrNotFound):
		secretMatches(raw, dummyHash)
		return nil, refused
	case err != nil:
		return nil, apierrors.Internal(fmt.Errorf("oauth: load registered client: %w", err))
	case len(app.RegistrationTokenHash) == 0:
		secretMatches(raw, dummyHash)
		return nil, refused
	case !secretMatches(raw, app.RegistrationTokenHash):
		return nil, refused
	}
	return app, nil
}

// bearerToken returns the Bearer token of the request's Authorization
// header (RFC 6750 section 2.1; the scheme is case-insensitive).
func bearerToken(r *http.Request) (string, bool) {
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	token = strings.TrimSpace(token)
	return token, token != ""
}

// mountRegistration registers the registration endpoints on mux at p.
func (s *Server) mountRegistration(mux *http.ServeMux, p Paths) {
	mux.Handle("POST "+p.Register, s.handle(s.handleRegister))
	mux.Handle("GET "+p.Register+"/{client_id}", s.handle(s.manageRegistration(s.handleReadRegistration)))
	mux.Handle("PUT "+p.Register+"/{client_id}", s.handle(s.manageRegistration(s.handleUpdateRegistration)))
	mux.Handle("DELETE "+p.Register+"/{client_id}", s.handle(s.manageRegistration(s.handleDeleteRegistration)))
}

// registrationOn answers 404 when registration is off.
func (s *Server) registrationOn() error {
	if s.Registration == RegistrationOff {
		return apierrors.NotFound("this server does not offer dynamic client registration")
	}
	return nil
}

// readClientMetadata reads the JSON body of a registration request.
func readClientMetadata(r *http.Request) (ClientMetadata, error) {
	body, err := httpbody.JSON(nil, r, maxRequestBytes)
	if err != nil {
		return ClientMetadata{}, err
	}
	return ParseClientMetadata(body)
}

// handleRegister is POST Paths.Register (RFC 7591 section 3).
func (s *Server) handleRegister(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Cache-Control", "no-store")
	if err := s.registrationOn(); err != nil {
		return err
	}
	if s.Registration == RegistrationToken {
		if err := s.checkInitialAccessToken(r); err != nil {
			return err
		}
	}
	m, err := readClientMetadata(r)
	if err != nil {
		return err
	}
	info, err := s.RegisterClient(r.Context(), m)
	if err != nil {
		return err
	}
	s.logger().InfoContext(r.Context(), "client registered", "client_id", info.ClientID, "client_name", info.ClientName,
		"token_endpoint_auth_method", info.TokenEndpointAuthMethod)
	w.Header().Set("Location", info.RegistrationClientURI)
	writeJSON(w, http.StatusCreated, info)
	return nil
}

// checkInitialAccessToken checks the request's Bearer initial access
// token: 401 invalid_token when it is missing, unknown or expired.
func (s *Server) checkInitialAccessToken(r *http.Request) error {
	raw, ok := bearerToken(r)
	if !ok {
		return apierrors.InvalidToken("registration needs an initial access token, sent as a Bearer token")
	}
	rs, err := s.registrationStore()
	if err != nil {
		return err
	}
	t, err := rs.InitialAccessToken(r.Context(), hashSecret(raw))
	switch {
	case errors.Is(err, ErrNotFound):
		return apierrors.InvalidToken("the initial access token is not valid")
	case err != nil:
		return apierrors.Internal(fmt.Errorf("oauth: load initial access token: %w", err))
	case !s.now().Before(t.ExpiresAt):
		return apierrors.InvalidToken("the initial access token has expired")
	}
	return nil
}

// manageRegistration returns a handler of the client configuration
// endpoint (RFC 7592) that answers no-store, 404 while registration is
// off, and 401 invalid_token unless the request's registration access
// token manages the client of the path, and then runs h with that client.
func (s *Server) manageRegistration(h func(w http.ResponseWriter, r *http.Request, app *App) error) apierrors.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		w.Header().Set("Cache-Control", "no-store")
		if err := s.registrationOn(); err != nil {
			return err
		}
		app, err := s.registeredClient(r)
		if err != nil {
			return err
		}
		return h(w, r, app)
	}
}

// handleReadRegistration is GET Paths.Register/{client_id} (RFC 7592
// section 2.1).
func (s *Server) handleReadRegistration(w http.ResponseWriter, r *http.Request, app *App) error {
	writeJSON(w, http.StatusOK, s.clientInformation(app))
	return nil
}

// handleUpdateRegistration is PUT Paths.Register/{client_id} (RFC 7592
// section 2.2): the metadata of the body replaces the client's.
func (s *Server) handleUpdateRegistration(w http.ResponseWriter, r *http.Request, app *App) error {
	body, err := httpbody.JSON(nil, r, maxRequestBytes)
	if err != nil {
		return err
	}
	m, err := ParseClientMetadata(body)
	if err != nil {
		return err
	}
	var ids struct {
		ClientID     *string `json:"client_id"`
		ClientSecret *string `json:"client_secret"`
	}
	_ = json.Unmarshal(body, &ids) // ParseClientMetadata read the body as one object
	switch {
	case ids.ClientID == nil || *ids.ClientID != app.ClientID:
		return apierrors.InvalidRequest("the body's client_id must be the client's (RFC 7592 section 2.2)")
	case ids.ClientSecret != nil && (app.Public || !secretMatches(*ids.ClientSecret, app.SecretHash)):
		return apierrors.InvalidClientMetadata("client_secret is not the client's secret; the secret cannot be changed by an update")
	}
	m, err = s.checkClientMetadata(m)
	if err != nil {
		return err
	}
	if (m.TokenEndpointAuthMethod == "none") != app.Public {
		return apierrors.InvalidClientMetadata("token_endpoint_auth_method may not change between none and a secret: register a new client instead")
	}
	rs, err := s.registrationStore()
	if err != nil {
		return err
	}
	app.Name, app.RedirectURIs, app.Scopes, app.TokenEndpointAuthMethod = m.ClientName, m.RedirectURIs, ParseScope(m.Scope), m.TokenEndpointAuthMethod
	switch err := rs.UpdateApp(r.Context(), app); {
	case errors.Is(err, ErrNotFound):
		return apierrors.InvalidToken("the registration access token is not valid for this client")
	case err != nil:
		return apierrors.Internal(fmt.Errorf("oauth: update registered client: %w", err))
	}
	writeJSON(w, http.StatusOK, s.clientInformation(app))
	return nil
}

// handleDeleteRegistration is DELETE Paths.Register/{client_id} (RFC 7592
// section 2.3): the client is deleted and its refresh token families
// revoked.
func (s *Server) handleDeleteRegistration(w http.ResponseWriter, r *http.Request, app *App) error {
	if err := s.DeleteRegisteredClient(r.Context(), app.ClientID); err != nil {
		return err
	}
	w.WriteHeader(http.StatusNoContent)
	return nil
}

// DeleteRegisteredClient deletes a dynamically registered client and
// revokes every refresh token family issued to it, which ends its access
// tokens too. The families are revoked first, so that a failure leaves the
// client in place to delete again.
func (s *Server) DeleteRegisteredClient(ctx context.Context, clientID string) error {
	rs, err := s.registrationStore()
	if err != nil {
		return err
	}
	if _, err := s.Store.RevokeClientFamilies(ctx, clientID, s.now()); err != nil {
		return apierrors.Internal(fmt.Errorf("oauth: revoke the families of a deleted client: %w", err))
	}
	switch err := rs.DeleteApp(ctx, clientID); {
	case errors.Is(err, ErrNotFound):
		return apierrors.NotFound("no client with client_id %q", excerpt.Cut(clientID, 64))
	case err != nil:
		return apierrors.Internal(fmt.Errorf("oauth: delete registered client: %w", err))
	}
	s.logger().InfoContext(ctx, "registered client deleted", "client_id", clientID)
	return nil
}
