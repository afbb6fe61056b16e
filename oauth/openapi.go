package oauth

import (
	"maps"
	"strconv"
	"strings"
	"time"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/openapi"
)

// This file describes the token service's endpoints as an OpenAPI section
// (see package openapi), for the host to merge into the document it
// serves: package resource takes it in resource.OpenAPIInfo.Sections.
//
// Decisions:
//
//   - The section follows the Server: its paths are Server.Paths, the
//     security scheme's URLs are the Issuer and those paths, and the
//     lifetimes it states (expires_in, codes, refresh tokens) are the
//     Server's. Whatever describes a path of the host's, not of the
//     service, the host adds (OpenAPIClientCredentials).
//   - The browser's sign-in and consent pages are not described: they are
//     pages, not API; the authorization endpoint is, as the flow's start.
//   - It declares the security scheme "oauth2" with both flows and the
//     ScopesSupported, each described by DescribeScope; the resource server
//     whose tokens these are adds its own scopes and their words (package
//     resource does so when the section is merged).

// The names of the section's security schemes and its tag.
const (
	oaSchemeOAuth2      = "oauth2"
	oaSchemeUserToken   = "userToken"
	oaSchemeClientBasic = "clientBasic"
	// oaSchemeRegistration is the Bearer token of Dynamic Client
	// Registration: an initial access token, or a registration access
	// token.
	oaSchemeRegistration = "registrationToken"
	tagOAuth             = "OAuth"
)

// OpenAPI returns the OpenAPI 3.1 description of the token service's
// endpoints at its Paths: the token endpoint and its grants, user sign-in,
// app registration and secret rotation, connected apps, revocation,
// introspection, the metadata, the authorization endpoint, and OpenID
// Connect's discovery document and UserInfo, under the tag "OAuth", with the
// schemas, responses, headers and security schemes they use. Its info and
// server are the service's; a host merges it into its own document with
// openapi.Document.Merge (or resource.OpenAPIInfo.Sections). Each call
// returns a new document.
func (s *Server) OpenAPI() *openapi.Document {
	p := s.paths()
	d := openapi.New(openapi.Info{Title: "OAuth 2.1 token service", Version: "v1"})
	d.Servers = []openapi.Server{{URL: strings.TrimSuffix(s.Issuer, "/"), Description: "The issuer."}}
	d.Components.Schemas = s.oaSchemas()
	d.Components.Schemas["Error"] = openapi.ErrorSchema()
	d.Components.Headers = openapi.Headers()
	d.Components.SecuritySchemes = s.oaSecuritySchemes()
	shared := oaShared(d)
	d.Tags = append(d.Tags, openapi.Tag{Name: tagOAuth, Description: "The OAuth 2.1 token service that issues the API's access tokens: " +
		"the authorization-code grant with PKCE (S256) and a server-rendered sign-in and consent page, rotating refresh tokens, client credentials, " +
		"app registration and secret rotation, RFC 7009 revocation, RFC 7662 introspection and RFC 8414 metadata, " +
		"and OpenID Connect (id tokens, discovery and UserInfo) when tokens are signed with ES256 or EdDSA. " +
		"Token requests are `application/x-www-form-urlencoded` or `application/json`; clients authenticate by HTTP Basic or `client_id` and `client_secret` in the body. " +
		"Errors follow RFC 6749 section 5.2 in the shape of `Error`."})

	s.oaTokenPaths(d, p, shared)
	s.oaAppPaths(d, p, shared)
	oaClientPaths(d, p, shared)
	s.oaPublicPaths(d, p, shared)
	s.oaRegistrationPaths(d, p, shared)
	return d
}

// oaTokenPaths describes the token endpoint and user sign-in in d.
func (s *Server) oaTokenPaths(d *openapi.Document, p Paths, shared func(string, func() *openapi.Response) *openapi.Response) {
	tooLarge := shared("OAuthPayloadTooLarge", oaPayloadTooLarge)
	allGrants := oaTokenErrors(shared, "`invalid_request`: a missing or repeated parameter, a body that is neither a form nor a JSON object of strings, or HTTP Basic and `client_secret` both.\n\n"+
		"`invalid_grant`: an authorization code or refresh token that is invalid, expired, spent, revoked, or of another client; a redirect URI or PKCE verifier that does not match.\n\n"+
		"`unsupported_grant_type`: a `grant_type` other than the three.\n\n"+
		"`invalid_scope`: client credentials asking for a scope the app does not have.\n\n"+
		"`invalid_target`: a `resource` the server issues no tokens for, more than one, or not the one the grant was authorized for.")
	allGrants["200"] = oaTokenSuccess("The tokens. `Cache-Control: no-store`.", "TokenResponse")
	d.Paths[p.Token] = &openapi.PathItem{Post: &openapi.Operation{
		Tags: []string{tagOAuth}, Summary: "Request a token", OperationID: "requestToken",
		Description: "The token endpoint (RFC 6749 section 3.2): the `authorization_code` (with PKCE), `refresh_token` and `client_credentials` grants. " +
			"The client is authenticated before any code or refresh token is looked at, so a failed client authentication never spends a grant.",
		RequestBody: openapi.FormOrJSON("The grant.", "TokenRequest"),
		Responses:   allGrants,
		Security:    oaClientAuth(),
	}}

	d.Paths[p.UserToken] = &openapi.PathItem{Post: &openapi.Operation{
		Tags: []string{tagOAuth}, Summary: "Sign in a product user", OperationID: "signInUser",
		Description: "Product user sign-in. It answers a product user token: a JWT signed like the access tokens but typed `JWT` and without `oauth_client_id`, " +
			"which app registration and secret rotation take and the resource API refuses (403 `invalid_token_type`).",
		Parameters: []*openapi.Parameter{{
			Name: "grant_type", In: "query", Required: true, Description: "Must be `password`.",
			Schema: &openapi.Schema{Type: "string", Enum: []any{"password"}},
		}},
		RequestBody: openapi.FormOrJSON("The user's credentials.", "UserTokenRequest"),
		Responses: map[string]*openapi.Response{
			"200": oaTokenSuccess("The product user token. `Cache-Control: no-store`.", "UserTokenResponse"),
			"400": openapi.ErrorResponse("`unsupported_grant_type`: the query's `grant_type` is not `password`.\n\n`invalid_request`: no email or password, or a body that is neither a form nor a JSON object of strings.\n\n`invalid_grant`: the email and password do not match a user.",
				oaErr(apierrors.CodeUnsupportedGrantType, "use grant_type=password"),
				oaErr(apierrors.CodeInvalidRequest, "email and password are required"),
				oaErr(apierrors.CodeInvalidGrant, "invalid email or password")),
			"413": tooLarge,
			"429": shared("RateLimited", openapi.RateLimitedResponse),
			"500": shared("ServerError", openapi.ServerErrorResponse),
			"503": shared("Unavailable", openapi.UnavailableResponse),
		},
		Security: []openapi.SecurityRequirement{},
	}}
}

