package oauth

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"
	"time"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/internal/conditional"
	"github.com/waybillhq/waybill/internal/excerpt"
	"github.com/waybillhq/waybill/internal/httpbody"
	"github.com/waybillhq/waybill/oauth/bearer"
)

// The default paths of the endpoints: where the token service answers when
// its Server.Paths leaves a field empty.
const (
	PathAuthorize  = "/auth/v1/oauth/authorize"
	PathLogin      = "/auth/v1/login"
	PathConsent    = "/auth/v1/oauth/consent"
	PathToken      = "/auth/v1/oauth/token"
	PathUserToken  = "/auth/v1/token"
	PathApps       = "/auth/v1/oauth/apps"
	PathRevoke     = "/auth/v1/oauth/revoke"
	PathIntrospect = "/auth/v1/oauth/introspect"
	PathMetadata   = "/.well-known/oauth-authorization-server"
	PathJWKS       = "/.well-known/jwks.json"
	// PathRegister is Dynamic Client Registration (RFC 7591); PathRegister
	// + "/{client_id}" manages a registration (RFC 7592).
	PathRegister = "/auth/v1/oauth/register"
	// PathOpenIDConfiguration is the OpenID Connect discovery document.
	PathOpenIDConfiguration = "/.well-known/openid-configuration"
	// PathUserInfo is the OpenID Connect UserInfo endpoint.
	PathUserInfo = "/auth/v1/oauth/userinfo"
	// PathConnectedApps lists an organization's connected apps; its
	// {organization_id} wildcard names the organization.
	PathConnectedApps = "/auth/v1/oauth/organizations/{organization_id}/connected_apps"
	// PathAuditLog is an organization's audit log; its {organization_id}
	// wildcard names the organization.
	PathAuditLog = "/auth/v1/oauth/organizations/{organization_id}/audit_log"
)

// maxRequestBytes is the largest body of a request to the token service.
const maxRequestBytes = 64 << 10

// Paths are the paths the token service answers, each absolute (it begins
// with /). An empty field means the default, the Path constant of its name,
// so the zero Paths is where the service has always been.
//
// The paths are used wherever the service names its endpoints: Mount
// serves them, the RFC 8414 metadata gives them after the issuer, the
// authorization endpoint sends a browser without a session to Login, the
// sign-in and consent forms post to Login and Consent, and OpenAPI
// describes them. The session cookie of the browser flow is scoped to the
// longest directory that holds Authorize, Login and Consent ("/auth/v1/"
// by default, "/" when they share none), and the sign-in form's CSRF
// cookie to Login.
//
// Only one path per endpoint: a host that answers the client-credentials
// grant at more paths (a product's older URLs, say) mounts
// ClientCredentialsHandler at each.
type Paths struct {
	// Authorize is the authorization endpoint (GET), which the browser
	// flow starts at.
	Authorize string
	// Login is the sign-in page (GET, and POST for the form).
	Login string
	// Consent is the target of the consent form (POST).
	Consent string
	// Token is the token endpoint (POST) of every grant.
	Token string
	// UserToken is the product user sign-in (POST ?grant_type=password).
	UserToken string
	// Apps is app registration (POST); Apps + "/{client_id}/rotate-secret"
	// rotates an app's secret.
	Apps string
	// Revoke is RFC 7009 revocation (POST).
	Revoke string
	// Introspect is RFC 7662 introspection (POST).
	Introspect string
	// Metadata is the RFC 8414 authorization server metadata (GET).
	Metadata string
	// JWKS is the JSON Web Key Set of the public signing keys (GET), the
	// metadata's jwks_uri.
	JWKS string
	// ConnectedApps lists the apps connected to an organization (GET);
	// ConnectedApps + "/{client_id}" disconnects one (DELETE). It must hold
	// the wildcard {organization_id}.
	ConnectedApps string
	// AuditLog is an organization's audit log (GET). It must hold the
	// wildcard {organization_id}.
	AuditLog string
	// Register is Dynamic Client Registration (POST); Register +
	// "/{client_id}" reads, replaces and deletes a registration (GET, PUT,
	// DELETE).
	Register string
	// OpenIDConfiguration is the OpenID Connect discovery document (GET),
	// which relying parties find at the issuer's
	// /.well-known/openid-configuration.
	OpenIDConfiguration string
	// UserInfo is the OpenID Connect UserInfo endpoint (GET and POST).
	UserInfo string
}

