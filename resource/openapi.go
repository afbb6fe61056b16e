package resource

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"maps"
	"net/http"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/openapi"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/tenancy"
)

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
// Each resource has a record schema (every field a response carries, the
// tenant columns included), a Create and an Update schema (the fields a
// client may send), and its list and item envelopes. Every operation names
// the scope it needs and every error it can answer with.
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
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			apierrors.Write(w, r, notAllowed)
			return
		}
		once.Do(func() {
			body, err = g.OpenAPI(info)
			sum := sha256.Sum256(body)
			etag = `"` + hex.EncodeToString(sum[:12]) + `"`
		})
		if err != nil {
			apierrors.Write(w, r, apierrors.Internal(err))
			return
		}
		h := w.Header()
		h.Set("Content-Type", "application/json")
		h.Set("Etag", etag)
		h.Set("Cache-Control", "no-cache")
		http.ServeContent(w, r, "", time.Time{}, bytes.NewReader(body))
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
		OpenAPI: "3.1.0",
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

// Names of a resource.

// oaSingular returns the singular of a resource name: quotations →
// quotation, branches → branch, categories → category; a name that does
// not end in s (master_data) is its own singular.
func oaSingular(name string) string {
	switch {
	case strings.HasSuffix(name, "ies") && len(name) > 3:
		return strings.TrimSuffix(name, "ies") + "y"
	case strings.HasSuffix(name, "sses"), strings.HasSuffix(name, "shes"), strings.HasSuffix(name, "ches"),
		strings.HasSuffix(name, "xes"), strings.HasSuffix(name, "zes"), strings.HasSuffix(name, "uses"):
		return strings.TrimSuffix(name, "es")
	case strings.HasSuffix(name, "ss"):
		return name
	case strings.HasSuffix(name, "s"):
		return strings.TrimSuffix(name, "s")
	}
	return name
}

// oaCamel returns a snake_case or kebab-case name in CamelCase.
func oaCamel(name string) string {
	var b strings.Builder
	for part := range strings.FieldsFuncSeq(name, func(r rune) bool { return r == '_' || r == '-' || r == '.' || r == ' ' }) {
		b.WriteString(strings.ToUpper(part[:1]))
		b.WriteString(part[1:])
	}
	return b.String()
}

// oaWords returns a name as words: master_data → master data.
func oaWords(name string) string { return strings.NewReplacer("_", " ", "-", " ").Replace(name) }

// oaNames holds what the document calls a resource.
type oaNames struct {
	plural   string // "quotations", "master data"
	one      string // "a quotation", "a master data record"
	single   string // "quotation", "master data"
	schema   string // "Quotation", "MasterData"
	listOp   string // "Quotations", "MasterData" for listQuotations
	singleOp string // "Quotation", "MasterData" for getQuotation
}

func oaNamesOf(r *Resource) oaNames {
	single := oaSingular(r.Name)
	n := oaNames{
		plural:   oaWords(r.Name),
		schema:   oaCamel(single),
		listOp:   oaCamel(r.Name),
		singleOp: oaCamel(single),
	}
	w := oaWords(single)
	n.single = w
	if single == r.Name {
		w += " record"
	}
	article := "a "
	if strings.ContainsRune("aeio", rune(w[0])) {
		article = "an "
	}
	n.one = article + w
	return n
}

// The resource paths.

func (b *openAPIBuilder) addResource(r *Resource) error {
	n := oaNamesOf(r)
	prefix := b.g.prefixes()[0]
	collection := prefix + "/{scopeId}/" + r.Name
	item := collection + "/{id}"

	for _, s := range []struct {
		name   string
		schema *openapi.Schema
	}{
		{n.schema, oaRecordSchema(b.g, r)},
		{n.schema + "ListEnvelope", oaListEnvelope(r, n)},
		{n.schema + "ItemEnvelope", oaItemEnvelope(n)},
	} {
		if err := b.addSchema(s.name, s.schema); err != nil {
			return fmt.Errorf("resource %s: %w", r.Name, err)
		}
	}
	if !r.ReadOnly {
		if err := b.addSchema(n.schema+"Create", oaWriteSchema(b.g, r, n, true)); err != nil {
			return fmt.Errorf("resource %s: %w", r.Name, err)
		}
		if err := b.addSchema(n.schema+"Update", oaWriteSchema(b.g, r, n, false)); err != nil {
			return fmt.Errorf("resource %s: %w", r.Name, err)
		}
	}
	b.doc.Tags = append(b.doc.Tags, openapi.Tag{Name: r.Name, Description: oaResourceDescription(r, n, collection)})

	scopeParam := &openapi.Parameter{
		Name: "scopeId", In: "path", Required: true, Description: oaScopeIDDescription(r.ScopeType),
		Schema: &openapi.Schema{Type: "string", Format: "uuid"},
	}
	idParam := &openapi.Parameter{
		Name: "id", In: "path", Required: true,
		Description: "The id of " + n.one + ". An id that is not a UUID, or of no " + oaWords(oaSingular(r.Name)) + " that `{scopeId}` sees, gives 404 `not_found`.",
		Schema:      &openapi.Schema{Type: "string", Format: "uuid"},
	}
	collectionItem := &openapi.PathItem{Parameters: []*openapi.Parameter{scopeParam}, Get: b.listOperation(r, n)}
	itemItem := &openapi.PathItem{Parameters: []*openapi.Parameter{scopeParam, idParam}, Get: b.getOperation(r, n)}
	if !r.ReadOnly {
		collectionItem.Post = b.createOperation(r, n)
		itemItem.Patch = b.updateOperation(r, n)
		itemItem.Delete = b.deleteOperation(r, n)
	}
	if err := b.addPath(collection, collectionItem); err != nil {
		return fmt.Errorf("resource %s: %w", r.Name, err)
	}
	if err := b.addPath(item, itemItem); err != nil {
		return fmt.Errorf("resource %s: %w", r.Name, err)
	}
	return nil
}

