package oauth

import (
	"context"
	"crypto/sha256"
	"crypto/sha512"
	"encoding/base64"
	"errors"
	"fmt"
	"hash"
	"net/http"
	"slices"
	"strconv"
	"strings"

	"github.com/golang-jwt/jwt/v5"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/oauth/bearer"
)

// This file is OpenID Connect Core for the authorization-code flow: the
// identity scopes, the id token of a code exchange, the UserInfo endpoint
// and the discovery document.
//
// Decisions:
//
//   - OpenID Connect is on when the server signs with a public key (ES256
//     or EdDSA, see OpenID): a client verifies the id token against the
//     JSON Web Key Set. With HS256 the id token could be verified only by
//     whoever can also sign tokens, so the server does not speak OpenID
//     Connect at all: an authorization request asking openid is refused
//     invalid_scope, and the discovery document and UserInfo answer 404.
//   - openid, profile and email are identity scopes: every app may ask for
//     them in the authorization-code flow without having them in
//     App.Scopes, since they give the app nothing of an organization's
//     data, only the user who signs in, and the user approves them on the
//     consent page. They are granted like the others (the token answer's
//     scope, the access token's oauth_scopes, the refresh family) and
//     never reach a client-credentials token, which has no user.
//   - The id token is typed JWT, signed by the current key and naming it
//     in kid; aud is the client_id (a string), exp that of the access
//     token, auth_time the time the user signed in to the browser session
//     that approved the request, at_hash the access token's (OpenID
//     Connect Core section 3.1.3.6; SHA-256 for ES256, SHA-512 for EdDSA,
//     as relying-party libraries compute it). email (and email_verified
//     when the directory knows it) come with the email scope, name with
//     profile when the directory knows one (see UserLookup). Its aud never
//     holds "authenticated", so the API refuses an id token sent as an
//     access token.
//   - A refresh answers no id token (see Server.Refresh).
//   - UserInfo takes an authorization-code access token with openid, as
//     introspection verifies it (revoked families and cut-off apps are
//     refused), from the Authorization header only, by GET or POST. sub is
//     the user's id, as in the id token.
//   - prompt=none answers login_required without a session (or with one
//     older than max_age), else consent_required: consent is asked at
//     every authorization, since the organization is chosen each time.
//     prompt=login and a session older than max_age send the browser to
//     sign in again; the URL it comes back to drops login from prompt and
//     drops max_age, which the fresh sign-in satisfied, so it cannot loop
//     (max_age=0 included).
//   - The discovery document is the RFC 8414 metadata (both documents are
//     one, so they never disagree) with the fields OpenID Connect
//     Discovery requires; it names no request objects, claims parameter or
//     request_uri, which the server does not take.

// The identity scopes of OpenID Connect.
const (
	// ScopeOpenID asks for an id token: the request is an OpenID Connect
	// authentication request.
	ScopeOpenID = "openid"
	// ScopeProfile asks for the user's name (the name claim).
	ScopeProfile = "profile"
	// ScopeEmail asks for the user's email (email and email_verified).
	ScopeEmail = "email"
)

// identityScopes are the scopes every app may ask for in the
// authorization-code flow when the server speaks OpenID Connect.
var identityScopes = []string{ScopeOpenID, ScopeProfile, ScopeEmail}

// maxNonceLength is the longest nonce an authorization request may carry,
// in bytes: it is kept with the code and returned in the id token.
const maxNonceLength = 512

// The error codes of prompt=none (OpenID Connect Core section 3.1.2.6).
const (
	codeLoginRequired   = "login_required"
	codeConsentRequired = "consent_required"
)

// OpenID reports whether the server speaks OpenID Connect: whether its
// current key signs with a public-key algorithm (ES256 or EdDSA), whose
// id tokens clients verify against the JSON Web Key Set. With HS256 it
// does not (see the package's OpenID Connect decisions).
func (s *Server) OpenID() bool {
	if s.Keys == nil {
		return false
	}
	alg := s.Keys.Alg()
	return alg == bearer.ES256 || alg == bearer.EdDSA
}

// withoutIdentityScopes returns scopes without the identity scopes.
func withoutIdentityScopes(scopes []string) []string {
	return slices.DeleteFunc(slices.Clone(scopes), func(sc string) bool { return slices.Contains(identityScopes, sc) })
}

// checkOpenIDParams checks the OpenID Connect parameters of an
// authorization request: nonce, prompt and max_age.
func checkOpenIDParams(r AuthorizationRequest) error {
	if len(r.Nonce) > maxNonceLength {
		return apierrors.InvalidRequest("nonce is longer than %d bytes", maxNonceLength)
	}
	if prompts := strings.Fields(r.Prompt); slices.Contains(prompts, "none") && len(prompts) > 1 {
		return apierrors.InvalidRequest("prompt=none may not be combined with other prompt values")
	}
	if _, err := parseMaxAge(r.MaxAge); err != nil {
		return err
	}
	return nil
}

