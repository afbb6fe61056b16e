// Package protectedresource publishes the OAuth 2.0 protected resource
// metadata of RFC 9728: a JSON document at a well-known URL that tells a
// client which authorization servers issue tokens for an API, which scopes
// it knows and how it takes a token. An API points to the document from
// the resource_metadata parameter of its WWW-Authenticate challenges (see
// the ResourceMetadata field of errors.Writer and tenancy.Options), so
// that a client refused with a 401 learns where to get a token.
//
//	m := protectedresource.Metadata{
//		Resource:             "https://api.example.com",
//		AuthorizationServers: []string{"https://api.example.com"},
//		ScopesSupported:      []string{"svc:orders:read"},
//	}
//	u, _ := protectedresource.MetadataURL(m.Resource)
//	// u is https://api.example.com/.well-known/oauth-protected-resource
//	mux.Handle(protectedresource.WellKnownPath, protectedresource.Handler(m))
package protectedresource

import (
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"strings"

	apierrors "github.com/waybillhq/waybill/errors"
)

// WellKnownPath is the well-known path of the metadata (RFC 9728 section
// 3): the whole path for a resource identifier without a path, the part
// inserted before its path otherwise (see MetadataURL).
const WellKnownPath = "/.well-known/oauth-protected-resource"

// CacheControl is the Cache-Control of the document Handler serves: the
// metadata changes with the server's configuration only.
const CacheControl = "public, max-age=300"

// Metadata is the protected resource metadata of RFC 9728 section 2. Its
// fields are named after the RFC's parameters; empty ones are left out of
// the document.
type Metadata struct {
	// Resource is the resource identifier of the API (required): an
	// absolute https URL without a fragment (http for development). The
	// document must be served at MetadataURL(Resource).
	Resource string `json:"resource"`
	// AuthorizationServers are the issuer identifiers (RFC 8414) of the
	// authorization servers whose tokens the API takes.
	AuthorizationServers []string `json:"authorization_servers,omitempty"`
	// JWKSURI is the URL of the API's own JSON Web Key Set, for an API
	// that signs its responses or takes encrypted requests; not the
	// authorization server's, which its RFC 8414 metadata gives.
	JWKSURI string `json:"jwks_uri,omitempty"`
	// ScopesSupported are the scope values the API uses in requests for
	// tokens to reach it.
	ScopesSupported []string `json:"scopes_supported,omitempty"`
	// BearerMethodsSupported are the ways the API takes a bearer token
	// (RFC 6750): "header", "body", "query".
	BearerMethodsSupported []string `json:"bearer_methods_supported,omitempty"`
	// ResourceName is the API's name, for people.
	ResourceName string `json:"resource_name,omitempty"`
	// ResourceDocumentation is the URL of the API's documentation for
	// developers.
	ResourceDocumentation string `json:"resource_documentation,omitempty"`
}

// ErrInvalidResource is wrapped by the error of MetadataURL for a resource
// identifier that is not an absolute http(s) URL without a query or a
// fragment.
var ErrInvalidResource = errors.New("protectedresource: the resource identifier must be an absolute http(s) URL without a query or fragment")

// MetadataURL returns the URL of the metadata of the resource identifier
// resource, as RFC 9728 section 3.1 forms it: WellKnownPath inserted
// between the host and the path, with the path's trailing slash removed.
// https://api.example.com gives
// https://api.example.com/.well-known/oauth-protected-resource;
// https://example.com/api/v1 gives
// https://example.com/.well-known/oauth-protected-resource/api/v1.
func MetadataURL(resource string) (string, error) {
	u, err := url.Parse(resource)
	if err != nil || (u.Scheme != "https" && u.Scheme != "http") || u.Host == "" || u.User != nil ||
		u.RawQuery != "" || u.ForceQuery || u.Fragment != "" || strings.Contains(resource, "#") {
		return "", fmt.Errorf("%w: %q", ErrInvalidResource, resource)
	}
	path := strings.TrimSuffix(u.EscapedPath(), "/")
	return u.Scheme + "://" + u.Host + WellKnownPath + path, nil
}

// Handler returns the handler of the document m: GET and HEAD get it as
// JSON with Cache-Control CacheControl, any other method 405 with Allow.
// The document is encoded once, here.
func Handler(m Metadata) http.Handler {
	body, err := json.Marshal(m)
	if err != nil {
		panic(err) // strings and slices of strings always encode
	}
	body = append(body, '\n')
	notAllowed := apierrors.MethodNotAllowed(http.MethodGet, http.MethodHead)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			apierrors.Write(w, r, notAllowed)
			return
		}
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Cache-Control", CacheControl)
		h.Set("X-Content-Type-Options", "nosniff")
		if r.Method == http.MethodHead {
			return
		}
		_, _ = w.Write(body)
	})
}