func oaResourceDescription(r *Resource, n oaNames, collection string) string {
	var parts []string
	if r.Description != "" {
		parts = append(parts, r.Description)
	} else {
		parts = append(parts, "The "+n.plural+" of the "+oaScopeNoun(r.ScopeType)+", at `"+collection+"`.")
	}
	parts = append(parts, "Scope type: "+r.ScopeType.String()+". "+oaScopeSentence(r.ScopeType, oaRead))
	if r.ReadOnly {
		parts = append(parts, oaReadOnly(n))
	}
	return strings.Join(parts, "\n\n")
}

func oaScopeNoun(t tenancy.ScopeType) string {
	if t == tenancy.Organization {
		return "organization"
	}
	return "branch"
}

func oaReadOnly(n oaNames) string {
	return "The " + n.plural + " are read-only: POST, PATCH and DELETE answer 405 `method_not_allowed` with an `Allow` header."
}

// oaAccess is what an operation does to records, for the sentences that
// depend on it.
type oaAccess int

const (
	oaRead   oaAccess = iota // list and get
	oaCreate                 // POST
	oaChange                 // PATCH and DELETE
)

// oaCoverAll says who may write an organization-scoped resource.
const oaCoverAll = "Creating, changing or deleting needs a token that covers every branch of the organization (else 403 `insufficient_scope`): the records are the whole organization's, so a client-credentials token whose `oauth_branch_ids` leave out a branch may read them but not change them."

// oaScopeSentence says what {scopeId} names for a scope type, and what a
// write of access a needs beyond the write scope.
func oaScopeSentence(t tenancy.ScopeType, a oaAccess) string {
	switch t {
	case tenancy.Organization:
		s := "`{scopeId}` is the organization's UUID: the token's `organization_id`."
		if a != oaRead {
			s += " " + oaCoverAll
		}
		return s
	case tenancy.Branch:
		return "`{scopeId}` is a branch UUID: a branch of the token's organization, and for a client-credentials token one of its `oauth_branch_ids`."
	}
	s := "`{scopeId}` is a branch UUID: a branch of the token's organization, and for a client-credentials token one of its `oauth_branch_ids`. " +
		"Lists and gets also return the organization-wide records of the organization (`branch_id` null); a create through a branch path belongs to that branch."
	if a == oaChange {
		s += " Changing or deleting an organization-wide record needs a token that covers every branch of the organization (else 403 `insufficient_scope`): a branch-restricted token never changes what other branches see."
	}
	return s
}

func oaScopeIDDescription(t tenancy.ScopeType) string {
	switch t {
	case tenancy.Organization:
		return "The organization's UUID; it must equal the token's `organization_id`. Any other value gives 404 `not_found`."
	case tenancy.Branch:
		return "A branch UUID: a branch of the token's organization. A value that is not a UUID, no branch, or a branch of another organization gives 404 `not_found`; a branch of the organization that a client-credentials token does not list in `oauth_branch_ids` gives 403 `insufficient_scope`."
	}
	return "A branch UUID, as for branch resources; lists and gets also see the organization-wide records (`branch_id` null). A value that is not a UUID, no branch, or a branch of another organization gives 404 `not_found`; a branch of the organization that a client-credentials token does not list in `oauth_branch_ids` gives 403 `insufficient_scope`."
}

func oaNeedsScope(scope string) string {
	return "Needs the scope `" + scope + "` (write does not imply read)."
}

func oaSecurity(scope string) []openapi.SecurityRequirement {
	return []openapi.SecurityRequirement{{schemeOAuth2: {scope}}}
}

func (b *openAPIBuilder) listOperation(r *Resource, n oaNames) *openapi.Operation {
	desc := []string{
		"Lists the " + n.plural + " that `{scopeId}` sees, a page at a time, filtered and sorted as the parameters say. `pagination.total` counts every record the filters match.",
		oaScopeSentence(r.ScopeType, oaRead),
		oaNeedsScope(r.ReadScope()),
	}
	if r.ReadOnly {
		desc = append(desc, oaReadOnly(n))
	}
	return &openapi.Operation{
		Tags: []string{r.Name}, Summary: "List " + n.plural, OperationID: "list" + n.listOp,
		Description: strings.Join(desc, "\n\n"),
		Parameters:  oaListParameters(r),
		Responses: map[string]*openapi.Response{
			"200": oaSuccess("A page of "+n.plural+".", n.schema+"ListEnvelope", nil),
			"400": openapi.ErrorResponse("`invalid_request`: a limit, offset, sort or filter that does not parse or is not allowed, an unknown parameter, or a query string that does not decode. The description names the parameter or field.",
				oaErr(apierrors.CodeInvalidRequest, `filter on "created_at": operator "like" is not allowed; the field allows eq, ne, in, gt, gte, lt, lte, isnull`)),
			"401": b.shared("Unauthorized", oaUnauthorized),
			"403": oaForbidden(r, r.ReadScope(), oaRead),
			"404": oaNotFound(false, n),
			"429": b.shared("RateLimited", openapi.RateLimitedResponse),
			"500": b.shared("ServerError", openapi.ServerErrorResponse),
		},
		Security: oaSecurity(r.ReadScope()),
	}
}