// oaAppPaths describes app registration, secret rotation and connected
// apps in d: the endpoints that take a product user token.
func (s *Server) oaAppPaths(d *openapi.Document, p Paths, shared func(string, func() *openapi.Response) *openapi.Response) {
	userAuthErrors := func(notFound string, forbidden string) map[string]*openapi.Response {
		return map[string]*openapi.Response{
			"401": openapi.WithHeaders(openapi.ErrorResponse("`unauthorized`: no `Authorization: Bearer` product user token. `invalid_token`: a token that is malformed, badly signed, expired or for another audience.",
				oaErr(apierrors.CodeUnauthorized, "a product user token is required"),
				oaErr(apierrors.CodeInvalidToken, "the token has expired")), "WWW-Authenticate"),
			"403": {
				Description: "`invalid_token_type`: an OAuth access token instead of a product user token.\n\n`insufficient_scope`: " + forbidden,
				Headers:     map[string]*openapi.Header{"WWW-Authenticate": openapi.HeaderRef("ScopeChallenge")},
				Content: openapi.ErrorResponse("",
					oaErr(apierrors.CodeInvalidTokenType, "app registration takes a product user token, not an OAuth access token"),
					oaErr(apierrors.CodeInsufficientScope, "only an admin of the organization may manage its apps")).Content,
			},
			"404": openapi.ErrorResponse("`not_found`: "+notFound, oaErr(apierrors.CodeNotFound, "no such organization")),
			"429": shared("RateLimited", openapi.RateLimitedResponse),
			"500": shared("ServerError", openapi.ServerErrorResponse),
			"503": shared("Unavailable", openapi.UnavailableResponse),
		}
	}
	userSecurity := []openapi.SecurityRequirement{{oaSchemeUserToken: {}}}

	register := userAuthErrors("the user is no member of the organization (its existence is not revealed).", "the user is a member of the organization but not an admin.")
	register["201"] = openapi.WithHeaders(&openapi.Response{
		Description: "The app, with its client secret: shown this once.",
		Headers: map[string]*openapi.Header{"Location": {Description: "The app's path: `" + p.Apps + "/{client_id}`.", Required: true,
			Schema: &openapi.Schema{Type: "string", Format: "uri-reference"}}},
		Content: openapi.JSON(openapi.SchemaRef("AppResponse")),
	}, "Cache-Control")
	register["400"] = openapi.ErrorResponse("`invalid_request`: no `Content-Type: application/json`, a body with unknown fields, no organization, name or scope, a malformed scope, a redirect URI that is not https, http on a loopback host or a private-use scheme, or that has a fragment, or a branch of another organization.",
		oaErr(apierrors.CodeInvalidRequest, "at least one scope is required"))
	register["413"] = shared("OAuthPayloadTooLarge", oaPayloadTooLarge)
	d.Paths[p.Apps] = &openapi.PathItem{Post: &openapi.Operation{
		Tags: []string{tagOAuth}, Summary: "Register an app", OperationID: "registerApp",
		Description: "Registers an OAuth app of an organization. Takes the product user token of an admin of that organization. The client secret is shown once in the response and stored only as a hash.",
		RequestBody: &openapi.RequestBody{Description: "The app.", Required: true, Content: openapi.JSON(openapi.SchemaRef("AppRegistration"))},
		Responses:   register,
		Security:    userSecurity,
	}}

	rotate := userAuthErrors("no app has this client id, or the user is no member of its organization.", "the user is a member of the app's organization but not an admin.")
	rotate["200"] = openapi.WithHeaders(&openapi.Response{Description: "The new secret, shown this once; the old one stops working at once.", Content: openapi.JSON(openapi.SchemaRef("SecretRotation"))}, "Cache-Control")
	rotate["400"] = openapi.ErrorResponse("`invalid_request`: a body that is not a JSON object of the documented fields.",
		oaErr(apierrors.CodeInvalidRequest, "the body must be a JSON object of the documented fields"))
	rotate["413"] = shared("OAuthPayloadTooLarge", oaPayloadTooLarge)
	d.Paths[p.Apps+"/{client_id}/rotate-secret"] = &openapi.PathItem{
		Parameters: []*openapi.Parameter{{Name: "client_id", In: "path", Required: true, Description: "The app's client id.", Schema: &openapi.Schema{Type: "string"}}},
		Post: &openapi.Operation{
			Tags: []string{tagOAuth}, Summary: "Rotate an app's client secret", OperationID: "rotateAppSecret",
			Description: "Gives the app a new client secret. Takes the product user token of an admin of the app's organization. " +
				"With `revoke_tokens`, also revokes the app's refresh tokens and authorization-code access tokens; its client-credentials access tokens stay valid until they expire (at most " + inWords(s.ttl(s.AccessTokenTTL, DefaultAccessTokenTTL)) + "), as the answer says.",
			RequestBody: &openapi.RequestBody{Description: "Optional.", Content: openapi.JSON(openapi.SchemaRef("SecretRotationRequest"))},
			Responses:   rotate,
			Security:    userSecurity,
		},
	}

	s.oaConnectedApps(d, p, userAuthErrors, userSecurity)
	s.oaAuditLog(d, p, userAuthErrors, userSecurity)
}

// oaClientPaths describes revocation and introspection in d: the
// endpoints where a client authenticates to ask about a token.
func oaClientPaths(d *openapi.Document, p Paths, shared func(string, func() *openapi.Response) *openapi.Response) {
	tooLarge := shared("OAuthPayloadTooLarge", oaPayloadTooLarge)
	clientErrors := func(oaSuccess *openapi.Response) map[string]*openapi.Response {
		return map[string]*openapi.Response{
			"200": oaSuccess,
			"400": openapi.ErrorResponse("`invalid_request`: no `token`, a repeated parameter, a body that is neither a form nor a JSON object of strings, or HTTP Basic and `client_secret` both.",
				oaErr(apierrors.CodeInvalidRequest, "token is required")),
			"401": shared("InvalidClient", oaInvalidClient),
			"413": tooLarge,
			"429": shared("RateLimited", openapi.RateLimitedResponse),
			"500": shared("ServerError", openapi.ServerErrorResponse),
			"503": shared("Unavailable", openapi.UnavailableResponse),
		}
	}
	revokeResponses := clientErrors(openapi.WithHeaders(&openapi.Response{Description: "Revoked, or an unknown or expired token. No body."}, "Cache-Control"))
	revokeResponses["400"] = openapi.ErrorResponse("`unsupported_token_type`: a client-credentials access token or a product user token, which cannot be revoked. "+
		"`unauthorized_client`: a token issued to another client. `invalid_request`: no `token`, a repeated parameter, a body that is neither a form nor a JSON object of strings, or HTTP Basic and `client_secret` both.",
		oaErr(apierrors.CodeUnsupportedTokenType, "a client-credentials access token cannot be revoked; it stays valid until it expires at 2026-01-01T12:00:00Z"),
		oaErr(apierrors.CodeUnauthorizedClient, "the token was issued to another client"),
		oaErr(apierrors.CodeInvalidRequest, "token is required"))
	d.Paths[p.Revoke] = &openapi.PathItem{Post: &openapi.Operation{
		Tags: []string{tagOAuth}, Summary: "Revoke a token", OperationID: "revokeToken",
		Description: "RFC 7009 revocation. A refresh token of the authenticated client, or an authorization-code access token of it, is revoked with its whole family: " +
			"every refresh token of that authorization and every access token issued from them, which fail at once. " +
			"A client-credentials access token cannot be revoked (it stays valid until it expires): 400 `unsupported_token_type`. A token of another client: 400 `unauthorized_client`. " +
			"An unknown or expired token is answered 200: there is nothing to revoke (RFC 7009 section 2.2).",
		RequestBody: openapi.FormOrJSON("The token to revoke.", "TokenRevocationRequest"),
		Responses:   revokeResponses,
		Security:    oaClientAuth(),
	}}
	d.Paths[p.Introspect] = &openapi.PathItem{Post: &openapi.Operation{
		Tags: []string{tagOAuth}, Summary: "Introspect a token", OperationID: "introspectToken",
		Description: "RFC 7662 introspection for resource servers: an authenticated client asks whether an access or refresh token is active, and what it grants.",
		RequestBody: openapi.FormOrJSON("The token to describe.", "TokenIntrospectionRequest"),
		Responses:   clientErrors(oaTokenSuccess("The token's state. `active` false for an unknown, expired, spent or revoked token, and for a product user token.", "TokenIntrospection")),
		Security:    oaClientAuth(),
	}}
}

