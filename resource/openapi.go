package resource

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"net/http"
	"strings"
	"sync"
	"time"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/openapi"
)

// This file has the entry points of the OpenAPI document and its builder.
// What the document says is split by topic: openapi_operations.go (the
// paths and operations of a resource), openapi_responses.go,
// openapi_params.go (paging, sort, filter), openapi_schemas.go,
// openapi_security.go (the security scheme and scopes) and
// openapi_description.go (info.description). The shapes are package
// openapi's.

// OpenAPIInfo is what an OpenAPI document says about the API as a whole.
// Every field has a useful zero value.
type OpenAPIInfo struct {
	// Title is info.title ("" means "Waybill API").
	Title string
	// Version is info.version, the version of the document ("" means
	// "v1", the API version every envelope carries).
	Version string
	// Description opens info.description ("" means a one-paragraph
	// introduction). The document appends to it what every API of a
	// Registry shares: the path aliases, the tenancy model, the scopes,
	// the list parameters, the errors and the rate limit headers.
	Description string
	// ServerURL is the base URL of the server, the OAuth issuer, e.g.
	// "https://tms.example.com", without a trailing slash ("" means "/":
	// the server that serves the document).
	ServerURL string
	// TokenURL is the OAuth token endpoint of the security scheme (""
	// means ServerURL + "/auth/v1/oauth/token"). It is also the refreshUrl
	// of the authorization-code flow.
	TokenURL string
	// AuthorizationURL is the OAuth authorization endpoint of the security
	// scheme ("" means ServerURL + "/auth/v1/oauth/authorize").
	AuthorizationURL string
	// Sections describe other endpoints of the server, merged into the
	// document (see openapi.Document.Merge): above all the token service's,
	// oauth.Server.OpenAPI. A section that declares the security scheme
	// "oauth2", as the token service's does, gives the document that
	// scheme's flows and description, to which the registry adds its
	// scopes; TokenURL and AuthorizationURL are then not used. Merging
	// fails, and so does the document, when a section describes a path or
	// an operationId twice, or names a component or tag as the document
	// does with another content.
	Sections []*openapi.Document
}

// The token service's default paths (package oauth's PathToken and
// PathAuthorize), for the security scheme of a document that no section of
// the token service describes. The resource package does not import oauth;
// a test checks that these agree.
const (
	oauthPathAuthorize = "/auth/v1/oauth/authorize"
	oauthPathToken     = "/auth/v1/oauth/token"
)

// schemeOAuth2 is the name of the security scheme of the OAuth access
// tokens, which every operation names.
const schemeOAuth2 = "oauth2"

func (info OpenAPIInfo) withDefaults() OpenAPIInfo {
	if info.Title == "" {
		info.Title = "Waybill API"
	}
	if info.Version == "" {
		info.Version = Version
	}
	base := strings.TrimSuffix(info.ServerURL, "/")
	info.ServerURL = base
	if base == "" {
		info.ServerURL = "/"
	}
	if info.TokenURL == "" {
		info.TokenURL = base + oauthPathToken
	}
	if info.AuthorizationURL == "" {
		info.AuthorizationURL = base + oauthPathAuthorize
	}
	return info
}

// OpenAPI returns an OpenAPI 3.1.0 document, as indented JSON, of every
// registered resource, with the sections of info merged in (the endpoints
// of the OAuth token service that issues their tokens, say).
//
// Each resource gets its list and get operations, and, unless it is
// read-only, create, update and delete, under the first path prefix (/v1);
// info.description says that the other prefixes (/api/v1) are aliases.
// Each resource has a Partial record schema (every field a response
// carries, the tenant columns included, of which only id is required: what
// the GETs answer, since fields= leaves the others out) and its list and
// item envelopes; a resource that is not read-only also has the whole
// record (the same fields, every one required: what writes answer), its
// envelope, and a Create and an Update schema (the fields a client may
// send). Every operation names the scope it needs and every error it can
// answer with, 503 temporarily_unavailable included.
//
// The document depends only on the declarations: it needs no database, and
// the same registry and info always give the same bytes. It is an error
// when two resources would share an operationId or a schema name, or when
// a section does not merge.
func (g *Registry) OpenAPI(info OpenAPIInfo) ([]byte, error) {
	b := &openAPIBuilder{g: g, info: info.withDefaults(), operationIDs: map[string]bool{}}
	doc, err := b.build()
	if err != nil {
		return nil, err
	}
	raw, err := openapi.Marshal(doc)
	if err != nil {
		return nil, fmt.Errorf("resource: %w", err)
	}
	return raw, nil
}