func (b *openAPIBuilder) getOperation(r *Resource, n oaNames) *openapi.Operation {
	desc := []string{
		"Returns " + n.one + " by id.",
		oaScopeSentence(r.ScopeType, oaRead),
		oaNeedsScope(r.ReadScope()),
	}
	if r.ReadOnly {
		desc = append(desc, oaReadOnly(n))
	}
	return &openapi.Operation{
		Tags: []string{r.Name}, Summary: "Get " + n.one, OperationID: "get" + n.singleOp,
		Description: strings.Join(desc, "\n\n"),
		Responses: map[string]*openapi.Response{
			"200": oaSuccess("The "+oaWords(oaSingular(r.Name))+".", n.schema+"ItemEnvelope", nil),
			"401": b.shared("Unauthorized", oaUnauthorized),
			"403": oaForbidden(r, r.ReadScope(), oaRead),
			"404": oaNotFound(true, n),
			"429": b.shared("RateLimited", openapi.RateLimitedResponse),
			"500": b.shared("ServerError", openapi.ServerErrorResponse),
		},
		Security: oaSecurity(r.ReadScope()),
	}
}

func (b *openAPIBuilder) createOperation(r *Resource, n oaNames) *openapi.Operation {
	return &openapi.Operation{
		Tags: []string{r.Name}, Summary: "Create " + n.one, OperationID: "create" + n.singleOp,
		Description: strings.Join([]string{
			"Creates " + n.one + " from the fields of `" + n.schema + "Create`. The server sets `id`, `organization_id`" + oaBranchSet(r.ScopeType) + ", `created_at` and `updated_at`, and answers with the new record and its `Location`.",
			oaScopeSentence(r.ScopeType, oaCreate),
			oaNeedsScope(r.WriteScope()),
		}, "\n\n"),
		RequestBody: &openapi.RequestBody{
			Description: "The new record: one JSON object of at most " + strconv.Itoa(MaxBodyBytes) + " bytes, sent with `Content-Type: application/json`.",
			Required:    true,
			Content:     openapi.JSON(openapi.SchemaRef(n.schema + "Create")),
		},
		Responses: map[string]*openapi.Response{
			"201": oaSuccess("The new record.", n.schema+"ItemEnvelope", map[string]*openapi.Header{"Location": openapi.HeaderRef("Location")}),
			"400": openapi.ErrorResponse("`invalid_request`: no `Content-Type: application/json`, or a body that is not one JSON object, or that names a field twice.\n\n"+
				"`invalid_create`: a field that is unknown or may not be sent on create (`id`, `organization_id`, `branch_id` and the server-set fields never may), a value of the wrong type, out of range, too long or not one of the enum's values, a missing required field, or a rule of the resource (a status flow) that the record breaks.\n\n"+
				"`create_failed`: the database refused the record: a reference to no record of this tenant, or a duplicate of a unique value.",
				oaErr(apierrors.CodeInvalidRequest, "Content-Type must be application/json"),
				oaErr(apierrors.CodeInvalidCreate, oaInvalidWrite(r, true)),
				oaErr(apierrors.CodeCreateFailed, "a record with the same unique values exists")),
			"401": b.shared("Unauthorized", oaUnauthorized),
			"403": oaForbidden(r, r.WriteScope(), oaCreate),
			"404": oaNotFound(false, n),
			"413": b.shared("PayloadTooLarge", func() *openapi.Response { return openapi.PayloadTooLargeResponse(MaxBodyBytes) }),
			"429": b.shared("RateLimited", openapi.RateLimitedResponse),
			"500": b.shared("ServerError", openapi.ServerErrorResponse),
		},
		Security: oaSecurity(r.WriteScope()),
	}
}

func oaBranchSet(t tenancy.ScopeType) string {
	if t == tenancy.Organization {
		return ""
	}
	return ", `branch_id` (the branch of `{scopeId}`)"
}

func (b *openAPIBuilder) updateOperation(r *Resource, n oaNames) *openapi.Operation {
	return &openapi.Operation{
		Tags: []string{r.Name}, Summary: "Update " + n.one, OperationID: "update" + n.singleOp,
		Description: strings.Join([]string{
			"Changes the fields of " + n.one + " that the body names (fields of `" + n.schema + "Update`), sets `updated_at`, and answers with the record as it is now. An empty object changes nothing.",
			oaScopeSentence(r.ScopeType, oaChange),
			oaNeedsScope(r.WriteScope()),
		}, "\n\n"),
		RequestBody: &openapi.RequestBody{
			Description: "The changes: one JSON object of at most " + strconv.Itoa(MaxBodyBytes) + " bytes, sent with `Content-Type: application/json`.",
			Required:    true,
			Content:     openapi.JSON(openapi.SchemaRef(n.schema + "Update")),
		},
		Responses: map[string]*openapi.Response{
			"200": oaSuccess("The record after the change.", n.schema+"ItemEnvelope", nil),
			"400": openapi.ErrorResponse("`invalid_request`: no `Content-Type: application/json`, or a body that is not one JSON object, or that names a field twice.\n\n"+
				"`invalid_update`: a field that is unknown or may not be changed, a value of the wrong type, out of range, too long or not one of the enum's values, null for a field that may not be null, a move the resource's rules forbid (a status flow), or a change the database refused (a reference to no record of this tenant, a duplicate of a unique value).",
				oaErr(apierrors.CodeInvalidRequest, "the body must be one JSON object"),
				oaErr(apierrors.CodeInvalidUpdate, oaInvalidWrite(r, false))),
			"401": b.shared("Unauthorized", oaUnauthorized),
			"403": oaForbidden(r, r.WriteScope(), oaChange),
			"404": oaNotFound(true, n),
			"413": b.shared("PayloadTooLarge", func() *openapi.Response { return openapi.PayloadTooLargeResponse(MaxBodyBytes) }),
			"429": b.shared("RateLimited", openapi.RateLimitedResponse),
			"500": b.shared("ServerError", openapi.ServerErrorResponse),
		},
		Security: oaSecurity(r.WriteScope()),
	}
}