// WithDefaults returns p with every empty field set to its default.
func (p Paths) WithDefaults() Paths {
	for _, f := range []struct {
		path *string
		def  string
	}{
		{&p.Authorize, PathAuthorize}, {&p.Login, PathLogin}, {&p.Consent, PathConsent},
		{&p.Token, PathToken}, {&p.UserToken, PathUserToken}, {&p.Apps, PathApps},
		{&p.Revoke, PathRevoke}, {&p.Introspect, PathIntrospect}, {&p.Metadata, PathMetadata},
		{&p.JWKS, PathJWKS},
		{&p.ConnectedApps, PathConnectedApps},
		{&p.Register, PathRegister}, {&p.AuditLog, PathAuditLog},
		{&p.OpenIDConfiguration, PathOpenIDConfiguration}, {&p.UserInfo, PathUserInfo},
	} {
		if *f.path == "" {
			*f.path = f.def
		}
	}
	return p
}

// Check reports the first path of p that is neither empty nor absolute.
func (p Paths) Check() error {
	for _, f := range []struct{ name, path string }{
		{"Authorize", p.Authorize}, {"Login", p.Login}, {"Consent", p.Consent},
		{"Token", p.Token}, {"UserToken", p.UserToken}, {"Apps", p.Apps},
		{"Revoke", p.Revoke}, {"Introspect", p.Introspect}, {"Metadata", p.Metadata},
		{"JWKS", p.JWKS},
		{"ConnectedApps", p.ConnectedApps},
		{"Register", p.Register}, {"AuditLog", p.AuditLog},
		{"OpenIDConfiguration", p.OpenIDConfiguration}, {"UserInfo", p.UserInfo},
	} {
		if f.path != "" && !strings.HasPrefix(f.path, "/") {
			return fmt.Errorf("oauth: Paths.%s %q is not an absolute path", f.name, f.path)
		}
	}
	if p.ConnectedApps != "" && !strings.Contains(p.ConnectedApps, "{organization_id}") {
		return fmt.Errorf("oauth: Paths.ConnectedApps %q lacks the wildcard {organization_id}", p.ConnectedApps)
	}
	if p.AuditLog != "" && !strings.Contains(p.AuditLog, "{organization_id}") {
		return fmt.Errorf("oauth: Paths.AuditLog %q lacks the wildcard {organization_id}", p.AuditLog)
	}
	return nil
}

// cookiePath is the longest directory ("/auth/v1/") that holds every one
// of paths, which are absolute.
func cookiePath(paths ...string) string {
	prefix := paths[0]
	for _, p := range paths[1:] {
		n := 0
		for n < len(prefix) && n < len(p) && prefix[n] == p[n] {
			n++
		}
		prefix = prefix[:n]
	}
	return prefix[:strings.LastIndexByte(prefix, '/')+1]
}

// paths returns the paths the server answers.
func (s *Server) paths() Paths { return s.Paths.WithDefaults() }

// Handler returns every endpoint of the token service on one mux, at its
// Paths. Mount it at the root of the server: the paths are absolute. Wrap
// it, or single endpoints from Mount, in rate limiting as needed.
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	s.Mount(mux)
	return mux
}