// oaPublicPaths describes the metadata, the key set and the authorization
// endpoint in d: the endpoints that take no credentials.
func (s *Server) oaPublicPaths(d *openapi.Document, p Paths, shared func(string, func() *openapi.Response) *openapi.Response) {
	d.Paths[p.Metadata] = &openapi.PathItem{Get: &openapi.Operation{
		Tags: []string{tagOAuth}, Summary: "Get the authorization server metadata", OperationID: "getAuthorizationServerMetadata",
		Description: "RFC 8414 metadata, so that standard clients configure themselves.",
		Responses: map[string]*openapi.Response{
			"200": {Description: "The metadata.", Content: openapi.JSON(openapi.SchemaRef("AuthorizationServerMetadata"))},
			"429": shared("RateLimited", openapi.RateLimitedResponse),
			"500": shared("ServerError", openapi.ServerErrorResponse),
		},
		Security: []openapi.SecurityRequirement{},
	}}
	header := func(description string) *openapi.Header {
		return &openapi.Header{Description: description, Required: true, Schema: &openapi.Schema{Type: "string"}}
	}
	d.Paths[p.JWKS] = &openapi.PathItem{Get: &openapi.Operation{
		Tags: []string{tagOAuth}, Summary: "Get the public signing keys", OperationID: "getJSONWebKeySet",
		Description: "The RFC 7517 JSON Web Key Set of the keys that sign tokens, when they are ES256 or EdDSA keys (the metadata's `jwks_uri`), " +
			"so that services verify tokens without a shared secret; the current key first, then the previous ones that still verify. " +
			"A token's `kid` names its key, and only that key's `alg` is accepted for it.",
		Responses: map[string]*openapi.Response{
			"200": {Description: "The key set.", Content: map[string]*openapi.MediaType{"application/jwk-set+json": {Schema: openapi.SchemaRef("JSONWebKeySet")}},
				Headers: map[string]*openapi.Header{
					"Cache-Control": header("`public, max-age=300`."),
					"ETag":          header("A strong validator of the set; `If-None-Match` with it answers 304."),
				}},
			"304": {Description: "The set has not changed since the `ETag` in `If-None-Match`."},
			"404": openapi.ErrorResponse("`not_found`: the server signs with a shared secret (HS256) and publishes no key.",
				oaErr(apierrors.CodeNotFound, "this server signs tokens with a shared secret (HS256) and publishes no keys")),
			"429": shared("RateLimited", openapi.RateLimitedResponse),
			"500": shared("ServerError", openapi.ServerErrorResponse),
		},
		Security: []openapi.SecurityRequirement{},
	}}

	s.oaOpenIDPaths(d, p, shared)

	redirect := func(description string) *openapi.Header {
		return &openapi.Header{Description: description, Required: true, Schema: &openapi.Schema{Type: "string", Format: "uri-reference"}}
	}
	html := map[string]*openapi.MediaType{"text/html": {Schema: &openapi.Schema{Type: "string"}}}
	d.Paths[p.Authorize] = &openapi.PathItem{Get: &openapi.Operation{
		Tags: []string{tagOAuth}, Summary: "Start an authorization (browser)", OperationID: "authorize",
		Description: "The authorization endpoint (RFC 6749 section 4.1.1 with PKCE, RFC 7636), for a browser, not an API client. " +
			"A valid request from a signed-in user gets the consent page, where the user picks the organization and approves or denies; one without a session is sent to the sign-in page first. " +
			"Approval redirects to `redirect_uri` with `code`, `state` and `iss`; denial with `error=access_denied`. " +
			"An unknown client or a redirect URI that does not match exactly gets an error page, never a redirect; every other error redirects with `error`, `error_description` and `state`.",
		Parameters: []*openapi.Parameter{
			{Name: "client_id", In: "query", Required: true, Description: "The app's client id; where the server takes client metadata documents (`client_id_metadata_document_supported` in the metadata), also the https URL of the client's metadata document.", Schema: &openapi.Schema{Type: "string"}},
			{Name: "redirect_uri", In: "query", Required: true, Description: "One of the app's redirect URIs, exactly.", Schema: &openapi.Schema{Type: "string", Format: "uri"}},
			{Name: "response_type", In: "query", Required: true, Description: "`code`.", Schema: &openapi.Schema{Type: "string", Enum: []any{"code"}}},
			{Name: "code_challenge", In: "query", Required: true, Description: "The base64url SHA-256 of the PKCE verifier (43 characters).", Schema: &openapi.Schema{Type: "string", Pattern: `^[A-Za-z0-9_-]{43}$`}},
			{Name: "code_challenge_method", In: "query", Required: true, Description: "`S256`; `plain` is refused.", Schema: &openapi.Schema{Type: "string", Enum: []any{"S256"}}},
			{Name: "scope", In: "query", Required: true, Description: "Space-separated scopes, a subset of the app's. On a server that signs with ES256 or EdDSA every app may also ask for the OpenID Connect scopes `openid` (an id token), `profile` and `email`; with HS256 `openid` is `invalid_scope`.", Schema: &openapi.Schema{Type: "string"}},
			{Name: "state", In: "query", Description: "Opaque; returned with the redirect.", Schema: &openapi.Schema{Type: "string"}},
			oaResourceParam(),
			{Name: "nonce", In: "query", Description: "OpenID Connect: an opaque value, kept with the code and returned in the id token's `nonce`; at most " + strconv.Itoa(maxNonceLength) + " bytes.",
				Schema: &openapi.Schema{Type: "string", MaxLength: openapi.Ptr(maxNonceLength)}},
			{Name: "prompt", In: "query", Description: "OpenID Connect, space-separated: `none` shows no page (an error `login_required` without a session, else `consent_required`, since consent is asked at every authorization) and goes alone; " +
				"`login` asks the user to sign in again; `consent` and `select_account` are what the consent page always does. Other values are ignored.", Schema: &openapi.Schema{Type: "string"}},
			{Name: "max_age", In: "query", Description: "OpenID Connect: the most seconds since the user signed in; an older sign-in is done again (`0` always). The id token's `auth_time` tells when it was.",
				Schema: &openapi.Schema{Type: "integer", Format: "int64", Minimum: openapi.Ptr(0.0)}},
		},
		Responses: map[string]*openapi.Response{
			"200": {Description: "The consent page.", Content: html},
			"302": {Description: "An error, back to `redirect_uri` with `error`, `error_description`, `state` and `iss`; with `prompt=none`, `login_required` or `consent_required`.", Headers: map[string]*openapi.Header{"Location": redirect("`redirect_uri` with the error parameters.")}},
			"303": {Description: "No session, `prompt=login`, or a sign-in older than `max_age`: to the sign-in page, which returns here.", Headers: map[string]*openapi.Header{"Location": redirect("The sign-in page.")}},
			"400": {Description: "An error page: an unknown `client_id` (for a client metadata document URL: one that cannot be fetched or is not valid, with the reason), or a `redirect_uri` that is missing or not registered.", Content: html},
			"500": {Description: "An error page: the server failed.", Content: html},
		},
		Security: []openapi.SecurityRequirement{},
	}}
}