func (b *openAPIBuilder) deleteOperation(r *Resource, n oaNames) *openapi.Operation {
	return &openapi.Operation{
		Tags: []string{r.Name}, Summary: "Delete " + n.one, OperationID: "delete" + n.singleOp,
		Description: strings.Join([]string{
			"Deletes " + n.one + " and answers with the record as it was. A record that other records still refer to is not deleted (409 `conflict`).",
			oaScopeSentence(r.ScopeType, oaChange),
			oaNeedsScope(r.WriteScope()),
		}, "\n\n"),
		Responses: map[string]*openapi.Response{
			"200": oaSuccess("The deleted record.", n.schema+"ItemEnvelope", nil),
			"400": openapi.ErrorResponse("`invalid_request`: a rule of the resource refused the delete, or the database refused it for a reason other than a reference.",
				oaErr(apierrors.CodeInvalidRequest, "the database refused the values: a constraint is not met")),
			"401": b.shared("Unauthorized", oaUnauthorized),
			"403": oaForbidden(r, r.WriteScope(), oaChange),
			"404": oaNotFound(true, n),
			"409": b.shared("Conflict", func() *openapi.Response {
				return openapi.ErrorResponse("`conflict`: other records still refer to this one; delete or change those first.",
					oaErr(apierrors.CodeConflict, "the record is still referenced by other records; delete or change those first"))
			}),
			"429": b.shared("RateLimited", openapi.RateLimitedResponse),
			"500": b.shared("ServerError", openapi.ServerErrorResponse),
		},
		Security: oaSecurity(r.WriteScope()),
	}
}

// oaInvalidWrite is the description of a typical invalid_create or
// invalid_update of r.
func oaInvalidWrite(r *Resource, create bool) string {
	for _, f := range r.fields {
		if f.Required && create {
			return f.Name + " is required"
		}
	}
	if create {
		return "unknown field \"foo\"; fields that may be sent: " + quoteList(r.writable(true))
	}
	return "id cannot be changed; fields that may be sent: " + quoteList(r.writable(false))
}

// Responses.

func oaErr(code, description string) openapi.ErrorExample {
	return openapi.ErrorExample{Code: code, Description: description}
}

// oaHeaders are the header components of the document: those every
// Waybill endpoint shares, and Location.
func oaHeaders() map[string]*openapi.Header {
	h := openapi.Headers()
	h["Location"] = &openapi.Header{
		Description: "The path of the new record: the request's path, then `/` and the new id.",
		Schema:      &openapi.Schema{Type: "string", Format: "uri-reference"}, Required: true,
	}
	return h
}

func oaSuccess(description, envelope string, headers map[string]*openapi.Header) *openapi.Response {
	r := &openapi.Response{Description: description, Headers: headers, Content: openapi.JSON(openapi.SchemaRef(envelope))}
	return openapi.WithHeaders(r, "RateLimit-Policy", "RateLimit")
}

func oaUnauthorized() *openapi.Response {
	return openapi.WithHeaders(openapi.ErrorResponse("`unauthorized`: no `Authorization: Bearer` token.\n\n"+
		"`invalid_token`: a token that is malformed, badly signed, expired, revoked, for another audience or issuer, or not HS256 with a current key.\n\n"+
		"Both carry a `WWW-Authenticate: Bearer` challenge (RFC 6750).",
		oaErr(apierrors.CodeUnauthorized, "an Authorization: Bearer token is required"),
		oaErr(apierrors.CodeInvalidToken, "the token has expired")), "WWW-Authenticate")
}

func oaForbidden(r *Resource, scope string, a oaAccess) *openapi.Response {
	d := "`invalid_token_type`: a product user token (one without `oauth_client_id`); the API takes OAuth access tokens.\n\n" +
		"`insufficient_scope`: the token lacks `" + scope + "`"
	if r.ScopeType != tenancy.Organization {
		d += ", or is a client-credentials token whose `oauth_branch_ids` do not list the branch `{scopeId}`"
	}
	if a != oaRead && r.ScopeType == tenancy.Organization {
		d += ", or is a client-credentials token whose `oauth_branch_ids` do not cover every branch of the organization: organization-wide data is changed only by a token that covers every branch"
	}
	if a == oaChange && r.ScopeType == tenancy.BranchOrNull {
		d += ", or the record is organization-wide (`branch_id` null) and the token does not cover every branch of the organization"
	}
	d += ". Its `WWW-Authenticate` challenge names the missing scope."
	resp := openapi.ErrorResponse(d,
		oaErr(apierrors.CodeInvalidTokenType, "the API takes OAuth access tokens, not product user tokens"),
		oaErr(apierrors.CodeInsufficientScope, "the token lacks the scope "+scope))
	resp.Headers = map[string]*openapi.Header{"WWW-Authenticate": openapi.HeaderRef("ScopeChallenge")}
	return resp
}