// Mount registers every endpoint of the token service on mux, at its
// Paths. It panics, as mux does on a bad pattern, when a path is not
// absolute (see Paths.Check).
func (s *Server) Mount(mux *http.ServeMux) {
	if err := s.Paths.Check(); err != nil {
		panic(err)
	}
	p := s.paths()
	mux.Handle("POST "+p.Token, s.handle(s.handleToken(allGrants)))
	mux.Handle("POST "+p.UserToken, s.handle(s.handleUserToken))
	mux.Handle("POST "+p.Apps, s.handle(s.handleRegisterApp))
	mux.Handle("POST "+p.Apps+"/{client_id}/rotate-secret", s.handle(s.handleRotateSecret))
	mux.Handle("POST "+p.Revoke, s.handle(s.handleRevoke))
	mux.Handle("POST "+p.Introspect, s.handle(s.handleIntrospect))
	mux.HandleFunc("GET "+p.Metadata, s.handleMetadata)
	mux.Handle("GET "+p.JWKS, s.handle(s.handleJWKS))
	mux.Handle("GET "+p.ConnectedApps, s.handle(s.handleConnectedApps))
	mux.Handle("DELETE "+p.ConnectedApps+"/{client_id}", s.handle(s.handleDisconnectApp))
	mux.Handle("GET "+p.AuditLog, s.handle(s.handleAuditLog))
	mux.Handle("GET "+p.OpenIDConfiguration, s.handle(s.handleOpenIDConfiguration))
	mux.Handle("GET "+p.UserInfo, s.handle(s.handleUserInfo))
	mux.Handle("POST "+p.UserInfo, s.handle(s.handleUserInfo))
	s.mountConsent(mux, p)
	s.mountRegistration(mux, p)
}

// ClientCredentialsHandler returns a token endpoint that takes only
// grant_type=client_credentials (any other grant is 400
// unsupported_grant_type), for the host to mount for POST at paths of its
// own beside Paths.Token: the older or edge URLs of a product, say.
//
//	mux.Handle("POST /v1/oauth/token", srv.ClientCredentialsHandler())
//
// It does not check the method. OpenAPIClientCredentials describes it for
// the host's OpenAPI document.
func (s *Server) ClientCredentialsHandler() http.Handler {
	return s.handle(s.handleToken(clientCredentialsOnly))
}

type grantSet int

const (
	allGrants grantSet = iota
	clientCredentialsOnly
)

// handleToken is the token endpoint (RFC 6749 section 3.2). The client is
// authenticated before any code or refresh token is looked at, so a failed
// authentication never spends a grant.
func (s *Server) handleToken(grants grantSet) apierrors.HandlerFunc {
	return func(w http.ResponseWriter, r *http.Request) error {
		w.Header().Set("Cache-Control", "no-store")
		w.Header().Set("Pragma", "no-cache")
		tok, err := s.token(r, grants)
		if err != nil {
			return err
		}
		writeJSON(w, http.StatusOK, tokenResponse(tok))
		return nil
	}
}

func (s *Server) token(r *http.Request, grants grantSet) (*Token, error) {
	form, err := readParams(r)
	if err != nil {
		return nil, err
	}
	client, err := readClient(r, form)
	if err != nil {
		return nil, err
	}
	ctx := r.Context()
	// A resource the server does not know is refused once the client is
	// authenticated.
	resource, resourceErr := s.checkResource(form["resource"])
	grant := form.Get("grant_type")
	switch {
	case grant == "":
		return nil, apierrors.InvalidRequest("grant_type is required")
	case grants == clientCredentialsOnly && grant != "client_credentials":
		return nil, apierrors.UnsupportedGrantType("this endpoint takes only grant_type=client_credentials")
	}
	switch grant {
	case "client_credentials":
		app, err := s.AuthenticateClient(ctx, client.id, client.secret, client.scheme)
		if err != nil {
			return nil, err
		}
		if resourceErr != nil {
			return nil, resourceErr
		}
		return s.ClientCredentials(ctx, app, form.Get("scope"), resource)
	case "authorization_code":
		app, err := s.AuthenticateClient(ctx, client.id, client.secret, client.scheme)
		if err != nil {
			return nil, err
		}
		if resourceErr != nil {
			return nil, resourceErr
		}
		return s.ExchangeCode(ctx, app, form.Get("code"), form.Get("redirect_uri"), form.Get("code_verifier"), resource)
	case "refresh_token":
		if client.secret != "" {
			if _, err := s.AuthenticateClient(ctx, client.id, client.secret, client.scheme); err != nil {
				return nil, err
			}
		}
		if resourceErr != nil {
			return nil, resourceErr
		}
		return s.Refresh(ctx, client.id, form.Get("refresh_token"), resource)
	}
	return nil, apierrors.UnsupportedGrantType("grant_type %q is not supported", excerpt.Cut(grant, 64))
}

