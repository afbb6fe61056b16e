package resource

import (
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/internal/idempotency"
	"github.com/waybillhq/waybill/openapi"
	"github.com/waybillhq/waybill/tenancy"
)

// This file describes the paths of a resource: its collection and item,
// their operations, and the sentences about tenancy and scopes they share.

// Names of a resource.

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
	single := Singular(r.Name)
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

	if err := b.addResourceSchemas(r, n); err != nil {
		return err
	}
	b.doc.Tags = append(b.doc.Tags, openapi.Tag{Name: r.Name, Description: oaResourceDescription(r, n, collection)})

	scopeParam := &openapi.Parameter{
		Name: "scopeId", In: "path", Required: true, Description: oaScopeIDDescription(r.ScopeType),
		Schema: &openapi.Schema{Type: "string", Format: "uuid"},
	}
	idParam := &openapi.Parameter{
		Name: "id", In: "path", Required: true,
		Description: "The id of " + n.one + ". An id that is not a UUID, or of no " + oaWords(Singular(r.Name)) + " that `{scopeId}` sees, gives 404 `not_found`.",
		Schema:      &openapi.Schema{Type: "string", Format: "uuid"},
	}
	collectionItem := &openapi.PathItem{Parameters: []*openapi.Parameter{scopeParam}, Get: b.listOperation(r, n)}
	itemItem := &openapi.PathItem{Parameters: []*openapi.Parameter{scopeParam, idParam}, Get: b.getOperation(r, n)}
	if !r.ReadOnly {
		collectionItem.Post = b.createOperation(r, n)
		collectionItem.Patch = b.batchUpdateOperation(r, n)
		itemItem.Patch = b.updateOperation(r, n)
		itemItem.Delete = b.deleteOperation(r, n)
		if r.RequireIfMatch {
			for _, op := range []*openapi.Operation{itemItem.Patch, itemItem.Delete} {
				op.Responses["428"] = b.shared("PreconditionRequired", oaPreconditionRequired)
			}
		}
	}
	if err := b.addPath(collection, collectionItem); err != nil {
		return fmt.Errorf("resource %s: %w", r.Name, err)
	}
	if err := b.addPath(item, itemItem); err != nil {
		return fmt.Errorf("resource %s: %w", r.Name, err)
	}
	if b.g.History != nil && !r.ReadOnly {
		if err := b.addHistory(r, n, item, itemItem.Parameters); err != nil {
			return fmt.Errorf("resource %s: %w", r.Name, err)
		}
	}
	return nil
}