func oaNotFound(item bool, n oaNames) *openapi.Response {
	d := "`not_found`: `{scopeId}` is not a UUID, or names no organization or branch of the token's organization"
	if item {
		d += "; or `id` is not a UUID, or names no record that `{scopeId}` sees"
	}
	d += ". Another tenant's ids are answered the same way, so no answer reveals whether they exist."
	desc := "no such organization or branch"
	if item {
		desc = "no " + n.single + " with this id"
	}
	return openapi.ErrorResponse(d, oaErr(apierrors.CodeNotFound, desc))
}

// List parameters.

func oaListParameters(r *Resource) []*openapi.Parameter {
	s := r.Schema()
	maxLimit := s.MaxLimit
	if maxLimit <= 0 {
		maxLimit = query.MaxLimit
	}
	defaultLimit := s.DefaultLimit
	if defaultLimit <= 0 {
		defaultLimit = min(query.DefaultLimit, maxLimit)
	}
	explode := true
	return []*openapi.Parameter{
		{
			Name: "limit", In: "query",
			Description: "The page size: an integer from 1 to " + strconv.Itoa(maxLimit) + ". Anything else gives 400 `invalid_request`.",
			Schema:      &openapi.Schema{Type: "integer", Minimum: openapi.Ptr(1.0), Maximum: openapi.Ptr(float64(maxLimit)), Default: defaultLimit},
		},
		{
			Name: "offset", In: "query",
			Description: "The number of records to skip: an integer of at least 0.",
			Schema:      &openapi.Schema{Type: "integer", Format: "int64", Minimum: openapi.Ptr(0.0), Default: 0},
		},
		{
			Name: "sort", In: "query", Style: "form", Explode: &explode,
			Description: oaSortDescription(s),
			Schema:      &openapi.Schema{Type: "array", Items: &openapi.Schema{Type: "string"}},
			Example:     oaSortExample(s),
		},
		{
			Name: "filter", In: "query", Style: "form", Explode: &explode,
			Description: oaFilterDescription(s),
			Schema:      &openapi.Schema{Type: "array", Items: &openapi.Schema{Type: "string"}, MaxItems: openapi.Ptr(query.MaxFilters)},
			Example:     oaFilterExample(s),
		},
	}
}

func oaSortDescription(s *query.Schema) string {
	var sortable []string
	for _, f := range s.Fields {
		if f.Sortable {
			sortable = append(sortable, "`"+f.Name+"`")
		}
	}
	tiebreaker := s.Tiebreaker
	if tiebreaker == "" {
		tiebreaker = "id"
	}
	def := "`" + s.DefaultSort + "`"
	if s.DefaultSort == "" {
		def = "by `" + tiebreaker + "` alone"
	}
	return "The order: `field:asc` or `field:desc` (a key without a direction is ascending), repeated or comma-separated for several keys, at most " +
		strconv.Itoa(query.MaxSortKeys) + ". Sortable fields: " + strings.Join(sortable, ", ") + ". " +
		"`" + tiebreaker + "` is always appended as the last key, in the direction of the key before it, so that pages are stable. " +
		"Without `sort` the order is " + def + ". `organization_id` and `branch_id` cannot be sorted on."
}

func oaSortExample(s *query.Schema) any {
	if s.DefaultSort != "" {
		return []string{s.DefaultSort}
	}
	return nil
}

// oaFilterValue says how a filter value of type t is written.
func oaFilterValue(f *query.Field) string {
	switch f.Type {
	case query.UUID:
		return "a UUID"
	case query.String:
		return "text"
	case query.Enum:
		return "one of " + strings.Join(f.Values, ", ")
	case query.Integer:
		return "an integer"
	case query.Number:
		return "a decimal number"
	case query.Date:
		return "`YYYY-MM-DD`"
	case query.Timestamp:
		return "RFC 3339, or `YYYY-MM-DD` for midnight UTC"
	case query.Boolean:
		return "`true` or `false`"
	}
	return f.Type.String()
}

func oaFilterDescription(s *query.Schema) string {
	var b strings.Builder
	b.WriteString("Filters, `field:operator:value`, repeatable (at most " + strconv.Itoa(query.MaxFilters) + "); every filter must match. ")
	b.WriteString("A filter is split on its first two colons only, so `created_at:gte:2026-01-01T10:00:00Z` works. ")
	b.WriteString("`eq`, `ne`, `gt`, `gte`, `lt`, `lte` compare typed values (`ne` never matches null); ")
	b.WriteString("`in` takes a comma-separated list of at most " + strconv.Itoa(query.MaxInValues) + " values, where a value that holds a comma is written in double quotes (a quote inside doubled: `\"a, \"\"b\"\"\"`); ")
	b.WriteString("`like` (case-sensitive) and `ilike` (case-insensitive) match a pattern where `%` is the only wildcard and every other character, `_` and `\\` included, matches itself (in a URL the `%` is written `%25`: `filter=company_name:ilike:acme%25`); ")
	b.WriteString("`isnull` takes `true` (is null) or `false` (is not null). ")
	b.WriteString("A value is at most " + strconv.Itoa(query.MaxValueLength) + " bytes. ")
	b.WriteString("An unknown field or operator, an operator the field does not allow, or a value that does not parse as the field's type gives 400 `invalid_request` naming the field; `organization_id` and `branch_id` cannot be filtered.\n\n")
	b.WriteString("Filterable fields, with their type and operators:\n")
	for i := range s.Fields {
		f := &s.Fields[i]
		if !f.Filterable {
			continue
		}
		ops := f.Ops
		if ops == nil {
			ops = query.DefaultOps(f.Type)
		}
		opNames := make([]string, len(ops))
		for j, op := range ops {
			opNames[j] = string(op)
		}
		b.WriteString("\n- `" + f.Name + "` (" + f.Type.String() + ": " + oaFilterValue(f) + "): " + strings.Join(opNames, ", "))
	}
	return b.String()
}

