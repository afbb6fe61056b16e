package oauth

import (
	"errors"
	"fmt"
	"net/http"
	"strings"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/oauth/bearer"
)

// This file serves the product users' endpoints: their sign-in, and the
// registration of apps and the rotation of their secrets by organization
// admins.

// handleUserToken is the product user sign-in: POST
// Paths.UserToken?grant_type=password with {email, password}.
func (s *Server) handleUserToken(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Cache-Control", "no-store")
	tok, err := s.userSignIn(r)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, struct {
		AccessToken string `json:"access_token"`
		TokenType   string `json:"token_type"`
		ExpiresIn   int    `json:"expires_in"`
	}{tok.AccessToken, tok.TokenType, tok.ExpiresIn})
	return nil
}

func (s *Server) userSignIn(r *http.Request) (*Token, error) {
	if gt := r.URL.Query().Get("grant_type"); gt != "password" {
		return nil, apierrors.UnsupportedGrantType("use grant_type=password")
	}
	form, err := readParams(r)
	if err != nil {
		return nil, err
	}
	email, password := form.Get("email"), form.Get("password")
	if email == "" || password == "" {
		return nil, apierrors.InvalidRequest("email and password are required")
	}
	return s.signInUser(r.Context(), email, password)
}

// productUser authenticates the product user token of r. A missing or bad
// token is 401; an OAuth access token is invalid_token_type.
func (s *Server) productUser(r *http.Request) (*bearer.Claims, error) {
	raw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || raw == "" {
		return nil, apierrors.Unauthorized("a product user token is required")
	}
	c, err := s.verifier().Verify(r.Context(), raw)
	if err != nil {
		return nil, err
	}
	if c.OAuth() {
		return nil, apierrors.InvalidTokenType("app registration takes a product user token, not an OAuth access token")
	}
	return c, nil
}

// requireAdmin checks that user administers organizationID. A user who is
// not a member at all gets 404, so the organization's existence is not
// revealed; a member who is no admin gets 403.
func (s *Server) requireAdmin(r *http.Request, user *bearer.Claims, organizationID string) error {
	ms, err := s.Directory.Memberships(r.Context(), user.Subject)
	if err != nil {
		return apierrors.Internal(fmt.Errorf("oauth: memberships: %w", err))
	}
	for _, m := range ms {
		if m.OrganizationID == organizationID {
			if m.Admin {
				return nil
			}
			return apierrors.InsufficientScope("", "only an admin of the organization may manage its apps")
		}
	}
	return apierrors.NotFound("no such organization")
}

// appBody is the JSON body of app registration.
type appBody struct {
	OrganizationID string   `json:"organization_id"`
	Name           string   `json:"name"`
	Scopes         []string `json:"scopes"`
	BranchIDs      []string `json:"branch_ids"`
	RedirectURIs   []string `json:"redirect_uris"`
	// TokenEndpointAuthMethod is RFC 7591's: none registers a public
	// client; "", client_secret_basic or client_secret_post a confidential
	// one (which may use either).
	TokenEndpointAuthMethod string `json:"token_endpoint_auth_method"`
}

// AppResponse is the JSON that app registration returns. ClientSecret is
// shown this once; a public client has none. (Secret rotation returns a
// SecretRotation.)
type AppResponse struct {
	ClientID     string `json:"client_id"`
	ClientSecret string `json:"client_secret,omitempty"`
	// TokenEndpointAuthMethod is none for a public client,
	// client_secret_basic (or client_secret_post, which it may use as
	// well) for a confidential one.
	TokenEndpointAuthMethod string   `json:"token_endpoint_auth_method"`
	AppID                   string   `json:"app_id,omitempty"`
	Name                    string   `json:"name,omitempty"`
	OrganizationID          string   `json:"organization_id,omitempty"`
	Scopes                  []string `json:"scopes,omitempty"`
	BranchIDs               []string `json:"branch_ids,omitempty"`
	RedirectURIs            []string `json:"redirect_uris,omitempty"`
}

// NewAppResponse returns the registration response of app and its secret.
func NewAppResponse(app *App, secret string) AppResponse {
	return AppResponse{
		ClientID: app.ClientID, ClientSecret: secret, TokenEndpointAuthMethod: authMethod(app), AppID: app.ID, Name: app.Name,
		OrganizationID: app.OrganizationID, Scopes: app.Scopes, BranchIDs: nonNil(app.BranchIDs),
		RedirectURIs: nonNil(app.RedirectURIs),
	}
}

// authMethod is the token_endpoint_auth_method of app: the one it
// registered with, else none for a public client and client_secret_basic
// for a confidential one (which may use client_secret_post as well).
func authMethod(app *App) string {
	switch {
	case app.Public:
		return "none"
	case app.TokenEndpointAuthMethod != "":
		return app.TokenEndpointAuthMethod
	}
	return "client_secret_basic"
}

// handleRegisterApp registers an app: POST Paths.Apps with the
// product user token of an admin of the organization.
func (s *Server) handleRegisterApp(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Cache-Control", "no-store")
	user, err := s.productUser(r)
	if err != nil {
		return err
	}
	var body appBody
	if err := decodeJSON(r, &body); err != nil {
		return err
	}
	if body.OrganizationID == "" {
		return apierrors.InvalidRequest("organization_id is required: the organization that registers the app")
	}
	if err := s.requireAdmin(r, user, body.OrganizationID); err != nil {
		return err
	}
	n := NewApp{OrganizationID: body.OrganizationID, Name: body.Name, Scopes: body.Scopes, BranchIDs: body.BranchIDs, RedirectURIs: body.RedirectURIs}
	switch body.TokenEndpointAuthMethod {
	case "none":
		n.Public = true
	case "", "client_secret_basic", "client_secret_post":
	default:
		return apierrors.InvalidRequest("token_endpoint_auth_method must be none, client_secret_basic or client_secret_post")
	}
	app, secret, err := s.RegisterApp(asUser(r, user.Subject), n)
	if err != nil {
		return err
	}
	w.Header().Set("Location", s.paths().Apps+"/"+app.ClientID)
	writeJSON(w, http.StatusCreated, NewAppResponse(app, secret))
	return nil
}

// handleRotateSecret gives an app a new secret: POST
// Paths.Apps/{client_id}/rotate-secret by an admin of its
// organization. The body is empty or the JSON object {"revoke_tokens":
// true}, which also revokes the app's tokens (see RotateAppSecret); the
// answer is a SecretRotation.
func (s *Server) handleRotateSecret(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Cache-Control", "no-store")
	user, err := s.productUser(r)
	if err != nil {
		return err
	}
	clientID := r.PathValue("client_id")
	app, err := s.Store.App(r.Context(), clientID)
	switch {
	case errors.Is(err, ErrNotFound):
		return apierrors.NotFound("no such app")
	case err != nil:
		return apierrors.Internal(err)
	}
	if err := s.requireAdmin(r, user, app.OrganizationID); err != nil {
		if apierrors.HasCode(err, apierrors.CodeNotFound) {
			err = apierrors.NotFound("no such app")
		}
		return err
	}
	var body struct {
		RevokeTokens bool `json:"revoke_tokens"`
	}
	if r.ContentLength != 0 {
		if err := decodeJSON(r, &body); err != nil {
			return err
		}
	}
	rotation, err := s.RotateAppSecret(asUser(r, user.Subject), clientID, body.RevokeTokens)
	if err != nil {
		return err
	}
	writeJSON(w, http.StatusOK, rotation)
	return nil
}