// OpenAPIHandler returns a handler that serves the document of OpenAPI as
// application/json, with an ETag, to GET and HEAD (other methods get 405).
// The document is built at the first request and kept: register every
// resource before serving. The handler is safe for concurrent use.
//
//	mux.Handle("GET /openapi.json", registry.OpenAPIHandler(resource.OpenAPIInfo{ServerURL: issuer}))
func (g *Registry) OpenAPIHandler(info OpenAPIInfo) http.Handler {
	var (
		once sync.Once
		body []byte
		etag string
		err  error
	)
	notAllowed := apierrors.MethodNotAllowed(http.MethodGet, http.MethodHead)
	return g.ErrorWriter().Handle(func(w http.ResponseWriter, r *http.Request) error {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			return notAllowed
		}
		once.Do(func() {
			body, err = g.OpenAPI(info)
			sum := sha256.Sum256(body)
			etag = `"` + hex.EncodeToString(sum[:12]) + `"`
		})
		if err != nil {
			return apierrors.Internal(err)
		}
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Etag", etag)
		h.Set("Cache-Control", "no-cache")
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
		return nil
	})
}

// openAPIBuilder builds the document of one registry.
type openAPIBuilder struct {
	g            *Registry
	info         OpenAPIInfo
	doc          openapi.Document
	operationIDs map[string]bool
}

func (b *openAPIBuilder) build() (*openapi.Document, error) {
	b.doc = openapi.Document{
		OpenAPI: openapi.Version,
		Info:    openapi.Info{Title: b.info.Title, Version: b.info.Version, Description: b.description()},
		Servers: []openapi.Server{{URL: b.info.ServerURL, Description: "The API server, which is also the OAuth issuer."}},
		Paths:   map[string]*openapi.PathItem{},
		Components: openapi.Components{
			Schemas:         map[string]*openapi.Schema{},
			Responses:       map[string]*openapi.Response{},
			Headers:         oaHeaders(),
			SecuritySchemes: b.securitySchemes(),
		},
	}
	b.addSchema("Error", openapi.ErrorSchema())
	b.addSchema("Pagination", oaPagination())
	if len(b.g.prefixes()) > 0 {
		for _, r := range b.g.resources {
			if err := b.addResource(r); err != nil {
				return nil, err
			}
		}
	}
	if err := b.addSections(); err != nil {
		return nil, err
	}
	return &b.doc, nil
}

func (b *openAPIBuilder) addSchema(name string, s *openapi.Schema) error {
	if _, ok := b.doc.Components.Schemas[name]; ok {
		return fmt.Errorf("resource: openapi: two schemas are named %s", name)
	}
	b.doc.Components.Schemas[name] = s
	return nil
}

func (b *openAPIBuilder) addPath(path string, item *openapi.PathItem) error {
	if _, ok := b.doc.Paths[path]; ok {
		return fmt.Errorf("resource: openapi: path %s is described twice", path)
	}
	for _, op := range item.Operations() {
		if op == nil {
			continue
		}
		if b.operationIDs[op.OperationID] {
			return fmt.Errorf("resource: openapi: two operations have the operationId %s", op.OperationID)
		}
		b.operationIDs[op.OperationID] = true
	}
	b.doc.Paths[path] = item
	return nil
}

// shared returns a reference to the response component name, which build
// makes the first time: the responses every operation shares are written
// once.
func (b *openAPIBuilder) shared(name string, build func() *openapi.Response) *openapi.Response {
	if _, ok := b.doc.Components.Responses[name]; !ok {
		b.doc.Components.Responses[name] = build()
	}
	return &openapi.Response{Ref: openapi.Ref("responses", name)}
}

// addSections merges the sections of the info into the document; their
// oauth2 security scheme is the document's already (see securitySchemes).
func (b *openAPIBuilder) addSections() error {
	for _, sec := range b.info.Sections {
		s := *sec
		s.Components.SecuritySchemes = maps.Clone(sec.Components.SecuritySchemes)
		delete(s.Components.SecuritySchemes, schemeOAuth2)
		if err := b.doc.Merge(&s); err != nil {
			return fmt.Errorf("resource: %w", err)
		}
	}
	return nil
}
