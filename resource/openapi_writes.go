package resource

import (
	"strconv"
	"strings"
	"time"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/openapi"
)

// This file describes what integrations use to write safely and sync
// cheaply: ETags and conditional requests, idempotency keys, count
// preferences and field selection.

// oaSyncHeaders are the header components of conditional requests,
// idempotency keys and count preferences.
func oaSyncHeaders(h map[string]*openapi.Header) {
	h["ETag"] = &openapi.Header{
		Description: "The record's version: a strong entity tag that changes with every write of the record (RFC 9110 section 8.8.3). Send it in `If-Match` to write only that version, or in `If-None-Match` to read only a newer one.",
		Schema:      &openapi.Schema{Type: "string", Examples: []any{`"dGhlIHJlY29yZCB2ZXJzaW9u"`}}, Required: true,
	}
	h["Idempotent-Replayed"] = &openapi.Header{
		Description: "`true` on the stored answer that a request repeating an `Idempotency-Key` gets; absent on the first answer.",
		Schema:      &openapi.Schema{Type: "string", Const: "true"},
	}
	h["Link"] = &openapi.Header{
		Description: "The next page, when there is one (RFC 8288): `<path?...&after=cursor>; rel=\"next\"`, the request's path and query with `after` for `offset`.",
		Schema:      &openapi.Schema{Type: "string"},
	}
	h["Preference-Applied"] = &openapi.Header{
		Description: "The count preference applied (RFC 7240): `count=exact`, `count=estimated` or `count=none`. Without it the total is exact.",
		Schema:      &openapi.Schema{Type: "string", Enum: []any{"count=exact", "count=estimated", "count=none"}},
	}
}

// oaIfMatch is the If-Match parameter of PATCH and DELETE of r.
func oaIfMatch(r *Resource) *openapi.Parameter {
	d := "Write only if the record is still the version this ETag names (strong comparison; `*` matches any stored record). Otherwise nothing changes and the answer is 412 `precondition_failed` with the record as stored and its ETag, to apply the change to and send again."
	if r.RequireIfMatch {
		d = "Required: a write without it is 428 `precondition_required`. " + d
	}
	return &openapi.Parameter{Name: "If-Match", In: "header", Required: r.RequireIfMatch, Description: d, Schema: &openapi.Schema{Type: "string"}}
}

// oaIfNoneMatch is the If-None-Match parameter of GET of a record.
func oaIfNoneMatch() *openapi.Parameter {
	return &openapi.Parameter{
		Name: "If-None-Match", In: "header",
		Description: "Answer 304 Not Modified, without a body, if the record is still a version this list of ETags names (weak comparison; `*` matches any record).",
		Schema:      &openapi.Schema{Type: "string"},
	}
}

// oaIdempotencyKey is the Idempotency-Key parameter of POST and PATCH.
func oaIdempotencyKey(g *Registry) *openapi.Parameter {
	return &openapi.Parameter{
		Name: "Idempotency-Key", In: "header",
		Description: "Makes a retry safe (draft-ietf-httpapi-idempotency-key-header): 1 to " + strconv.Itoa(maxIdempotencyKeyLen) + " visible ASCII characters, bare or quoted, a new one (a UUID, say) for each new write. " +
			"The answer of a successful write is kept " + oaDuration(g.idempotencyTTL()) + " for the token's client in the token's organization: the same request with the same key gets it again, with `Idempotent-Replayed: true`, without writing again and without counting against the rate limit; " +
			"another request with the key gets 422 `idempotency_key_reused`; a request that waits for the first one with its key past its deadline gets 409 `idempotency_in_progress`. A refused write keeps nothing.",
		Schema: &openapi.Schema{Type: "string", MinLength: openapi.Ptr(1), MaxLength: openapi.Ptr(maxIdempotencyKeyLen)},
	}
}

// oaDuration says d in words: "24 hours", "90 minutes".
func oaDuration(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return strconv.Itoa(int(d/time.Hour)) + " hours"
	case d%time.Minute == 0:
		return strconv.Itoa(int(d/time.Minute)) + " minutes"
	}
	return d.String()
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
		Description: "Return only these fields of each record, separated by commas (`id` always comes back): " + strings.Join(names, ", ") + ". An unknown field gives 400 `invalid_request`. The `ETag` stays the version of the whole record.",
		Schema:      &openapi.Schema{Type: "array", Items: &openapi.Schema{Type: "string", Enum: oaAnys(names)}},
	}
}

func oaAnys(s []string) []any {
	out := make([]any, len(s))
	for i, v := range s {
		out[i] = v
	}
	return out
}

// oaNotModified is the 304 of GET of a record.
func oaNotModified() *openapi.Response {
	return &openapi.Response{
		Description: "The record is still the version `If-None-Match` names. No body.",
		Headers:     map[string]*openapi.Header{"ETag": openapi.HeaderRef("ETag")},
	}
}

// oaPreconditionFailed is the 412 of PATCH and DELETE of r: the error and
// the record as stored.
func oaPreconditionFailed(n oaNames) *openapi.Response {
	schema := openapi.Object([]string{"error", "error_description", "data", "version"},
		openapi.Prop("error", &openapi.Schema{Type: "string", Const: apierrors.CodePreconditionFailed}),
		openapi.Prop("error_description", openapi.String("What happened and what to do.")),
		openapi.Prop("data", openapi.SchemaRef(n.schema)),
		openapi.Prop("version", &openapi.Schema{Type: "string", Const: Version}))
	return &openapi.Response{
		Description: "`precondition_failed`: `If-Match` names another version of the record. Nothing changed; `data` is the record as stored and `ETag` its version.",
		Headers:     map[string]*openapi.Header{"ETag": openapi.HeaderRef("ETag")},
		Content:     openapi.JSON(schema),
	}
}

// oaPreconditionRequired is the 428 of a resource that requires If-Match.
func oaPreconditionRequired() *openapi.Response {
	return openapi.ErrorResponse("`precondition_required`: this resource takes writes only with `If-Match`.",
		oaErr(apierrors.CodePreconditionRequired, "this resource requires If-Match: send the ETag of the record as you last read it"))
}

// oaIdempotencyConflict is the 409 of POST and PATCH.
func oaIdempotencyConflict() *openapi.Response {
	return openapi.ErrorResponse("`idempotency_in_progress`: the first request with this `Idempotency-Key` was still being served when this one's deadline came. Retry once it has been answered.",
		oaErr(apierrors.CodeIdempotencyInProgress, "a request with this Idempotency-Key is still being served; retry once it has been answered"))
}

// oaIdempotencyReused is the 422 of POST and PATCH.
func oaIdempotencyReused() *openapi.Response {
	return openapi.ErrorResponse("`idempotency_key_reused`: this `Idempotency-Key` was used for another request (another method, record or body). Nothing changed.",
		oaErr(apierrors.CodeIdempotencyKeyReused, "this Idempotency-Key was used for another request; nothing was changed"))
}