// oaOpenIDPaths describes the OpenID Connect discovery document and the
// UserInfo endpoint in d.
func (s *Server) oaOpenIDPaths(d *openapi.Document, p Paths, shared func(string, func() *openapi.Response) *openapi.Response) {
	const notOpenID = "this server signs tokens with a shared secret (HS256) and does not speak OpenID Connect"
	scopes := []string{}
	if s.OpenID() {
		scopes = []string{ScopeOpenID} // declared by the flow only then (oaSecuritySchemes)
	}
	d.Paths[p.OpenIDConfiguration] = &openapi.PathItem{Get: &openapi.Operation{
		Tags: []string{tagOAuth}, Summary: "Get the OpenID Connect discovery document", OperationID: "getOpenIDConfiguration",
		Description: "OpenID Connect Discovery 1.0, so that relying-party libraries configure themselves from the issuer: the same document as the RFC 8414 metadata, " +
			"served when tokens are signed with ES256 or EdDSA (the id token verifies against `jwks_uri`).",
		Responses: map[string]*openapi.Response{
			"200": {Description: "The discovery document.", Content: openapi.JSON(openapi.SchemaRef("AuthorizationServerMetadata"))},
			"404": openapi.ErrorResponse("`not_found`: the server signs with a shared secret (HS256) and does not speak OpenID Connect.", oaErr(apierrors.CodeNotFound, notOpenID)),
			"429": shared("RateLimited", openapi.RateLimitedResponse),
			"500": shared("ServerError", openapi.ServerErrorResponse),
		},
		Security: []openapi.SecurityRequirement{},
	}}
	userInfo := func(method, operationID string) *openapi.Operation {
		return &openapi.Operation{
			Tags: []string{tagOAuth}, Summary: "Get the signed-in user's claims (" + method + ")", OperationID: operationID,
			Description: "The OpenID Connect UserInfo endpoint: the claims of the user of an access token from the authorization-code flow granted `openid`, " +
				"sent as `Authorization: Bearer`: `sub`, `email` with the `email` scope, `name` with `profile` when the server knows one. Revoked tokens and tokens of disconnected apps are refused. `Cache-Control: no-store`.",
			Responses: map[string]*openapi.Response{
				"200": openapi.WithHeaders(&openapi.Response{Description: "The user's claims.", Content: openapi.JSON(openapi.SchemaRef("UserInfo"))}, "Cache-Control"),
				"401": openapi.WithHeaders(openapi.ErrorResponse("`unauthorized`: no `Authorization: Bearer` token. `invalid_token`: a token that is malformed, badly signed, expired or revoked.",
					oaErr(apierrors.CodeUnauthorized, "an access token is required: Authorization: Bearer <token>"),
					oaErr(apierrors.CodeInvalidToken, "the token has expired")), "WWW-Authenticate"),
				"403": openapi.WithHeaders(openapi.ErrorResponse("`insufficient_scope`: a token without `openid`, of the client-credentials grant, or a product user token.",
					oaErr(apierrors.CodeInsufficientScope, "UserInfo takes an access token of the authorization-code flow granted the openid scope")), "WWW-Authenticate"),
				"404": openapi.ErrorResponse("`not_found`: the server signs with a shared secret (HS256) and does not speak OpenID Connect.", oaErr(apierrors.CodeNotFound, notOpenID)),
				"429": shared("RateLimited", openapi.RateLimitedResponse),
				"500": shared("ServerError", openapi.ServerErrorResponse),
				"503": shared("Unavailable", openapi.UnavailableResponse),
			},
			Security: []openapi.SecurityRequirement{{oaSchemeOAuth2: scopes}},
		}
	}
	d.Paths[p.UserInfo] = &openapi.PathItem{Get: userInfo("GET", "getUserInfo"), Post: userInfo("POST", "postUserInfo")}
}

// OpenAPIClientCredentials returns the path item of a token endpoint that
// ClientCredentialsHandler serves, for the host to add, at the path where
// it mounts the handler, to the document of OpenAPI, whose components it
// refers to:
//
//	doc := srv.OpenAPI()
//	err := doc.AddPath("/v1/oauth/token", srv.OpenAPIClientCredentials("requestV1Token", "Request a client-credentials token (/v1 path)"))
//
// operationID must be unique in the document.
func (s *Server) OpenAPIClientCredentials(operationID, summary string) *openapi.PathItem {
	responses := oaTokenErrors(oaRefs, "`invalid_request`: a missing or repeated parameter, a body that is neither a form nor a JSON object of strings, or HTTP Basic and `client_secret` both.\n\n"+
		"`unsupported_grant_type`: any `grant_type` but `client_credentials`.\n\n"+
		"`invalid_scope`: a scope the app does not have.\n\n"+
		"`invalid_target`: a `resource` the server issues no tokens for, or more than one.")
	responses["200"] = oaTokenSuccess("The access token, with the app's organization and branches. `Cache-Control: no-store`.", "TokenResponse")
	return &openapi.PathItem{Post: &openapi.Operation{
		Tags: []string{tagOAuth}, Summary: summary, OperationID: operationID,
		Description: "The `client_credentials` grant only, served by the same token service as `" + s.paths().Token + "`. Any other grant type gives 400 `unsupported_grant_type`.",
		RequestBody: openapi.FormOrJSON("The client-credentials grant.", "ClientCredentialsTokenRequest"),
		Responses:   responses,
		Security:    oaClientAuth(),
	}}
}

// oaShared returns a function that returns a reference to the response
// component name of d, which build makes the first time: the responses
// several operations share are written once.
func oaShared(d *openapi.Document) func(name string, build func() *openapi.Response) *openapi.Response {
	return func(name string, build func() *openapi.Response) *openapi.Response {
		if _, ok := d.Components.Responses[name]; !ok {
			d.Components.Responses[name] = build()
		}
		return openapi.ResponseRef(name)
	}
}