func oaFilterExample(s *query.Schema) any {
	for i := range s.Fields {
		f := &s.Fields[i]
		if f.Filterable && f.Name == "created_at" {
			return []string{"created_at:gte:2026-01-01T00:00:00Z"}
		}
	}
	return nil
}

// Schemas of a resource.

// oaFieldSchema returns the schema of a field's value; nullable adds null.
func oaFieldSchema(f *Field, nullable bool) *openapi.Schema {
	s := &openapi.Schema{}
	var typ string
	switch f.Type {
	case query.UUID:
		typ, s.Format = "string", "uuid"
	case query.String:
		typ = "string"
		if f.Create || f.Update || f.MaxLength > 0 {
			max := f.MaxLength
			if max == 0 {
				max = defaultMaxLength
			}
			s.MaxLength = openapi.Ptr(max)
		}
	case query.Enum:
		typ = "string"
		for _, v := range f.Values {
			s.Enum = append(s.Enum, v)
		}
		if nullable {
			s.Enum = append(s.Enum, nil)
		}
	case query.Integer:
		typ, s.Format = "integer", "int64"
	case query.Number:
		typ = "number"
	case query.Date:
		typ, s.Format = "string", "date"
	case query.Timestamp:
		typ, s.Format = "string", "date-time"
	case query.Boolean:
		typ = "boolean"
	}
	if f.Min != nil {
		s.Minimum = openapi.Ptr(*f.Min)
	}
	if f.Max != nil {
		s.Maximum = openapi.Ptr(*f.Max)
	}
	if nullable {
		s.Type = []string{typ, "null"}
	} else {
		s.Type = typ
	}
	return s
}

// oaReferenceNote says what a reference field may name, as the handlers
// check it.
func oaReferenceNote(g *Registry, f *Field) string {
	target := g.Resource(f.References)
	if target == nil {
		return ""
	}
	what := oaWords(target.Name)
	switch target.ScopeType {
	case tenancy.Branch:
		return "The id of one of the " + what + " of the record's branch."
	case tenancy.BranchOrNull:
		return "The id of one of the " + what + " of the record's branch, or of an organization-wide one."
	}
	return "The id of one of the " + what + " of the organization."
}

func oaFieldDescription(g *Registry, f *Field) string {
	parts := []string{}
	if f.Description != "" {
		parts = append(parts, f.Description)
	}
	if f.References != "" {
		parts = append(parts, oaReferenceNote(g, f))
	}
	if f.Create && !f.Update {
		parts = append(parts, "Set on create; it cannot be changed afterwards.")
	}
	if f.Type == query.Timestamp && (f.Create || f.Update) {
		parts = append(parts, "A bare `YYYY-MM-DD` is taken as midnight UTC.")
	}
	return strings.Join(parts, " ")
}

// oaRecordSchema is the schema of a record as responses carry it: every
// column the handlers select (see selected), all always present.
func oaRecordSchema(g *Registry, r *Resource) *openapi.Schema {
	s := &openapi.Schema{Type: "object", Description: r.Description}
	for _, c := range selected(r) {
		var ps *openapi.Schema
		switch f := r.Field(c.name); {
		case f != nil:
			ps = oaFieldSchema(f, f.Nullable)
			ps.Description = oaFieldDescription(g, f)
			ps.ReadOnly = !f.Create && !f.Update
		case c.name == OrganizationColumn:
			ps = &openapi.Schema{Type: "string", Format: "uuid", ReadOnly: true,
				Description: "The organization that owns the record; set by the server, never sent by clients."}
		case c.name == BranchColumn && r.ScopeType == tenancy.BranchOrNull:
			ps = &openapi.Schema{Type: []string{"string", "null"}, Format: "uuid", ReadOnly: true,
				Description: "The branch the record belongs to, or null for an organization-wide record that every branch sees; set by the server from `{scopeId}`, never sent by clients."}
		default:
			ps = &openapi.Schema{Type: "string", Format: "uuid", ReadOnly: true,
				Description: "The branch the record belongs to; set by the server from `{scopeId}`, never sent by clients."}
		}
		s.Properties = append(s.Properties, openapi.Prop(c.name, ps))
		s.Required = append(s.Required, c.name)
	}
	return s
}

