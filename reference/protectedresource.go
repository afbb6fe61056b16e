package main

import (
	"net/http"
	"net/url"
	"strings"

	"github.com/waybillhq/waybill/protectedresource"
)

// The protected resource metadata (RFC 9728) of the API. Its resource
// identifier is the issuer, the server's base URL: one server is both the
// authorization server and the resource server, and the API answers under
// two prefixes (/v1, /api/v1) of that one origin. With an issuer without a
// path the document is at /.well-known/oauth-protected-resource.

// resourceMetadataURL returns the URL of the API's metadata for the issuer,
// which every Bearer challenge of the API names; "" for none (no issuer,
// as in the tests that build an API without a server).
func resourceMetadataURL(issuer string) string {
	if issuer == "" {
		return ""
	}
	u, err := protectedresource.MetadataURL(strings.TrimSuffix(issuer, "/"))
	if err != nil {
		return "" // checkIssuer refuses such an issuer before the server starts
	}
	return u
}

// protectedResourceMetadata returns the API's metadata for the issuer: the
// server is its authorization server, the scopes are those of its
// resources, tokens go in the Authorization header only, and the OpenAPI
// document is its documentation. jwksURI, when not empty, is the key set
// of the API's own signatures (RFC 9728's jwks_uri; the keys of the tokens
// are in the authorization server's metadata).
func protectedResourceMetadata(issuer, jwksURI string) protectedresource.Metadata {
	base := apiResource(issuer)
	return protectedresource.Metadata{
		Resource:               base,
		AuthorizationServers:   []string{issuer},
		JWKSURI:                jwksURI,
		ScopesSupported:        knownScopes(),
		BearerMethodsSupported: []string{"header"},
		ResourceName:           "Waybill TMS API",
		ResourceDocumentation:  base + pathOpenAPI,
	}
}

// apiResource is the API's resource identifier for the issuer: the
// resource of its protected resource metadata, the one resource indicator
// (RFC 8707) the token service issues tokens for, and the second aud of
// such tokens, which the API's verifier checks.
func apiResource(issuer string) string { return strings.TrimSuffix(issuer, "/") }

// pathOpenAPI is the path of the API's OpenAPI document.
const pathOpenAPI = "/v1/openapi.json"

// protectedResourcePath returns the path of resourceMetadataURL, where the
// server answers it: protectedresource.WellKnownPath for an issuer without
// a path. The OpenAPI document leaves the endpoint out, as it does
// /healthz: a client finds it through the challenges, not the document.
func protectedResourcePath(issuer string) string {
	u, err := url.Parse(resourceMetadataURL(issuer))
	if err != nil || u.Path == "" {
		return protectedresource.WellKnownPath
	}
	return u.Path
}

// mountProtectedResource serves the API's metadata for the issuer on mux,
// at protectedResourcePath. It mounts nothing without an issuer.
func mountProtectedResource(mux *http.ServeMux, issuer string) {
	if resourceMetadataURL(issuer) == "" {
		return
	}
	mux.Handle(protectedResourcePath(issuer), protectedresource.Handler(protectedResourceMetadata(issuer, "")))
}