// oaRefs returns a reference to the response component name, which the
// document of OpenAPI declares.
func oaRefs(name string, _ func() *openapi.Response) *openapi.Response {
	return openapi.ResponseRef(name)
}

// oaTokenErrors are the error responses of a token endpoint; codes
// describes its 400s.
func oaTokenErrors(shared func(string, func() *openapi.Response) *openapi.Response, codes string) map[string]*openapi.Response {
	return map[string]*openapi.Response{
		"400": openapi.ErrorResponse(codes,
			oaErr(apierrors.CodeInvalidRequest, "grant_type is required"),
			oaErr(apierrors.CodeInvalidGrant, "the refresh token was already used; its family is revoked"),
			oaErr(apierrors.CodeUnsupportedGrantType, "this endpoint takes only grant_type=client_credentials"),
			oaErr(apierrors.CodeInvalidScope, "the app may not request svc:invoices:write")),
		"401": shared("InvalidClient", oaInvalidClient),
		"413": shared("OAuthPayloadTooLarge", oaPayloadTooLarge),
		"429": shared("RateLimited", openapi.RateLimitedResponse),
		"500": shared("ServerError", openapi.ServerErrorResponse),
		"503": shared("Unavailable", openapi.UnavailableResponse),
	}
}

func oaPayloadTooLarge() *openapi.Response { return openapi.PayloadTooLargeResponse(maxRequestBytes) }

func oaErr(code, description string) openapi.ErrorExample {
	return openapi.ErrorExample{Code: code, Description: description}
}

// inWords says a lifetime as the document does: "an hour", "30 days",
// "15 minutes", "90 s".
func inWords(d time.Duration) string {
	for _, u := range []struct {
		unit      time.Duration
		one, many string
	}{{24 * time.Hour, "a day", "days"}, {time.Hour, "an hour", "hours"}, {time.Minute, "a minute", "minutes"}} {
		if d%u.unit == 0 {
			if n := int(d / u.unit); n != 1 {
				return strconv.Itoa(n) + " " + u.many
			}
			return u.one
		}
	}
	return strconv.Itoa(int(d.Round(time.Second)/time.Second)) + " s"
}

// oaSecuritySchemes are the ways to authenticate that the section's
// operations, and those of the resource servers, name.
func (s *Server) oaSecuritySchemes() map[string]*openapi.SecurityScheme {
	base, p := strings.TrimSuffix(s.Issuer, "/"), s.paths()
	describe := s.DescribeScope
	if describe == nil {
		describe = DescribeScope
	}
	scopes := func(identity bool) map[string]string {
		m := map[string]string{}
		for _, sc := range s.ScopesSupported {
			m[sc] = describe(sc)
		}
		if identity && s.OpenID() {
			for _, sc := range identityScopes {
				m[sc] = "OpenID Connect: " + describe(sc)
			}
		}
		return m
	}
	return map[string]*openapi.SecurityScheme{
		oaSchemeOAuth2: {
			Type: "oauth2",
			Description: "OAuth 2.1 access tokens (JWTs typed `at+jwt`, signed with HS256, or with ES256 or EdDSA whose public keys `" + p.JWKS + "` publishes; valid " + strconv.Itoa(int(s.ttl(s.AccessTokenTTL, DefaultAccessTokenTTL)/time.Second)) + " s), sent as `Authorization: Bearer <token>`. " +
				"The authorization-code flow requires PKCE with S256 (`plain` is refused) and an exact redirect URI; its token sees every branch of the organization the user chose at consent. " +
				"A client-credentials token sees the branches its app lists (`oauth_branch_ids`).",
			Flows: &openapi.OAuthFlows{
				AuthorizationCode: &openapi.OAuthFlow{AuthorizationURL: base + p.Authorize, TokenURL: base + p.Token, RefreshURL: base + p.Token, Scopes: scopes(true)},
				ClientCredentials: &openapi.OAuthFlow{TokenURL: base + p.Token, Scopes: scopes(false)},
			},
		},
		oaSchemeUserToken: {
			Type: "http", Scheme: "bearer", BearerFormat: "JWT",
			Description: "A product user token from `POST " + p.UserToken + "?grant_type=password`: a JWT without `oauth_client_id`. App registration and secret rotation take it; the resource API answers it with 403 `invalid_token_type`.",
		},
		oaSchemeRegistration: {
			Type: "http", Scheme: "bearer",
			Description: "Dynamic Client Registration's Bearer tokens: an initial access token (from the server's operator) to register a client when registration needs one, and the registration access token the registration answered, to read, update or delete that registration.",
		},
		oaSchemeClientBasic: {
			Type: "http", Scheme: "basic",
			Description: "Client authentication by HTTP Basic with the client id and secret, each form-urlencoded before base64 (RFC 6749 section 2.3.1). A client may instead send `client_id` and `client_secret` in the body, but not both ways at once.",
		},
	}
}

func oaClientFields() []openapi.Property {
	return []openapi.Property{
		openapi.Prop("client_id", openapi.String("The client id, when the client authenticates in the body rather than by HTTP Basic.")),
		openapi.Prop("client_secret", &openapi.Schema{Type: "string", WriteOnly: true, Description: "The client secret, with `client_id`, when the client authenticates in the body."}),
	}
}

// oaResourceDescription describes the resource parameter (RFC 8707).
const oaResourceDescription = "A resource indicator (RFC 8707): the `resource` of the API's protected resource metadata. " +
	"The access token's `aud` is then `[\"authenticated\", \"<resource>\"]` instead of `\"authenticated\"`. " +
	"Any other resource, or more than one, is `invalid_target`."

// oaResourceParam is the resource query parameter of the authorization
// request.
func oaResourceParam() *openapi.Parameter {
	return &openapi.Parameter{Name: "resource", In: "query", Description: oaResourceDescription + " The code keeps it for the tokens it is exchanged for.",
		Schema: &openapi.Schema{Type: "string", Format: "uri"}}
}

// oaResourceField is the resource field of a token request.
func oaResourceField(more string) openapi.Property {
	return openapi.Prop("resource", &openapi.Schema{Type: "string", Format: "uri", Description: oaResourceDescription + more})
}

func oaGrantType(value, description string) openapi.Property {
	return openapi.Prop("grant_type", &openapi.Schema{Type: "string", Const: value, Description: description})
}

// oaSchemas are the schema components of the token service's requests
// and responses.
func (s *Server) oaSchemas() map[string]*openapi.Schema {
	schemas := s.oaGrantSchemas()
	maps.Copy(schemas, oaAppSchemas())
	maps.Copy(schemas, oaTokenInfoSchemas())
	maps.Copy(schemas, oaRegistrationSchemas())
	return schemas
}

