package openapi

import (
	"strconv"
	"time"
)

// What safe writes share on every Waybill endpoint that has records: the
// strong ETag of a record, conditional requests with If-Match and
// If-None-Match, and Idempotency-Key. A section declares the header
// components of Headers (ETag, Idempotent-Replayed) and, under the names
// IdempotencyInProgress and IdempotencyKeyReused, the responses below;
// merged sections thus declare each once.

// IfMatchParameter returns the If-Match parameter of a PATCH or DELETE of
// a record; required adds that a write without it is 428.
func IfMatchParameter(required bool) *Parameter {
	d := "Write only if the record is still the version this ETag names (strong comparison; `*` matches any stored record). Otherwise nothing changes and the answer is 412 `precondition_failed` with the record as stored and its ETag, to apply the change to and send again."
	if required {
		d = "Required: a write without it is 428 `precondition_required`. " + d
	}
	return &Parameter{Name: "If-Match", In: "header", Required: required, Description: d, Schema: &Schema{Type: "string"}}
}

// IfNoneMatchParameter returns the If-None-Match parameter of a GET of a
// record.
func IfNoneMatchParameter() *Parameter {
	return &Parameter{
		Name: "If-None-Match", In: "header",
		Description: "Answer 304 Not Modified, without a body, if the record is still a version this list of ETags names (weak comparison; `*` matches any record).",
		Schema:      &Schema{Type: "string"},
	}
}

// IdempotencyKeyParameter returns the Idempotency-Key parameter of a POST
// or PATCH: keys of at most maxLen characters, whose answers are kept for
// kept.
func IdempotencyKeyParameter(maxLen int, kept time.Duration) *Parameter {
	return &Parameter{
		Name: "Idempotency-Key", In: "header",
		Description: "Makes a retry safe (draft-ietf-httpapi-idempotency-key-header): 1 to " + strconv.Itoa(maxLen) + " visible ASCII characters, bare or quoted, a new one (a UUID, say) for each new write. " +
			"The answer of a successful write is kept " + words(kept) + " for the token's client in the token's organization and, for a token that acts for a user, that user (another user's key of the same name is another key): the same request with the same key gets it again, with `Idempotent-Replayed: true`, without writing again; " +
			"another request with the key gets 422 `idempotency_key_reused`; a request that waits for the first one with its key past its deadline gets 409 `idempotency_in_progress`. A refused write keeps nothing. Every request counts against the rate limit, a replay too, and over the limit a replay is 429 like any request.",
		Schema: &Schema{Type: "string", MinLength: Ptr(1), MaxLength: Ptr(maxLen)},
	}
}

// words says d in words: "24 hours", "90 minutes".
func words(d time.Duration) string {
	switch {
	case d%time.Hour == 0:
		return strconv.Itoa(int(d/time.Hour)) + " hours"
	case d%time.Minute == 0:
		return strconv.Itoa(int(d/time.Minute)) + " minutes"
	}
	return d.String()
}

// NotModifiedResponse returns the 304 of a GET of a record.
func NotModifiedResponse() *Response {
	return &Response{
		Description: "The record is still the version `If-None-Match` names. No body.",
		Headers:     map[string]*Header{"ETag": HeaderRef("ETag")},
	}
}

// PreconditionFailedResponse returns the 412 of a PATCH or DELETE of a
// record: the error, and in data the record (of schema record) as stored,
// in an envelope of API version version.
func PreconditionFailedResponse(record *Schema, version string) *Response {
	schema := Object([]string{"error", "error_description", "data", "version"},
		Prop("error", &Schema{Type: "string", Const: "precondition_failed"}),
		Prop("error_description", String("What happened and what to do.")),
		Prop("data", record),
		Prop("version", &Schema{Type: "string", Const: version}))
	return &Response{
		Description: "`precondition_failed`: `If-Match` names another version of the record. Nothing changed; `data` is the record as stored and `ETag` its version.",
		Headers:     map[string]*Header{"ETag": HeaderRef("ETag")},
		Content:     JSON(schema),
	}
}

// IdempotencyInProgressResponse returns the response component
// "IdempotencyInProgress": the 409 of a write whose Idempotency-Key is
// still being served.
func IdempotencyInProgressResponse() *Response {
	return ErrorResponse("`idempotency_in_progress`: the first request with this `Idempotency-Key` was still being served when this one's deadline came. Retry once it has been answered.",
		ErrorExample{"idempotency_in_progress", "a request with this Idempotency-Key is still being served; retry once it has been answered"})
}

// IdempotencyKeyReusedResponse returns the response component
// "IdempotencyKeyReused": the 422 of a write whose Idempotency-Key was used
// for another request.
func IdempotencyKeyReusedResponse() *Response {
	return ErrorResponse("`idempotency_key_reused`: this `Idempotency-Key` was used for another request (another method, record or body). Nothing changed.",
		ErrorExample{"idempotency_key_reused", "this Idempotency-Key was used for another request; nothing was changed"})
}