// parseMaxAge returns max_age in seconds, -1 for none.
func parseMaxAge(raw string) (int64, error) {
	if raw == "" {
		return -1, nil
	}
	n, err := strconv.ParseInt(raw, 10, 64)
	if err != nil || n < 0 {
		return 0, apierrors.InvalidRequest("max_age must be a number of seconds, 0 or more")
	}
	return n, nil
}

// hasPrompt reports whether the request's prompt holds value.
func (r AuthorizationRequest) hasPrompt(value string) bool {
	return slices.Contains(strings.Fields(r.Prompt), value)
}

// afterSignIn is the request as the browser comes back to it from a
// sign-in it asked for: without login in prompt and without max_age, which
// the sign-in just satisfied, so that the request goes on to consent.
func (r AuthorizationRequest) afterSignIn() AuthorizationRequest {
	r.Prompt = strings.Join(slices.DeleteFunc(strings.Fields(r.Prompt), func(p string) bool { return p == "login" }), " ")
	r.MaxAge = ""
	return r
}

// needsSignIn reports whether a signed-in session must sign in again for
// the request: prompt=login, or a sign-in older than max_age (0 always).
// The request was checked, so max_age parses.
func (s *Server) needsSignIn(r AuthorizationRequest, sess session) bool {
	if r.hasPrompt("login") {
		return true
	}
	maxAge, _ := parseMaxAge(r.MaxAge)
	switch {
	case maxAge < 0:
		return false
	case maxAge == 0:
		return true
	}
	return s.now().Unix()-sess.authTime().Unix() > maxAge
}

// idToken signs the id token of a code exchange (see the package's
// OpenID Connect decisions): for the code c, whose access token tok
// carries.
func (s *Server) idToken(ctx context.Context, c *Code, tok *Token) (string, error) {
	claims := jwt.MapClaims{
		"iss": s.Issuer, "sub": c.UserID, "aud": c.ClientID,
		"exp": tok.Claims.ExpiresAt, "iat": tok.Claims.IssuedAt,
	}
	if !c.AuthTime.IsZero() {
		claims["auth_time"] = c.AuthTime.Unix()
	}
	if c.Nonce != "" {
		claims["nonce"] = c.Nonce
	}
	if h, ok := tokenHash(s.Keys.Alg(), tok.AccessToken); ok {
		claims["at_hash"] = h
	}
	user, err := s.userClaims(ctx, c.UserID, c.Scopes)
	switch {
	case errors.Is(err, ErrNotFound):
		return "", apierrors.InvalidGrant("the user no longer exists")
	case err != nil:
		return "", apierrors.Internal(fmt.Errorf("oauth: look up user: %w", err))
	}
	for k, v := range user {
		claims[k] = v
	}
	signed, err := s.Keys.SignClaims(claims)
	if err != nil {
		return "", apierrors.Internal(err)
	}
	return signed, nil
}

// tokenHash is at_hash of token for an id token signed with alg: the
// base64url left half of its hash (SHA-256 for ES256, SHA-512 for EdDSA).
func tokenHash(alg, token string) (string, bool) {
	var h hash.Hash
	switch alg {
	case bearer.ES256:
		h = sha256.New()
	case bearer.EdDSA:
		h = sha512.New()
	default:
		return "", false
	}
	h.Write([]byte(token))
	sum := h.Sum(nil)
	return base64.RawURLEncoding.EncodeToString(sum[:len(sum)/2]), true
}

// userClaims returns the claims of the user with userID that scopes give:
// email (and email_verified) for email, name for profile, each when the
// Directory, a UserLookup, knows it. It asks the Directory only when a
// scope gives a claim.
func (s *Server) userClaims(ctx context.Context, userID string, scopes []string) (map[string]any, error) {
	out := map[string]any{}
	lookup, ok := s.Directory.(UserLookup)
	email, profile := slices.Contains(scopes, ScopeEmail), slices.Contains(scopes, ScopeProfile)
	if !ok || !email && !profile {
		return out, nil
	}
	u, err := lookup.User(ctx, userID)
	if err != nil {
		return nil, err
	}
	if email && u.Email != "" {
		out["email"] = u.Email
		if u.EmailVerified != nil {
			out["email_verified"] = *u.EmailVerified
		}
	}
	if profile && u.Name != "" {
		out["name"] = u.Name
	}
	return out, nil
}

