package resource

import (
	"strconv"
	"strings"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/internal/idempotency"
	"github.com/waybillhq/waybill/openapi"
)

// This file describes the batch writes of a resource: batch creates and
// upserts on POST of the collection, batch updates on its PATCH.

// oaBatchSchemas are the schemas of the batch writes of r: the envelope
// of a batch's records, that of an upsert's with their outcomes, and an
// item of a batch update.
func oaBatchSchemas(g *Registry, r *Resource, n oaNames) map[string]*openapi.Schema {
	records := &openapi.Schema{Type: "array", Items: openapi.SchemaRef(n.schema), Description: "The records, in the order of the items sent."}
	update := oaWriteSchema(g, r, n, false)
	update.Description = "An item of a batch update of " + n.plural + ": `id`, or `external_id` when there is no `id`, names the record; the other fields are the changes, as in `" + n.schema + "Update`. With `id`, an `external_id` is a change."
	update.Properties = append(openapi.Properties{openapi.Prop("id", &openapi.Schema{Type: "string", Format: "uuid", Description: "The id of the record to update."})}, update.Properties...)
	s := map[string]*openapi.Schema{
		n.schema + "BatchEnvelope": openapi.Object([]string{"data", "version"}, openapi.Prop("data", records), openapi.Prop("version", oaVersion())),
		n.schema + "BatchUpdate":   update,
	}
	if r.ExternalID {
		s[n.schema+"UpsertEnvelope"] = openapi.Object([]string{"data", "outcomes", "version"},
			openapi.Prop("data", records),
			openapi.Prop("outcomes", &openapi.Schema{Type: "array", Description: "What the upsert did with each item, in the order sent: `created` a record, `updated` the record with its `external_id`, or left it `unchanged` (its fields held the values sent: nothing was written, and no event recorded).",
				Items: &openapi.Schema{Type: "string", Enum: []any{outcomeCreated, outcomeUpdated, outcomeUnchanged}}}),
			openapi.Prop("version", oaVersion()))
	}
	return s
}

// oaBatchSentence says how a batch counts and refuses.
const oaBatchSentence = "A batch is all or nothing: when any item is refused nothing is written, and the answer names every refused item in `errors` " +
	"(`index` from 0, `error`, `error_description`): 400 `invalid_batch`, or 409 `conflict` when every refusal is a conflict. " +
	"Each record written gives its event, in the order sent. A batch counts against the rate limits as ceil(n/10) requests; an `Idempotency-Key` covers the whole batch."

// oaBatchBody is the request body of a POST of r: one object or an
// array.
func oaBatchBody(n oaNames) *openapi.RequestBody {
	return &openapi.RequestBody{
		Description: "One new record, a JSON object of at most " + strconv.Itoa(MaxBodyBytes) + " bytes, or a batch: a JSON array of 1 to " + strconv.Itoa(MaxBatchItems) +
			" of them, of at most " + strconv.Itoa(MaxBatchBytes) + " bytes; sent with `Content-Type: application/json`.",
		Required: true,
		Content: openapi.JSON(&openapi.Schema{OneOf: []*openapi.Schema{
			openapi.SchemaRef(n.schema + "Create"),
			{Type: "array", Items: openapi.SchemaRef(n.schema + "Create"), MinItems: openapi.Ptr(1), MaxItems: openapi.Ptr(MaxBatchItems)},
		}}),
	}
}

// oaMergeDuplicates is the Prefer parameter of a POST of r.
func oaMergeDuplicates(r *Resource) *openapi.Parameter {
	if !r.ExternalID {
		return nil
	}
	return &openapi.Parameter{
		Name: "Prefer", In: "header",
		Description: "`" + mergeDuplicates + "` makes the POST an upsert (RFC 7240), of one object or an array: every item carries `external_id`; an item whose `external_id` names a record of the scope it would be created in updates that record under the rules of PATCH " +
			"(the fields that may be changed; fields not sent keep their values; a field that may be set only on create may be sent with its stored value), any other item creates a record. " +
			"The answer is 200 with `outcomes` and `Preference-Applied`, for one object as for an array, and refusals come as a batch's. Two upserts of one new `external_id` at once never make two records.",
		Schema: &openapi.Schema{Type: "string", Enum: []any{mergeDuplicates}},
	}
}

