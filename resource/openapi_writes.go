package resource

import (
	"strconv"
	"strings"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/openapi"
)

// This file describes what integrations use to write safely and sync
// cheaply: ETags and conditional requests, idempotency keys, count
// preferences and field selection.

// oaSyncHeaders are the header components of lists and count preferences
// (those of conditional requests and idempotency keys are in
// openapi.Headers).
func oaSyncHeaders(h map[string]*openapi.Header) {
	h["Link"] = &openapi.Header{
		Description: "The next page, when there is one (RFC 8288): `<path?...&after=cursor>; rel=\"next\"`, the request's path and query with `after` for `offset`.",
		Schema:      &openapi.Schema{Type: "string"},
	}
	h[FeedCursorHeader] = &openapi.Header{
		Description: "On an export, when the API has a change feed: the feed's cursor after which come exactly the writes the export does not hold (send it as the feed's `after`).",
		Schema:      &openapi.Schema{Type: "string", Pattern: "^[0-9]+$"},
	}
	h["Preference-Applied"] = &openapi.Header{
		Description: "The count preference applied (RFC 7240): `count=exact`, `count=estimated` or `count=none`. Without it the total is exact.",
		Schema:      &openapi.Schema{Type: "string", Enum: []any{"count=exact", "count=estimated", "count=none"}},
	}
}

// oaPrefer is the Prefer parameter of a list.
func oaPrefer() *openapi.Parameter {
	return &openapi.Parameter{
		Name: "Prefer", In: "header",
		Description: "How `pagination.total` is counted (RFC 7240): `count=exact` (the default: a COUNT of every matching record, which costs as much as reading them); " +
			"`count=estimated` (on PostgreSQL the planner's estimate, which reads no rows, or the exact count when the estimate is under " + strconv.Itoa(ExactCountBelow) + "; on SQLite the exact count); " +
			"`count=none` (no count; `pagination.total` is null: for sync jobs that page until a page is short). `Preference-Applied` says what was applied.",
		Schema: &openapi.Schema{Type: "string", Enum: []any{"count=exact", "count=estimated", "count=none"}},
	}
}

// oaFields is the fields parameter of GET of a list or a record of r.
func oaFields(r *Resource) *openapi.Parameter {
	names := make([]string, 0, len(r.fields)+2)
	for _, c := range selected(r) {
		names = append(names, c.name)
	}
	explode := false
	return &openapi.Parameter{
		Name: "fields", In: "query", Style: "form", Explode: &explode,
		Description: "Return only these fields of each record, separated by commas (`id` always comes back): " + strings.Join(names, ", ") + ". At most " + strconv.Itoa(len(names)) + " names, counted as given (a name given twice counts twice and is kept once). An unknown field, or more names, gives 400 `invalid_request`. The `ETag` stays the version of the whole record.",
		Schema:      &openapi.Schema{Type: "array", Items: &openapi.Schema{Type: "string", Enum: oaAnys(names)}, MaxItems: openapi.Ptr(len(names))},
	}
}

func oaAnys(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// oaPreconditionRequired is the 428 of a resource that requires If-Match.
func oaPreconditionRequired() *openapi.Response {
	return openapi.ErrorResponse("`precondition_required`: this resource takes writes only with `If-Match`.",
		oaErr(apierrors.CodePreconditionRequired, "this resource requires If-Match: send the ETag of the record as you last read it"))
}

// oaExportSentence describes the exports of a list.
const oaExportSentence = "With `Accept: " + NDJSON + "` (one record a line) or `Accept: " + CSV + "` (RFC 4180: a header row of the field names, then a row a record; an empty cell is null, a string is written as it is and any other value as its JSON text) " +
	"(the highest q-value of `Accept` wins; `application/json`, `*/*` and types the API does not serve give a page) the answer is an export: every record the filters match, in the sort given, streamed, read in one consistent snapshot of the database; `fields` applies, `limit`, `offset` and `after` are refused (400 `invalid_request`). " +
	"`" + FeedCursorHeader + "` names the change feed's cursor after which come exactly the writes the export does not hold: follow the feed from it to stay in step, missing nothing and seeing nothing twice."

// oaExport adds the export media types and the feed cursor header to the
// 200 of a list.
func oaExport(r *openapi.Response, n oaNames) *openapi.Response {
	r.Content[NDJSON] = &openapi.MediaType{Schema: &openapi.Schema{Ref: openapi.Ref("schemas", n.schema+"Partial"),
		Description: "Each line of the body: one record, as the page's `data` shows it."}}
	r.Content[CSV] = &openapi.MediaType{Schema: &openapi.Schema{Type: "string",
		Description: "RFC 4180 CSV: a header row of the field names (`id` and those of `fields`, or every field), then a row a record."}}
	r.Headers[FeedCursorHeader] = openapi.HeaderRef(FeedCursorHeader)
	return r
}