// oaGrantSchemas are the schema components of the grants and of the
// tokens they answer.
func (s *Server) oaGrantSchemas() map[string]*openapi.Schema {
	authCode := openapi.Object([]string{"grant_type", "code", "redirect_uri", "code_verifier"},
		append([]openapi.Property{
			oaGrantType("authorization_code", "Exchange an authorization code."),
			openapi.Prop("code", openapi.String("The authorization code from the redirect; single use, valid "+strconv.Itoa(int(s.ttl(s.CodeTTL, DefaultCodeTTL)/time.Second))+" s.")),
			openapi.Prop("redirect_uri", &openapi.Schema{Type: "string", Format: "uri", Description: "The redirect URI of the authorization request, exactly."}),
			openapi.Prop("code_verifier", &openapi.Schema{Type: "string", MinLength: openapi.Ptr(43), MaxLength: openapi.Ptr(128), Pattern: `^[A-Za-z0-9._~-]{43,128}$`,
				Description: "The PKCE verifier whose S256 challenge the authorization request sent."}),
			oaResourceField(" When the authorization request named a resource, only that one; without it, the tokens are for the authorization request's resource."),
		}, oaClientFields()...)...)
	authCode.Description = "The authorization-code grant. The client authenticates (HTTP Basic or `client_id` and `client_secret` in the body) before the code is looked at. A second use of a code fails and revokes every token issued from it."

	refresh := openapi.Object([]string{"grant_type", "refresh_token"},
		append([]openapi.Property{
			oaGrantType("refresh_token", "Rotate a refresh token."),
			openapi.Prop("refresh_token", openapi.String("The refresh token; single use. The response carries its successor. Reusing a spent one fails with `invalid_grant` and revokes its whole family.")),
			oaResourceField(" When the authorization named a resource, only that one; without it, the token is for the authorization's resource."),
		}, oaClientFields()...)...)
	refresh.Description = "The refresh-token grant. Client authentication is optional (the token is bound to its client); when the client authenticates, it must be the token's client."

	cc := openapi.Object([]string{"grant_type"},
		append([]openapi.Property{
			oaGrantType("client_credentials", "Issue a token to the app itself."),
			openapi.Prop("scope", openapi.String("Space-separated scopes: a subset of the app's scopes (default: all of them). A JSON body may send an array of strings instead.")),
			oaResourceField(""),
		}, oaClientFields()...)...)
	cc.Description = "The client-credentials grant: the client authenticates, by HTTP Basic or `client_id` and `client_secret` in the body."

	tokenRequest := &openapi.Schema{
		Description: "A token request: one of the three grants, by `grant_type`. Sent as `application/x-www-form-urlencoded` (RFC 6749) or as a JSON object of strings; each parameter at most once.",
		OneOf:       []*openapi.Schema{openapi.SchemaRef("AuthorizationCodeTokenRequest"), openapi.SchemaRef("RefreshTokenRequest"), openapi.SchemaRef("ClientCredentialsTokenRequest")},
		Discriminator: &openapi.Discriminator{PropertyName: "grant_type", Mapping: map[string]string{
			"authorization_code": openapi.Ref("schemas", "AuthorizationCodeTokenRequest"),
			"refresh_token":      openapi.Ref("schemas", "RefreshTokenRequest"),
			"client_credentials": openapi.Ref("schemas", "ClientCredentialsTokenRequest"),
		}},
	}

	tokenResponse := openapi.Object([]string{"access_token", "token_type", "expires_in", "scope"},
		openapi.Prop("access_token", openapi.String("The access token: a JWT typed `at+jwt` for `Authorization: Bearer`.")),
		openapi.Prop("token_type", &openapi.Schema{Type: "string", Enum: []any{"bearer"}, Description: "Always `bearer`."}),
		openapi.Prop("expires_in", &openapi.Schema{Type: "integer", Format: "int32", Minimum: openapi.Ptr(1.0), Description: "Seconds until the access token expires.", Examples: []any{int(s.ttl(s.AccessTokenTTL, DefaultAccessTokenTTL) / time.Second)}}),
		openapi.Prop("refresh_token", openapi.String("The new refresh token (authorization-code and refresh-token grants only): opaque, single use, valid "+inWords(s.ttl(s.RefreshTokenTTL, DefaultRefreshTokenTTL))+".")),
		openapi.Prop("scope", openapi.String("The granted scopes, space-separated.")),
		openapi.Prop("id_token", openapi.String("The OpenID Connect id token (authorization-code grant with the `openid` scope only): a JWT typed `JWT`, signed like the access tokens (verify it against `jwks_uri`), "+
			"with `iss`, `sub` (the user), `aud` (the client id), `exp`, `iat`, `auth_time`, `nonce` when the authorization request sent one, `at_hash`, and `email` with the `email` scope and `name` with `profile` when the server knows them. A refresh answers none.")),
		openapi.Prop("organization_id", &openapi.Schema{Type: "string", Format: "uuid", Description: "The app's organization (client-credentials grant only)."}),
		openapi.Prop("branch_ids", &openapi.Schema{Type: "array", Items: &openapi.Schema{Type: "string", Format: "uuid"}, Description: "The branches the token may use (client-credentials grant only)."}))
	tokenResponse.Description = "A token response (RFC 6749 section 5.1)."

	userTokenRequest := openapi.Object([]string{"email", "password"},
		openapi.Prop("email", &openapi.Schema{Type: "string", Format: "email", Description: "The user's email."}),
		openapi.Prop("password", &openapi.Schema{Type: "string", WriteOnly: true, Description: "The user's password."}))
	userTokenRequest.Description = "A product user sign-in."

	userTokenResponse := openapi.Object([]string{"access_token", "token_type", "expires_in"},
		openapi.Prop("access_token", openapi.String("The product user token: a JWT without `oauth_client_id`.")),
		openapi.Prop("token_type", &openapi.Schema{Type: "string", Enum: []any{"bearer"}, Description: "Always `bearer`."}),
		openapi.Prop("expires_in", &openapi.Schema{Type: "integer", Format: "int32", Minimum: openapi.Ptr(1.0), Description: "Seconds until the token expires."}))
	userTokenResponse.Description = "A product user token."

	return map[string]*openapi.Schema{
		"AuthorizationCodeTokenRequest": authCode,
		"RefreshTokenRequest":           refresh,
		"ClientCredentialsTokenRequest": cc,
		"TokenRequest":                  tokenRequest,
		"TokenResponse":                 tokenResponse,
		"UserTokenRequest":              userTokenRequest,
		"UserTokenResponse":             userTokenResponse,
	}
}

// oaUUIDs is an array of UUIDs.
func oaUUIDs(description string) *openapi.Schema {
	return &openapi.Schema{Type: "array", Items: &openapi.Schema{Type: "string", Format: "uuid"}, Description: description}
}