// tokenResponse is the JSON of a token response (RFC 6749 section 5.1,
// with the client-credentials fields of the seed).
func tokenResponse(t *Token) any {
	type base struct {
		AccessToken  string `json:"access_token"`
		TokenType    string `json:"token_type"`
		ExpiresIn    int    `json:"expires_in"`
		RefreshToken string `json:"refresh_token,omitempty"`
		Scope        string `json:"scope"`
		IDToken      string `json:"id_token,omitempty"`
	}
	b := base{t.AccessToken, t.TokenType, t.ExpiresIn, t.RefreshToken, formatScope(t.Scopes), t.IDToken}
	if t.Claims.ClientCredentials() {
		return struct {
			base
			OrganizationID string   `json:"organization_id"`
			BranchIDs      []string `json:"branch_ids"`
		}{b, t.Claims.OrganizationID, nonNil(t.Claims.BranchIDs)}
	}
	return b
}

// clientAuth is the client authentication a request carried.
type clientAuth struct {
	id, secret string
	// scheme is "Basic" for HTTP Basic, "" for the request body.
	scheme string
}

// readClient reads the client authentication from HTTP Basic, whose id and
// secret are form-urlencoded before base64 (RFC 6749 section 2.3.1), or
// from client_id and client_secret in the body. Using both is an error.
func readClient(r *http.Request, form url.Values) (clientAuth, error) {
	user, pass, basic := r.BasicAuth()
	if !basic {
		if strings.HasPrefix(r.Header.Get("Authorization"), "Basic ") {
			return clientAuth{}, apierrors.InvalidClient("Basic", "the Basic credentials are malformed")
		}
		return clientAuth{id: form.Get("client_id"), secret: form.Get("client_secret")}, nil
	}
	id, err1 := url.QueryUnescape(user)
	secret, err2 := url.QueryUnescape(pass)
	if err1 != nil || err2 != nil {
		return clientAuth{}, apierrors.InvalidClient("Basic", "the Basic credentials are not form-urlencoded")
	}
	if form.Get("client_secret") != "" {
		return clientAuth{}, apierrors.InvalidRequest("use one client authentication method, not HTTP Basic and client_secret both")
	}
	if bodyID := form.Get("client_id"); bodyID != "" && bodyID != id {
		return clientAuth{}, apierrors.InvalidRequest("client_id in the body differs from the Basic credentials")
	}
	return clientAuth{id: id, secret: secret, scheme: "Basic"}, nil
}

// readParams reads the parameters of a POST body that is
// application/x-www-form-urlencoded or a JSON object of strings. A
// parameter may appear once (RFC 6749 section 3.2). A request that
// IdentifyClient read has its parameters, or its error, from there.
func readParams(r *http.Request) (url.Values, error) {
	if read, ok := r.Context().Value(paramsKey{}).(*readParamsResult); ok {
		return read.form, read.err
	}
	ct := httpbody.MediaType(r)
	if ct == "" {
		return nil, apierrors.InvalidRequest("Content-Type must be application/x-www-form-urlencoded or application/json")
	}
	body, err := httpbody.Read(nil, r, maxRequestBytes)
	if err != nil {
		return nil, err
	}
	return parseParams(ct, body)
}

// parseParams parses a token request body of media type ct.
func parseParams(ct string, body []byte) (url.Values, error) {
	switch ct {
	case "application/x-www-form-urlencoded":
		v, err := url.ParseQuery(string(body))
		if err != nil {
			return nil, apierrors.InvalidRequest("the form body does not decode")
		}
		for k, vs := range v {
			if len(vs) > 1 && k != "resource" { // RFC 8707 lets resource repeat; checkResource takes one
				return nil, apierrors.InvalidRequest("parameter %q is given more than once", excerpt.Cut(k, 64))
			}
		}
		return v, nil
	case "application/json":
		var m map[string]any
		dec := json.NewDecoder(strings.NewReader(string(body)))
		if err := dec.Decode(&m); err != nil || m == nil || dec.More() {
			return nil, apierrors.InvalidRequest("the body must be one JSON object")
		}
		v := url.Values{}
		for k, val := range m {
			switch val := val.(type) {
			case string:
				v.Set(k, val)
			case []any: // a scope given as an array of strings
				parts := make([]string, 0, len(val))
				for _, p := range val {
					ps, ok := p.(string)
					if !ok {
						return nil, apierrors.InvalidRequest("parameter %q must be a string", excerpt.Cut(k, 64))
					}
					parts = append(parts, ps)
				}
				v.Set(k, strings.Join(parts, " "))
			case nil:
			default:
				return nil, apierrors.InvalidRequest("parameter %q must be a string", excerpt.Cut(k, 64))
			}
		}
		return v, nil
	}
	return nil, apierrors.InvalidRequest("Content-Type must be application/x-www-form-urlencoded or application/json")
}