// addResourceSchemas adds the schemas of r: the partial record the GETs
// answer, with its envelopes, and unless r is read-only the whole record
// the writes answer, its envelope and the bodies of the writes.
func (b *openAPIBuilder) addResourceSchemas(r *Resource, n oaNames) error {
	type named struct {
		name   string
		schema *openapi.Schema
	}
	schemas := []named{
		{n.schema + "Partial", oaRecordSchema(b.g, r, n, true)},
		{n.schema + "ListEnvelope", oaListEnvelope(n)},
		{n.schema + "PartialEnvelope", oaItemEnvelope(n.schema + "Partial")},
	}
	if !r.ReadOnly {
		schemas = append(schemas,
			named{n.schema, oaRecordSchema(b.g, r, n, false)},
			named{n.schema + "ItemEnvelope", oaItemEnvelope(n.schema)},
			named{n.schema + "Create", oaWriteSchema(b.g, r, n, true)},
			named{n.schema + "Update", oaWriteSchema(b.g, r, n, false)})
	}
	if !r.ReadOnly {
		batch := oaBatchSchemas(b.g, r, n)
		for _, name := range slices.Sorted(maps.Keys(batch)) {
			schemas = append(schemas, named{name, batch[name]})
		}
	}
	for _, s := range schemas {
		if err := b.addSchema(s.name, s.schema); err != nil {
			return fmt.Errorf("resource %s: %w", r.Name, err)
		}
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
		oaExportSentence,
		oaScopeSentence(r.ScopeType, oaRead),
		oaNeedsScope(r.ReadScope()),
	}
	if r.ReadOnly {
		desc = append(desc, oaReadOnly(n))
	}
	return &openapi.Operation{
		Tags: []string{r.Name}, Summary: "List " + n.plural, OperationID: "list" + n.listOp,
		Description: strings.Join(desc, "\n\n"),
		Parameters:  append(oaListParameters(r), oaFields(r), oaPrefer()),
		Responses: map[string]*openapi.Response{
			"200": oaExport(oaSuccess("A page of "+n.plural+": whole records, or with `fields`, `id` and the fields named; with `Accept: "+NDJSON+"` or `"+CSV+"`, every record the filters match (see the description).", n.schema+"ListEnvelope", map[string]*openapi.Header{
				"Preference-Applied": openapi.HeaderRef("Preference-Applied"), "Link": openapi.HeaderRef("Link"),
			}), n),
			"400": openapi.ErrorResponse("`invalid_request`: a limit, offset, sort or filter that does not parse or is not allowed, an unknown parameter, or a query string that does not decode; `limit`, `offset` or `after` on an export. The description names the parameter or field.",
				oaErr(apierrors.CodeInvalidRequest, `filter on "created_at": operator "like" is not allowed; the field allows eq, ne, in, gt, gte, lt, lte, isnull`)),
			"401": b.shared("Unauthorized", oaUnauthorized),
			"403": oaForbidden(r, r.ReadScope(), oaRead),
			"404": oaNotFound(false, n),
			"429": b.shared("RateLimited", openapi.RateLimitedResponse),
			"500": b.shared("ServerError", openapi.ServerErrorResponse),
			"503": b.shared("Unavailable", openapi.UnavailableResponse),
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
		Parameters:  []*openapi.Parameter{oaFields(r), openapi.IfNoneMatchParameter()},
		Responses: map[string]*openapi.Response{
			"200": oaSuccess("The "+oaWords(Singular(r.Name))+": whole, or with `fields`, `id` and the fields named.", n.schema+"PartialEnvelope", map[string]*openapi.Header{"ETag": openapi.HeaderRef("ETag")}),
			"304": openapi.NotModifiedResponse(),
			"401": b.shared("Unauthorized", oaUnauthorized),
			"403": oaForbidden(r, r.ReadScope(), oaRead),
			"404": oaNotFound(true, n),
			"429": b.shared("RateLimited", openapi.RateLimitedResponse),
			"500": b.shared("ServerError", openapi.ServerErrorResponse),
			"503": b.shared("Unavailable", openapi.UnavailableResponse),
		},
		Security: oaSecurity(r.ReadScope()),
	}
}

func (b *openAPIBuilder) createOperation(r *Resource, n oaNames) *openapi.Operation {
	desc := []string{
		"Creates " + n.one + " from the fields of `" + n.schema + "Create`, or a batch of them from an array. The server sets `id`, `organization_id`" + oaBranchSet(r.ScopeType) + ", `created_at` and `updated_at`, and answers with the new record and its `Location`, or with the new records in the order sent.",
		oaBatchSentence,
		oaScopeSentence(r.ScopeType, oaCreate),
		oaNeedsScope(r.WriteScope()),
	}
	params := []*openapi.Parameter{openapi.IdempotencyKeyParameter(idempotency.MaxKeyLen, b.g.idempotencyStore().TTLOrDefault())}
	created := &openapi.Schema{OneOf: []*openapi.Schema{openapi.SchemaRef(n.schema + "ItemEnvelope"), openapi.SchemaRef(n.schema + "BatchEnvelope")}}
	responses := map[string]*openapi.Response{
		"201": openapi.WithHeaders(&openapi.Response{Description: "The new record, or the new records of a batch.", Headers: oaWriteHeaders(true), Content: openapi.JSON(created)}, "RateLimit-Policy", "RateLimit"),
		"409": b.shared("WriteConflict", oaConflict),
		"422": b.shared("IdempotencyKeyReused", openapi.IdempotencyKeyReusedResponse),
		"400": openapi.ErrorResponse("`invalid_request`: no `Content-Type: application/json`, or a body that is not one JSON object or array, or an object that names a field twice.\n\n"+
			"`invalid_create`: a field that is unknown or may not be sent on create (`id`, `organization_id`, `branch_id` and the server-set fields never may), a value of the wrong type, out of range, too long or not one of the enum's values, a missing required field, or a rule of the resource (a status flow) that the record breaks.\n\n"+
			"`create_failed`: the database refused the record: a reference to no record of this tenant, or a duplicate of a unique value.\n\n"+oaBatchErrors,
			oaErr(apierrors.CodeInvalidRequest, "Content-Type must be application/json"),
			oaErr(apierrors.CodeInvalidCreate, oaInvalidWrite(r, true)),
			oaErr(apierrors.CodeCreateFailed, "a record with the same unique values exists"),
			oaErr(apierrors.CodeInvalidBatch, "2 of the 5 items were refused (see errors); nothing was written")),
		"401": b.shared("Unauthorized", oaUnauthorized),
		"403": oaForbidden(r, r.WriteScope(), oaCreate),
		"404": oaNotFound(false, n),
		"413": b.shared("BatchTooLarge", func() *openapi.Response { return openapi.PayloadTooLargeResponse(MaxBatchBytes) }),
		"429": b.shared("RateLimited", openapi.RateLimitedResponse),
		"500": b.shared("ServerError", openapi.ServerErrorResponse),
		"503": b.shared("Unavailable", openapi.UnavailableResponse),
	}
	if p := oaMergeDuplicates(r); p != nil {
		params = append(params, p)
		if r.RequireIfMatch {
			responses["428"] = b.shared("PreconditionRequired", oaPreconditionRequired)
		}
		desc[0] += " With `Prefer: " + mergeDuplicates + "` it is an upsert by `external_id` (see the parameter)."
		responses["200"] = oaSuccess("The records of an upsert, in the order sent, and what was done with each.", n.schema+"UpsertEnvelope", map[string]*openapi.Header{
			"Preference-Applied":  {Description: "`" + mergeDuplicates + "`: the POST was an upsert (RFC 7240).", Schema: &openapi.Schema{Type: "string", Const: mergeDuplicates}, Required: true},
			"Idempotent-Replayed": openapi.HeaderRef("Idempotent-Replayed"),
		})
	}
	return &openapi.Operation{
		Tags: []string{r.Name}, Summary: "Create " + n.one + " or several", OperationID: "create" + n.singleOp,
		Description: strings.Join(desc, "\n\n"),
		Parameters:  params,
		RequestBody: oaBatchBody(n),
		Responses:   responses,
		Security:    oaSecurity(r.WriteScope()),
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
		Parameters: []*openapi.Parameter{openapi.IfMatchParameter(r.RequireIfMatch), openapi.IdempotencyKeyParameter(idempotency.MaxKeyLen, b.g.idempotencyStore().TTLOrDefault())},
		RequestBody: &openapi.RequestBody{
			Description: "The changes: one JSON object of at most " + strconv.Itoa(MaxBodyBytes) + " bytes, sent with `Content-Type: application/json`.",
			Required:    true,
			Content:     openapi.JSON(openapi.SchemaRef(n.schema + "Update")),
		},
		Responses: map[string]*openapi.Response{
			"200": oaSuccess("The record after the change.", n.schema+"ItemEnvelope", map[string]*openapi.Header{
				"ETag": openapi.HeaderRef("ETag"), "Idempotent-Replayed": openapi.HeaderRef("Idempotent-Replayed"),
			}),
			"409": b.shared("IdempotencyInProgress", openapi.IdempotencyInProgressResponse),
			"412": openapi.PreconditionFailedResponse(openapi.SchemaRef(n.schema), Version),
			"422": b.shared("IdempotencyKeyReused", openapi.IdempotencyKeyReusedResponse),
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
			"503": b.shared("Unavailable", openapi.UnavailableResponse),
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
		Parameters: []*openapi.Parameter{openapi.IfMatchParameter(r.RequireIfMatch)},
		Responses: map[string]*openapi.Response{
			"200": oaSuccess("The deleted record.", n.schema+"ItemEnvelope", map[string]*openapi.Header{"ETag": openapi.HeaderRef("ETag")}),
			"412": openapi.PreconditionFailedResponse(openapi.SchemaRef(n.schema), Version),
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
			"503": b.shared("Unavailable", openapi.UnavailableResponse),
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