// oaAppSchemas are the schema components of app registration and secret
// rotation.
func oaAppSchemas() map[string]*openapi.Schema {
	appRegistration := openapi.Object([]string{"organization_id", "name", "scopes"},
		openapi.Prop("organization_id", &openapi.Schema{Type: "string", Format: "uuid", Description: "The organization the app belongs to; the user must administer it."}),
		openapi.Prop("name", &openapi.Schema{Type: "string", MinLength: openapi.Ptr(1), MaxLength: openapi.Ptr(200), Description: "The app's name, shown at consent; at most 200 bytes."}),
		openapi.Prop("scopes", &openapi.Schema{Type: "array", MinItems: openapi.Ptr(1), Items: &openapi.Schema{Type: "string"}, Description: "The scopes the app may ask for, e.g. `svc:quotations:read`."}),
		openapi.Prop("branch_ids", oaUUIDs("The branches a client-credentials token of the app may use; each a branch of the organization.")),
		openapi.Prop("redirect_uris", &openapi.Schema{Type: "array", Items: &openapi.Schema{Type: "string", Format: "uri"}, Description: "The redirect URIs of the authorization-code flow, matched exactly: `https://...`, `http://` on a loopback host (127.0.0.1, [::1], localhost; RFC 8252), or a private-use scheme in reverse-domain form with one slash (`com.example.app:/callback`); never a fragment, user information or a wildcard."}),
		openapi.Prop("token_endpoint_auth_method", &openapi.Schema{Type: "string", Enum: []any{"client_secret_basic", "client_secret_post", "none"},
			Description: "`none` registers a public client (a desktop or mobile app, an agent): no secret, the authorization-code grant with PKCE and refresh only, no `branch_ids`, at least one redirect URI; it may not introspect. Default: a confidential client with a secret."}))
	appRegistration.AdditionalProperties = openapi.Ptr(false)
	appRegistration.Description = "An app to register."

	appResponse := openapi.Object([]string{"client_id", "token_endpoint_auth_method"},
		openapi.Prop("client_id", openapi.String("The app's client id.")),
		openapi.Prop("client_secret", openapi.String("The client secret, shown this once: only its hash is kept. A public client has none.")),
		openapi.Prop("token_endpoint_auth_method", &openapi.Schema{Type: "string", Enum: []any{"client_secret_basic", "none"},
			Description: "`none` for a public client, which sends its `client_id` alone; `client_secret_basic` for a confidential one (which may send `client_secret` in the body instead)."}),
		openapi.Prop("app_id", &openapi.Schema{Type: "string", Format: "uuid", Description: "The app's id (registration only)."}),
		openapi.Prop("name", openapi.String("The app's name (registration only).")),
		openapi.Prop("organization_id", &openapi.Schema{Type: "string", Format: "uuid", Description: "The app's organization (registration only)."}),
		openapi.Prop("scopes", &openapi.Schema{Type: "array", Items: &openapi.Schema{Type: "string"}, Description: "The app's scopes (registration only)."}),
		openapi.Prop("branch_ids", oaUUIDs("The app's branches (registration only).")),
		openapi.Prop("redirect_uris", &openapi.Schema{Type: "array", Items: &openapi.Schema{Type: "string", Format: "uri"}, Description: "The app's redirect URIs (registration only)."}))
	appResponse.Description = "An app's credentials and registration."

	rotation := openapi.Object(nil, openapi.Prop("revoke_tokens", &openapi.Schema{Type: "boolean",
		Description: "Also revoke every refresh token of the app and the access tokens issued from them (authorization-code tokens fail at once). Client-credentials access tokens cannot be revoked: they stay valid until they expire. Default false."}))
	rotation.AdditionalProperties = openapi.Ptr(false)
	rotation.Description = "Options of a secret rotation; the body may also be empty."

	rotated := openapi.Object([]string{"client_id", "client_secret", "tokens_revoked", "revoked_families", "access_tokens_valid_until", "tokens"},
		openapi.Prop("client_id", openapi.String("The app's client id.")),
		openapi.Prop("client_secret", openapi.String("The new client secret, shown this once: only its hash is kept. The old one no longer authenticates.")),
		openapi.Prop("tokens_revoked", &openapi.Schema{Type: "boolean", Description: "Whether the app's refresh tokens and authorization-code access tokens were revoked (`revoke_tokens`)."}),
		openapi.Prop("revoked_families", &openapi.Schema{Type: "integer", Format: "int64", Minimum: openapi.Ptr(0.0), Description: "How many authorizations (refresh token families) were revoked."}),
		openapi.Prop("access_tokens_valid_until", &openapi.Schema{Type: "string", Format: "date-time", Description: "When the last access token issued before the rotation that still works expires: client-credentials tokens always, authorization-code tokens unless revoked."}),
		openapi.Prop("tokens", openapi.String("What became of the app's tokens, in words.")))
	rotated.Description = "A secret rotation: the new secret and what became of the tokens issued before."

	return map[string]*openapi.Schema{
		"AppRegistration":       appRegistration,
		"AppResponse":           appResponse,
		"SecretRotationRequest": rotation,
		"SecretRotation":        rotated,
	}
}