// oaWriteHeaders are the headers of the answer of a write that may be of
// one record or a batch: those of one record are absent on a batch's.
func oaWriteHeaders(location bool) map[string]*openapi.Header {
	h := map[string]*openapi.Header{
		"ETag":                {Description: "The record's version, when one object was sent (see the ETag header component); absent on a batch's answer.", Schema: &openapi.Schema{Type: "string"}},
		"Idempotent-Replayed": openapi.HeaderRef("Idempotent-Replayed"),
	}
	if location {
		h["Location"] = &openapi.Header{Description: "The path of the new record, when one object was sent; absent on a batch's answer.", Schema: &openapi.Schema{Type: "string", Format: "uri-reference"}}
	}
	return h
}

// oaBatchErrors is the 400 description of the refusals of a batch.
const oaBatchErrors = "`invalid_batch`: an empty array, more than " + "1000" + " items, a body that is not a JSON array of objects (the description names the item where the JSON breaks), or items that were refused: `errors` names each, with the code and description its write alone would get."

// oaConflict is the 409 of a write: a repeated external_id, or a request
// with the same Idempotency-Key still being served.
func oaConflict() *openapi.Response {
	return openapi.WithHeaders(openapi.ErrorResponse("`conflict`: the write would give a second record of the tenant scope the same `external_id`; in a batch, every refused item is such a repeat (`errors` names them). Nothing was written.\n\n"+
		"`idempotency_in_progress`: a request with this `Idempotency-Key` is still being served; retry once it has been answered.",
		oaErr(apierrors.CodeConflict, `external_id "ERP-4711" is already used by another record of this branch`),
		oaErr(apierrors.CodeIdempotencyInProgress, "a request with this Idempotency-Key is still being served; retry once it has been answered")))
}

// batchUpdateOperation is PATCH of the collection of r.
func (b *openAPIBuilder) batchUpdateOperation(r *Resource, n oaNames) *openapi.Operation {
	desc := []string{
		"Updates several " + n.plural + " at once: a JSON array of 1 to " + strconv.Itoa(MaxBatchItems) + " items, each naming its record by `id` (or by `external_id` when it has no `id`) with the fields to change, as PATCH of one record does. " +
			"An item that names no record `{scopeId}` sees is refused with `not_found`, one that names a record another item names with `invalid_update`. Answers with the records as they are now, in the order sent.",
		oaBatchSentence,
		oaScopeSentence(r.ScopeType, oaChange),
		oaNeedsScope(r.WriteScope()),
	}
	op := &openapi.Operation{
		Tags: []string{r.Name}, Summary: "Update several " + n.plural, OperationID: "update" + n.listOp,
		Description: strings.Join(desc, "\n\n"),
		Parameters:  []*openapi.Parameter{openapi.IdempotencyKeyParameter(idempotency.MaxKeyLen, b.g.idempotencyStore().TTLOrDefault())},
		RequestBody: &openapi.RequestBody{
			Description: "The items: a JSON array of 1 to " + strconv.Itoa(MaxBatchItems) + " objects, of at most " + strconv.Itoa(MaxBatchBytes) + " bytes, sent with `Content-Type: application/json`.",
			Required:    true,
			Content:     openapi.JSON(&openapi.Schema{Type: "array", Items: openapi.SchemaRef(n.schema + "BatchUpdate"), MinItems: openapi.Ptr(1), MaxItems: openapi.Ptr(MaxBatchItems)}),
		},
		Responses: map[string]*openapi.Response{
			"200": oaSuccess("The records after the changes, in the order sent.", n.schema+"BatchEnvelope", map[string]*openapi.Header{"Idempotent-Replayed": openapi.HeaderRef("Idempotent-Replayed")}),
			"400": openapi.ErrorResponse("`invalid_request`: no `Content-Type: application/json`.\n\n"+oaBatchErrors,
				oaErr(apierrors.CodeInvalidRequest, "Content-Type must be application/json"),
				oaErr(apierrors.CodeInvalidBatch, "2 of the 5 items were refused (see errors); nothing was written")),
			"401": b.shared("Unauthorized", oaUnauthorized),
			"403": oaForbidden(r, r.WriteScope(), oaChange),
			"404": oaNotFound(false, n),
			"409": b.shared("WriteConflict", oaConflict),
			"413": b.shared("BatchTooLarge", func() *openapi.Response { return openapi.PayloadTooLargeResponse(MaxBatchBytes) }),
			"422": b.shared("IdempotencyKeyReused", openapi.IdempotencyKeyReusedResponse),
			"429": b.shared("RateLimited", openapi.RateLimitedResponse),
			"500": b.shared("ServerError", openapi.ServerErrorResponse),
			"503": b.shared("Unavailable", openapi.UnavailableResponse),
		},
		Security: oaSecurity(r.WriteScope()),
	}
	if r.RequireIfMatch {
		op.Responses["428"] = b.shared("PreconditionRequired", oaPreconditionRequired)
	}
	return op
}