// oaWriteSchema is the body of a POST (create) or PATCH.
func oaWriteSchema(g *Registry, r *Resource, n oaNames, create bool) *openapi.Schema {
	s := &openapi.Schema{Type: "object", AdditionalProperties: openapi.Ptr(false)}
	if create {
		s.Description = "The body of a create of " + n.one + ". Fields left out get their defaults; unknown fields, and fields that may not be sent on create, are refused (400 `invalid_create`)."
	} else {
		s.Description = "The body of an update of " + n.one + ": the fields to change. Unknown fields, and fields that may not be changed, are refused (400 `invalid_update`)."
	}
	for i := range r.fields {
		f := &r.fields[i]
		if (create && !f.Create) || (!create && !f.Update) {
			continue
		}
		ps := oaFieldSchema(f, f.Nullable && !f.Required)
		ps.Description = oaFieldDescription(g, f)
		s.Properties = append(s.Properties, openapi.Prop(f.Name, ps))
		if create && f.Required {
			s.Required = append(s.Required, f.Name)
		}
	}
	return s
}

func oaVersion() *openapi.Schema {
	return &openapi.Schema{Type: "string", Const: Version, Description: "The API version."}
}

func oaListEnvelope(r *Resource, n oaNames) *openapi.Schema {
	return openapi.Object([]string{"data", "pagination", "version"},
		openapi.Prop("data", &openapi.Schema{Type: "array", Items: openapi.SchemaRef(n.schema), Description: "The page of " + n.plural + "."}),
		openapi.Prop("pagination", openapi.SchemaRef("Pagination")),
		openapi.Prop("version", oaVersion()))
}

func oaItemEnvelope(n oaNames) *openapi.Schema {
	return openapi.Object([]string{"data", "version"},
		openapi.Prop("data", openapi.SchemaRef(n.schema)),
		openapi.Prop("version", oaVersion()))
}

func oaPagination() *openapi.Schema {
	return openapi.Object([]string{"limit", "offset", "total"},
		openapi.Prop("limit", &openapi.Schema{Type: "integer", Minimum: openapi.Ptr(1.0), Description: "The page size used."}),
		openapi.Prop("offset", &openapi.Schema{Type: "integer", Format: "int64", Minimum: openapi.Ptr(0.0), Description: "The number of records skipped."}),
		openapi.Prop("total", &openapi.Schema{Type: "integer", Format: "int64", Minimum: openapi.Ptr(0.0), Description: "The number of records every filter matches, on every page."}))
}

// The security schemes.

func (b *openAPIBuilder) scopes() map[string]string {
	scopes := map[string]string{}
	for _, r := range b.g.resources {
		w := oaWords(r.Name)
		scopes[r.ReadScope()] = "Read " + w
		if !r.ReadOnly {
			scopes[r.WriteScope()] = "Create, update and delete " + w
		}
	}
	return scopes
}

// oaScopeRule is what the scopes of the registry allow, which the
// security scheme's description ends with.
const oaScopeRule = "`svc:<resource>:read` allows GET, `svc:<resource>:write` allows POST, PATCH and DELETE; write does not imply read."

// securitySchemes returns the security scheme "oauth2" of the registry's
// operations: a section's, when one declares it, with the registry's
// scopes added to its flows and its rule to its description; else one of
// TokenURL and AuthorizationURL.
func (b *openAPIBuilder) securitySchemes() map[string]*openapi.SecurityScheme {
	var scheme openapi.SecurityScheme
	if s := b.sectionScheme(); s != nil {
		scheme = *s
		scheme.Flows = &openapi.OAuthFlows{}
		if f := s.Flows.AuthorizationCode; f != nil {
			scheme.Flows.AuthorizationCode = b.withScopes(f)
		}
		if f := s.Flows.ClientCredentials; f != nil {
			scheme.Flows.ClientCredentials = b.withScopes(f)
		}
	} else {
		scheme = openapi.SecurityScheme{
			Type: "oauth2",
			Description: "OAuth 2.1 access tokens (HS256 JWTs), sent as `Authorization: Bearer <token>`. " +
				"The authorization-code flow requires PKCE with S256 (`plain` is refused) and an exact redirect URI; its token sees every branch of the organization the user chose at consent. " +
				"A client-credentials token sees the branches its app lists (`oauth_branch_ids`).",
			Flows: &openapi.OAuthFlows{
				AuthorizationCode: b.withScopes(&openapi.OAuthFlow{AuthorizationURL: b.info.AuthorizationURL, TokenURL: b.info.TokenURL, RefreshURL: b.info.TokenURL}),
				ClientCredentials: b.withScopes(&openapi.OAuthFlow{TokenURL: b.info.TokenURL}),
			},
		}
	}
	scheme.Description = strings.TrimSpace(scheme.Description + " " + oaScopeRule)
	return map[string]*openapi.SecurityScheme{schemeOAuth2: &scheme}
}

// sectionScheme returns the oauth2 security scheme with flows that the
// first section to declare one declares, or nil.
func (b *openAPIBuilder) sectionScheme() *openapi.SecurityScheme {
	for _, sec := range b.info.Sections {
		if s := sec.Components.SecuritySchemes[schemeOAuth2]; s != nil && s.Type == "oauth2" && s.Flows != nil {
			return s
		}
	}
	return nil
}