// oaTokenInfoSchemas are the schema components of revocation,
// introspection, the metadata and the key set.
func oaTokenInfoSchemas() map[string]*openapi.Schema {
	tokenParam := func(what string) *openapi.Schema {
		s := openapi.Object([]string{"token"},
			append([]openapi.Property{
				openapi.Prop("token", openapi.String(what)),
				openapi.Prop("token_type_hint", &openapi.Schema{Type: "string", Enum: []any{"access_token", "refresh_token"}, Description: "Accepted and ignored: the server finds the kind itself."}),
			}, oaClientFields()...)...)
		return s
	}
	revocation := tokenParam("The refresh token, or authorization-code access token, to revoke with its whole family. A client-credentials access token cannot be revoked.")
	revocation.Description = "An RFC 7009 revocation request; the client authenticates."
	introspectionRequest := tokenParam("The access or refresh token to describe.")
	introspectionRequest.Description = "An RFC 7662 introspection request; the client (a resource server's app) authenticates."

	introspection := openapi.Object([]string{"active"},
		openapi.Prop("active", &openapi.Schema{Type: "boolean", Description: "Whether the token is valid now. The other fields are present only for an active token."}),
		openapi.Prop("scope", openapi.String("The token's scopes, space-separated.")),
		openapi.Prop("client_id", openapi.String("The client the token was issued to.")),
		openapi.Prop("sub", openapi.String("The user (authorization code) or the app (client credentials).")),
		openapi.Prop("token_type", &openapi.Schema{Type: "string", Enum: []any{"bearer", "refresh_token"}, Description: "`bearer` for an access token (as in the token answer), `refresh_token` for a refresh token."}),
		openapi.Prop("exp", &openapi.Schema{Type: "integer", Format: "int64", Description: "Expiry, in seconds since 1970."}),
		openapi.Prop("iat", &openapi.Schema{Type: "integer", Format: "int64", Description: "Issue time, in seconds since 1970 (access tokens)."}),
		openapi.Prop("iss", openapi.String("The issuer (access tokens).")),
		openapi.Prop("aud", &openapi.Schema{Description: "The audience (access tokens): `authenticated`, or `[\"authenticated\", \"<resource>\"]` for a token issued for a resource indicator.",
			OneOf: []*openapi.Schema{{Type: "string"}, {Type: "array", Items: &openapi.Schema{Type: "string"}, MinItems: openapi.Ptr(2), MaxItems: openapi.Ptr(2)}}}),
		openapi.Prop("jti", openapi.String("The token's id (access tokens).")),
		openapi.Prop("organization_id", &openapi.Schema{Type: "string", Format: "uuid", Description: "The organization the token acts in."}),
		openapi.Prop("branch_ids", oaUUIDs("The branches a client-credentials token may use.")))
	introspection.Description = "An RFC 7662 introspection response. A product user token is inactive here."

	strs := func(description string) *openapi.Schema {
		return &openapi.Schema{Type: "array", Items: &openapi.Schema{Type: "string"}, Description: description}
	}
	uri := func(description string) *openapi.Schema {
		return &openapi.Schema{Type: "string", Format: "uri", Description: description}
	}
	metadata := openapi.Object([]string{"issuer", "authorization_endpoint", "token_endpoint", "response_types_supported"},
		openapi.Prop("issuer", uri("The issuer URL.")),
		openapi.Prop("authorization_endpoint", uri("The authorization endpoint.")),
		openapi.Prop("token_endpoint", uri("The token endpoint.")),
		openapi.Prop("revocation_endpoint", uri("The RFC 7009 revocation endpoint.")),
		openapi.Prop("introspection_endpoint", uri("The RFC 7662 introspection endpoint.")),
		openapi.Prop("response_types_supported", strs("`code`.")),
		openapi.Prop("response_modes_supported", strs("`query`.")),
		openapi.Prop("grant_types_supported", strs("`authorization_code`, `refresh_token`, `client_credentials`.")),
		openapi.Prop("code_challenge_methods_supported", strs("`S256`.")),
		openapi.Prop("authorization_response_iss_parameter_supported", &openapi.Schema{Type: "boolean", Description: "True: the authorization response carries `iss` (RFC 9207)."}),
		openapi.Prop("token_endpoint_auth_methods_supported", strs("`client_secret_basic`, `client_secret_post`, and `none` for public clients (their `client_id` alone, with PKCE).")),
		openapi.Prop("revocation_endpoint_auth_methods_supported", strs("`client_secret_basic`, `client_secret_post`, and `none` for public clients, which revoke their own tokens by `client_id`.")),
		openapi.Prop("introspection_endpoint_auth_methods_supported", strs("`client_secret_basic`, `client_secret_post`.")),
		openapi.Prop("jwks_uri", uri("The JSON Web Key Set of the public signing keys; only when tokens are signed with ES256 or EdDSA.")),
		openapi.Prop("registration_endpoint", uri("The Dynamic Client Registration endpoint (RFC 7591); only when the server offers registration.")),
		openapi.Prop("scopes_supported", strs("The scopes of the API, and the OpenID Connect scopes `openid`, `profile` and `email` when tokens are signed with ES256 or EdDSA.")),
		openapi.Prop("userinfo_endpoint", uri("The OpenID Connect UserInfo endpoint; only when tokens are signed with ES256 or EdDSA, as are the fields below.")),
		openapi.Prop("id_token_signing_alg_values_supported", strs("The algorithm of the id tokens: `ES256` or `EdDSA`, that of the signing key.")),
		openapi.Prop("subject_types_supported", strs("`public`: `sub` is the user's id.")),
		openapi.Prop("claims_supported", strs("The claims an id token or UserInfo answer may carry.")),
		openapi.Prop("prompt_values_supported", strs("`none`, `login`, `consent`, `select_account`.")),
		openapi.Prop("claims_parameter_supported", &openapi.Schema{Type: "boolean", Description: "False."}),
		openapi.Prop("request_parameter_supported", &openapi.Schema{Type: "boolean", Description: "False."}),
		openapi.Prop("request_uri_parameter_supported", &openapi.Schema{Type: "boolean", Description: "False."}),
		openapi.Prop("client_id_metadata_document_supported", &openapi.Schema{Type: "boolean", Description: "True when the server takes a `client_id` that is the https URL of a client metadata document (OAuth Client ID Metadata Document): a public client, `token_endpoint_auth_method` `none`; absent otherwise."}))
	metadata.Description = "RFC 8414 authorization server metadata; when tokens are signed with ES256 or EdDSA, also the OpenID Connect discovery document (OpenID Connect Discovery 1.0)."

	userInfo := openapi.Object([]string{"sub"},
		openapi.Prop("sub", openapi.String("The user's id, the `sub` of the id token.")),
		openapi.Prop("email", &openapi.Schema{Type: "string", Format: "email", Description: "The user's email (the `email` scope)."}),
		openapi.Prop("email_verified", &openapi.Schema{Type: "boolean", Description: "Whether the email was verified, when the server knows it (the `email` scope)."}),
		openapi.Prop("name", openapi.String("The user's name, when the server knows one (the `profile` scope).")))
	userInfo.Description = "An OpenID Connect UserInfo answer (OpenID Connect Core section 5.3.2)."
	str := func(description string) *openapi.Schema {
		return &openapi.Schema{Type: "string", Description: description}
	}
	jwk := openapi.Object([]string{"kty", "crv", "x", "kid", "alg", "use"},
		openapi.Prop("kty", str("`EC` (ES256) or `OKP` (EdDSA).")),
		openapi.Prop("crv", str("`P-256` or `Ed25519`.")),
		openapi.Prop("x", str("The x coordinate (EC) or the public key (OKP), base64url.")),
		openapi.Prop("y", str("The y coordinate of an EC key, base64url.")),
		openapi.Prop("kid", str("The key id, the `kid` header of the tokens it signs.")),
		openapi.Prop("alg", str("`ES256` or `EdDSA`: the only algorithm accepted for the key.")),
		openapi.Prop("use", str("`sig`.")))
	jwks := openapi.Object([]string{"keys"}, openapi.Prop("keys", &openapi.Schema{Type: "array", Items: jwk}))
	jwks.Description = "RFC 7517 JSON Web Key Set."

	return map[string]*openapi.Schema{
		"TokenRevocationRequest":      revocation,
		"TokenIntrospectionRequest":   introspectionRequest,
		"TokenIntrospection":          introspection,
		"AuthorizationServerMetadata": metadata,
		"UserInfo":                    userInfo,
		"JSONWebKeySet":               jwks,
	}
}

// oaClientAuth is the security of an endpoint where the client
// authenticates by HTTP Basic or in the body (the empty requirement).
func oaClientAuth() []openapi.SecurityRequirement {
	return []openapi.SecurityRequirement{{oaSchemeClientBasic: {}}, {}}
}

func oaInvalidClient() *openapi.Response {
	return openapi.WithHeaders(openapi.ErrorResponse("`invalid_client`: client authentication failed (unknown client, wrong secret, malformed Basic credentials, or none where required). `WWW-Authenticate` names the scheme the client tried (Basic by default).",
		oaErr(apierrors.CodeInvalidClient, "client authentication failed")), "WWW-Authenticate")
}

func oaTokenSuccess(description, schema string) *openapi.Response {
	r := &openapi.Response{Description: description, Content: openapi.JSON(openapi.SchemaRef(schema))}
	return openapi.WithHeaders(r, "Cache-Control")
}