// handleUserInfo is the UserInfo endpoint (OpenID Connect Core section
// 5.3), GET and POST: the claims of the user of an authorization-code
// access token with openid, sent as Authorization: Bearer. A missing token
// is 401 with a bare Bearer challenge, a bad one 401 invalid_token, a
// token without openid (or of client credentials, or a product user
// token) 403 insufficient_scope.
func (s *Server) handleUserInfo(w http.ResponseWriter, r *http.Request) error {
	w.Header().Set("Cache-Control", "no-store")
	w.Header().Set("Pragma", "no-cache")
	if !s.OpenID() {
		return apierrors.NotFound("this server signs tokens with a shared secret (HS256) and does not speak OpenID Connect")
	}
	raw, ok := strings.CutPrefix(r.Header.Get("Authorization"), "Bearer ")
	if !ok || raw == "" {
		return apierrors.Unauthorized("an access token is required: Authorization: Bearer <token>")
	}
	v := s.verifier()
	v.Families = s.Store
	v.CutOffs = s.CutOffs
	c, err := v.Verify(r.Context(), raw)
	if err != nil {
		return err
	}
	if !c.OAuth() || c.Grant != bearer.GrantAuthorizationCode || !slices.Contains(c.Scopes, ScopeOpenID) {
		return apierrors.InsufficientScope(ScopeOpenID, "UserInfo takes an access token of the authorization-code flow granted the openid scope")
	}
	claims, err := s.userClaims(r.Context(), c.Subject, c.Scopes)
	switch {
	case errors.Is(err, ErrNotFound):
		return apierrors.InvalidToken("the token's user no longer exists")
	case err != nil:
		return apierrors.Internal(fmt.Errorf("oauth: look up user: %w", err))
	}
	claims["sub"] = c.Subject
	writeJSON(w, http.StatusOK, claims)
	return nil
}

// metadata is the authorization server's metadata (RFC 8414), which is
// also its OpenID Connect discovery document when it speaks OpenID
// Connect: then it has the fields of OpenID Connect Discovery 1.0 too.
func (s *Server) metadata() map[string]any {
	base, p := strings.TrimSuffix(s.Issuer, "/"), s.paths()
	m := map[string]any{
		"issuer":                                         s.Issuer,
		"authorization_endpoint":                         base + p.Authorize,
		"token_endpoint":                                 base + p.Token,
		"revocation_endpoint":                            base + p.Revoke,
		"introspection_endpoint":                         base + p.Introspect,
		"response_types_supported":                       []string{"code"},
		"response_modes_supported":                       []string{"query"},
		"grant_types_supported":                          []string{"authorization_code", "refresh_token", "client_credentials"},
		"code_challenge_methods_supported":               []string{"S256"},
		"authorization_response_iss_parameter_supported": true,
		"token_endpoint_auth_methods_supported":          []string{"client_secret_basic", "client_secret_post", "none"},
		"revocation_endpoint_auth_methods_supported":     []string{"client_secret_basic", "client_secret_post", "none"},
		"introspection_endpoint_auth_methods_supported":  []string{"client_secret_basic", "client_secret_post"},
	}
	scopes := s.ScopesSupported
	if s.Keys != nil && len(s.Keys.JWKS().Keys) > 0 {
		m["jwks_uri"] = base + p.JWKS
	}
	if s.OpenID() {
		scopes = append(slices.Clone(identityScopes), withoutIdentityScopes(scopes)...)
		m["userinfo_endpoint"] = base + p.UserInfo
		m["id_token_signing_alg_values_supported"] = []string{s.Keys.Alg()}
		m["subject_types_supported"] = []string{"public"}
		m["claims_supported"] = []string{"iss", "sub", "aud", "exp", "iat", "auth_time", "nonce", "at_hash", "email", "email_verified", "name"}
		m["prompt_values_supported"] = []string{"none", "login", "consent", "select_account"}
		m["claims_parameter_supported"] = false
		m["request_parameter_supported"] = false
		m["request_uri_parameter_supported"] = false
	}
	if len(scopes) > 0 {
		m["scopes_supported"] = scopes
	}
	if s.Registration != RegistrationOff {
		m["registration_endpoint"] = base + p.Register
	}
	if s.ClientMetadataDocuments != nil {
		m["client_id_metadata_document_supported"] = true
	}
	return m
}

// handleOpenIDConfiguration is the OpenID Connect discovery document
// (OpenID Connect Discovery 1.0 section 4): the metadata, 404 not_found on
// a server that does not speak OpenID Connect.
func (s *Server) handleOpenIDConfiguration(w http.ResponseWriter, _ *http.Request) error {
	if !s.OpenID() {
		return apierrors.NotFound("this server signs tokens with a shared secret (HS256) and does not speak OpenID Connect")
	}
	writeJSON(w, http.StatusOK, s.metadata())
	return nil
}