// withScopes returns a copy of f whose scopes are its own and the
// registry's, in the registry's words where both name one.
func (b *openAPIBuilder) withScopes(f *openapi.OAuthFlow) *openapi.OAuthFlow {
	c := *f
	c.Scopes = maps.Clone(f.Scopes)
	if c.Scopes == nil {
		c.Scopes = map[string]string{}
	}
	maps.Copy(c.Scopes, b.scopes())
	return &c
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

// The info description.

func (b *openAPIBuilder) description() string {
	var d strings.Builder
	if b.info.Description != "" {
		d.WriteString(b.info.Description)
	} else {
		d.WriteString("A multi-tenant REST API protected by OAuth 2.1. Every resource lives inside an organization, many inside one of its branches; the `{scopeId}` of each path says which.")
	}
	prefixes := b.g.prefixes()
	if len(prefixes) > 0 && len(b.g.resources) > 0 {
		p := prefixes[0]
		d.WriteString("\n\n## Paths\n\nEvery resource is served at `" + p + "/{scopeId}/{resource}` (list, create) and `" + p + "/{scopeId}/{resource}/{id}` (get, update, delete). ")
		for _, alias := range prefixes[1:] {
			d.WriteString("`" + alias + "` is an alias of every `" + p + "` path of the resources: `" + alias + "/{scopeId}/{resource}` is the same route as `" + p + "/{scopeId}/{resource}`, with the same behaviour. ")
		}
		if len(prefixes) > 1 {
			d.WriteString("This document lists the `" + p + "` paths only. ")
		}
		d.WriteString("Methods a resource path does not list answer 405 `method_not_allowed` with an `Allow` header.")

		d.WriteString("\n\n## Tenancy\n\nEvery record carries `organization_id`, and branch-scoped records `branch_id`. The server sets and enforces both: a client can never send them (400 `invalid_create` / `invalid_update`), filter on them or sort on them (400 `invalid_request`). What `{scopeId}` names depends on the resource:\n\n")
		d.WriteString("| scope type | `{scopeId}` | resources |\n|---|---|---|\n")
		for _, t := range []tenancy.ScopeType{tenancy.Organization, tenancy.Branch, tenancy.BranchOrNull} {
			var rs []string
			for _, r := range b.g.resources {
				if r.ScopeType == t {
					rs = append(rs, r.Name)
				}
			}
			if len(rs) == 0 {
				continue
			}
			what := map[tenancy.ScopeType]string{
				tenancy.Organization: "the token's organization; creating, changing and deleting need a token that covers every branch",
				tenancy.Branch:       "a branch of the token's organization (for a client-credentials token, one of its `oauth_branch_ids`)",
				tenancy.BranchOrNull: "as branch; lists and gets also return the organization-wide records (`branch_id` null), and changing those needs a token that covers every branch",
			}[t]
			d.WriteString("| " + t.String() + " | " + what + " | " + strings.Join(rs, ", ") + " |\n")
		}
		d.WriteString("\nA `{scopeId}` or record id that is not a UUID, does not exist, or belongs to another organization gives 404 `not_found`: no answer reveals whether another tenant's id exists. A branch of the token's organization that the token may not use gives 403 `insufficient_scope`.")

		d.WriteString("\n\n## Requests and responses\n\nEvery call carries `Authorization: Bearer <access token>` (see the OAuth operations) with the scope the operation names: `svc:<resource>:read` for GET, `svc:<resource>:write` for POST, PATCH and DELETE; write does not imply read. ")
		d.WriteString("POST and PATCH take `Content-Type: application/json` and one JSON object of at most " + strconv.Itoa(MaxBodyBytes) + " bytes (1 MiB; more gives 413 `payload_too_large`). ")
		d.WriteString("A list answers `{\"data\": [...], \"pagination\": {\"limit\", \"offset\", \"total\"}, \"version\": \"" + Version + "\"}`; every other success `{\"data\": {...}, \"version\": \"" + Version + "\"}`, DELETE with the deleted record. Timestamps are RFC 3339 in UTC; dates `YYYY-MM-DD`.")
		d.WriteString("\n\nLists take `limit` (default " + strconv.Itoa(query.DefaultLimit) + ", at most " + strconv.Itoa(query.MaxLimit) + " unless a resource says less), `offset`, `sort` (`field:asc|desc`, `id` always appended as the last key; default `created_at:desc` unless a resource says otherwise) and `filter` (`field:operator:value`, repeatable, ANDed); any other parameter gives 400 `invalid_request`, so that a filter is never dropped silently.")
	}

	d.WriteString("\n\n## Errors\n\nEvery error has the body `{\"error\": \"<code>\", \"error_description\": \"<text>\"}`:\n\n| code | status |\n|---|---|\n")
	for _, code := range []string{
		apierrors.CodeInvalidRequest, apierrors.CodeInvalidCreate, apierrors.CodeCreateFailed, apierrors.CodeInvalidUpdate,
		apierrors.CodeUnauthorized, apierrors.CodeInvalidToken, apierrors.CodeInvalidTokenType, apierrors.CodeInsufficientScope,
		apierrors.CodeNotFound, apierrors.CodeMethodNotAllowed, apierrors.CodeConflict, apierrors.CodePayloadTooLarge,
		apierrors.CodeRateLimited, apierrors.CodeServerError,
		apierrors.CodeInvalidClient, apierrors.CodeInvalidGrant, apierrors.CodeUnsupportedGrantType, apierrors.CodeInvalidScope,
	} {
		d.WriteString("| `" + code + "` | " + strconv.Itoa(apierrors.Status(code)) + " |\n")
	}
	d.WriteString("\n## Rate limits\n\nA rate-limited route answers 429 `rate_limited` over its limit, with `Retry-After` in whole seconds. Every response of such a route carries the headers of draft-ietf-httpapi-ratelimit-headers-11: `RateLimit-Policy: \"<name>\";q=<quota>;w=<window seconds>` and `RateLimit: \"<name>\";r=<remaining>;t=<seconds until capacity returns>`. A fresh key may spend its whole quota at once and then earns it back evenly over the window.")
	return d.String()
}