// handleRevoke is RFC 7009 revocation (see RevokeToken): the client
// authenticates, and a refresh token or authorization-code access token of
// it has its whole family revoked. A client-credentials access token is
// answered 400 unsupported_token_type and a token of another client 400
// unauthorized_client; an unknown or expired token 200, as RFC 7009
// section 2.2 asks.
func (s *Server) handleRevoke(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Cache-Control", "no-store")
	if err := s.revoke(r); err != nil {
		return err
	}
	w.WriteHeader(http.StatusOK)
	return nil
}

// clientRequest reads the parameters of a request that must authenticate
// its client (revocation, introspection) and authenticates it.
func (s *Server) clientRequest(r *http.Request) (url.Values, *App, error) {
	form, err := readParams(r)
	if err != nil {
		return nil, nil, err
	}
	client, err := readClient(r, form)
	if err != nil {
		return nil, nil, err
	}
	app, err := s.AuthenticateClient(r.Context(), client.id, client.secret, client.scheme)
	if err != nil {
		return nil, nil, err
	}
	return form, app, nil
}

func (s *Server) revoke(r *http.Request) error {
	form, app, err := s.clientRequest(r)
	if err != nil {
		return err
	}
	return s.RevokeToken(r.Context(), app, form.Get("token"))
}

// handleIntrospect is RFC 7662 introspection: an authenticated client asks
// whether a token is active. A client learns only about tokens issued to
// itself (RFC 7662 section 4): any other token, active or not, is
// answered {"active": false}, like an unknown one.
func (s *Server) handleIntrospect(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Cache-Control", "no-store")
	resp, err := s.introspect(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, resp)
	return nil
}

// introspection is the RFC 7662 response.
type introspection struct {
	Active         bool     `json:"active"`
	Scope          string   `json:"scope,omitempty"`
	ClientID       string   `json:"client_id,omitempty"`
	Subject        string   `json:"sub,omitempty"`
	TokenType      string   `json:"token_type,omitempty"`
	ExpiresAt      int64    `json:"exp,omitempty"`
	IssuedAt       int64    `json:"iat,omitempty"`
	Issuer         string   `json:"iss,omitempty"`
	Audience       any      `json:"aud,omitempty"` // a string, or an array with the token's resource
	ID             string   `json:"jti,omitempty"`
	OrganizationID string   `json:"organization_id,omitempty"`
	BranchIDs      []string `json:"branch_ids,omitempty"`
}

// audience is the aud of the claims as the token carries it: a string,
// or an array when the token names a resource.
func audience(c *bearer.Claims) any {
	aud, _ := c.GetAudience()
	if len(aud) == 1 {
		return aud[0]
	}
	return []string(aud)
}

func (s *Server) introspect(r *http.Request) (*introspection, error) {
	form, app, err := s.clientRequest(r)
	if err != nil {
		return nil, err
	}
	if app.Public {
		// RFC 7662 section 2.1: introspection needs an authenticated
		// caller, which a client without a secret cannot be.
		return nil, apierrors.InvalidClient("", "a public client cannot authenticate, so it may not introspect")
	}
	token := form.Get("token")
	if token == "" {
		return nil, apierrors.InvalidRequest("token is required")
	}
	v := s.verifier()
	v.Families = s.Store
	v.CutOffs = s.CutOffs
	if c, err := v.Verify(r.Context(), token); err == nil {
		if !c.OAuth() || c.ClientID != app.ClientID {
			return &introspection{Active: false}, nil
		}
		return &introspection{
			Active: true, Scope: formatScope(c.Scopes), ClientID: c.ClientID, Subject: c.Subject,
			TokenType: "bearer", ExpiresAt: c.ExpiresAt, IssuedAt: c.IssuedAt, Issuer: c.Issuer,
			Audience: audience(c), ID: c.ID, OrganizationID: c.OrganizationID, BranchIDs: c.BranchIDs,
		}, nil
	} else if !apierrors.HasCode(err, apierrors.CodeInvalidToken) {
		return nil, err
	}
	rt, err := s.Store.RefreshToken(r.Context(), hashSecret(token))
	if errors.Is(err, ErrNotFound) {
		return &introspection{Active: false}, nil
	} else if err != nil {
		return nil, apierrors.Internal(err)
	}
	// A refresh token is active while unspent, unexpired, and its family
	// stands and is younger than RefreshMaxAge.
	revoked, err := s.Store.FamilyRevoked(r.Context(), rt.FamilyID)
	if err != nil {
		return nil, apierrors.Internal(err)
	}
	now := s.now()
	if rt.ClientID != app.ClientID || revoked || rt.Spent || !now.Before(rt.ExpiresAt) ||
		!now.Before(rt.AuthorizedAt.Add(s.ttl(s.RefreshMaxAge, DefaultRefreshMaxAge))) {
		return &introspection{Active: false}, nil
	}
	return &introspection{
		Active: true, Scope: formatScope(rt.Scopes), ClientID: rt.ClientID, Subject: rt.UserID,
		TokenType: "refresh_token", ExpiresAt: rt.ExpiresAt.Unix(), OrganizationID: rt.OrganizationID,
	}, nil
}

// handleMetadata is the RFC 8414 authorization server metadata; on a
// server that speaks OpenID Connect it is the discovery document too (see
// metadata).
func (s *Server) handleMetadata(w http.ResponseWriter, _ *http.Request) {
	writeJSON(w, http.StatusOK, s.metadata())
}

// jwksMaxAge is how long clients may cache the JWKS: a new signing key is
// published as a previous key's successor before it signs (see
// bearer.KeySet), and verifiers fetch the set again on an unknown kid, so
// a short cache only bounds how long a removed key is still trusted.
const jwksMaxAge = 5 * time.Minute

// handleJWKS serves the public signing keys as a JSON Web Key Set (RFC
// 7517), with Cache-Control public and max-age of five minutes, and a
// strong ETag of its body (If-None-Match answers 304). A server whose keys
// are all HS256 has nothing to publish: it answers 404 not_found, and its
// metadata names no jwks_uri, so that no client takes an empty set for
// one that will be filled.
func (s *Server) handleJWKS(w http.ResponseWriter, r *http.Request) error {
	if s.Keys == nil || len(s.Keys.JWKS().Keys) == 0 {
		return apierrors.NotFound("this server signs tokens with a shared secret (HS256) and publishes no keys")
	}
	body, err := json.Marshal(s.Keys.JWKS())
	if err != nil {
		return apierrors.Internal(err)
	}
	etag := conditional.ETag(body)
	h := w.Header()
	h.Set("Cache-Control", fmt.Sprintf("public, max-age=%d", int(jwksMaxAge.Seconds())))
	h.Set("ETag", etag)
	if match, ok := conditional.IfNoneMatch(r); ok && match.Matches(etag, true) {
		conditional.NotModified(w, etag)
		return nil
	}
	h.Set("Content-Type", "application/jwk-set+json")
	_, _ = w.Write(body)
	return nil
}

// decodeJSON reads a JSON object body into v: Content-Type must be
// application/json, the body at most maxRequestBytes (else 413), unknown
// fields are refused.
func decodeJSON(r *http.Request, v any) error {
	body, err := httpbody.JSON(nil, r, maxRequestBytes)
	if err != nil {
		return err
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(v); err != nil {
		return apierrors.InvalidRequest("the body must be a JSON object of the documented fields: %s", excerpt.Cut(err.Error(), 120))
	}
	return nil
}

func writeJSON(w http.ResponseWriter, status int, v any) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	_ = json.NewEncoder(w).Encode(v)
}
