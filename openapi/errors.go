package openapi

import "strconv"

// The error model every Waybill endpoint shares: the Error schema, the
// responses made of it, and the headers of challenges, rate limits and
// credentials. A section declares what it uses under these names; merged
// sections thus declare each once.

// ErrorExample is an example of an error response: its code and
// error_description.
type ErrorExample struct {
	Code, Description string
}

// ErrorSchema returns the schema component "Error": the body of every error
// response, {"error": code, "error_description": text}.
func ErrorSchema() *Schema {
	s := Object([]string{"error", "error_description"},
		Prop("error", String("The error code: one of the codes in the description of the API (RFC 6749 section 5.2 codes on the OAuth endpoints).")),
		Prop("error_description", String("What went wrong, for people: safe to show, never a secret.")),
		Prop("errors", &Schema{Type: "array", Description: "With `invalid_batch`, and `conflict` of a batch: the refused items of the batch, each with its place in the batch (from 0) and the code and description its write alone would get.",
			Items: Object([]string{"index", "error", "error_description"},
				Prop("index", &Schema{Type: "integer", Format: "int32", Minimum: Ptr(0.0), Description: "The item's place in the batch, from 0."}),
				Prop("error", String("The item's error code.")),
				Prop("error_description", String("Why the item was refused.")))}))
	s.Description = "Every error response of the API and of the OAuth endpoints."
	return s
}

// ErrorResponse returns an error response with the Error schema (which the
// document must declare) and an example of each of examples, named by its
// code.
func ErrorResponse(description string, examples ...ErrorExample) *Response {
	mt := &MediaType{Schema: SchemaRef("Error")}
	if len(examples) > 0 {
		mt.Examples = map[string]*Example{}
		for _, e := range examples {
			mt.Examples[e.Code] = &Example{
				Summary: e.Code,
				Value:   map[string]string{"error": e.Code, "error_description": e.Description},
			}
		}
	}
	return &Response{Description: description, Content: map[string]*MediaType{"application/json": mt}}
}

// RateLimitedResponse returns the response component "RateLimited": 429
// rate_limited with Retry-After and the RateLimit headers.
func RateLimitedResponse() *Response {
	return WithHeaders(ErrorResponse("`rate_limited`: the rate limit of the route is spent. `Retry-After` says, in whole seconds, when the next request may pass.",
		ErrorExample{"rate_limited", "rate limit exceeded; retry in 2 s"}), "Retry-After", "RateLimit-Policy", "RateLimit")
}

// UnavailableResponse returns the response component "Unavailable": 503
// temporarily_unavailable with Retry-After, the answer of any endpoint
// that needs a service (its database, a shared rate limit store) that did
// not answer within the server's bound, or that is busy.
func UnavailableResponse() *Response {
	return WithHeaders(ErrorResponse("`temporarily_unavailable`: the server could not serve the request in time: its database, or another service it depends on, is unreachable or overloaded, or too many requests of this kind wait already. "+
		"Retry after the `Retry-After` seconds; retry a write with the same `Idempotency-Key` where the operation takes one, so that it is made once.",
		ErrorExample{"temporarily_unavailable", "a service this server depends on is not reachable; retry later"}), "Retry-After")
}

// ServerErrorResponse returns the response component "ServerError": 500
// server_error.
func ServerErrorResponse() *Response {
	return ErrorResponse("`server_error`: the server failed; the description says nothing more, and the failure is logged.",
		ErrorExample{"server_error", "internal server error"})
}

// PayloadTooLargeResponse returns a 413 payload_too_large response for
// bodies larger than limit bytes.
func PayloadTooLargeResponse(limit int) *Response {
	return ErrorResponse("`payload_too_large`: the request body is larger than "+strconv.Itoa(limit)+" bytes.",
		ErrorExample{"payload_too_large", "request body is larger than " + strconv.Itoa(limit) + " bytes"})
}

// Headers returns the header components every Waybill endpoint may use:
// ETag and Idempotent-Replayed (of safe writes), WWW-Authenticate (the RFC 6750 challenge of a 401), ScopeChallenge (the
// challenge of insufficient_scope), Retry-After, RateLimit-Policy and
// RateLimit (draft-ietf-httpapi-ratelimit-headers-11), and Cache-Control
// (no-store, for responses with credentials).
func Headers() map[string]*Header {
	return map[string]*Header{
		"ETag": {
			Description: "The record's version: a strong entity tag that changes with every write of the record (RFC 9110 section 8.8.3). Send it in `If-Match` to write only that version, or in `If-None-Match` to read only a newer one.",
			Schema:      &Schema{Type: "string", Examples: []any{`"dGhlIHJlY29yZCB2ZXJzaW9u"`}}, Required: true,
		},
		"Idempotent-Replayed": {
			Description: "`true` on the stored answer that a request repeating an `Idempotency-Key` gets; absent on the first answer.",
			Schema:      &Schema{Type: "string", Const: "true"},
		},
		"WWW-Authenticate": {
			Description: "The RFC 6750 challenge: `Bearer realm=\"...\"` for a missing token (the `realm` names the server's protection space, when it has one); with `error` and `error_description`, and for `insufficient_scope` the `scope` needed, otherwise. The challenges of an API that publishes its protected resource metadata (RFC 9728) end with `resource_metadata=\"<URL of the metadata>\"`, where a client finds the authorization servers and scopes of the API.",
			Schema:      &Schema{Type: "string"}, Required: true,
		},
		"ScopeChallenge": {
			Description: "With `insufficient_scope` only: the RFC 6750 challenge `Bearer realm=\"...\", error=\"insufficient_scope\", error_description=\"...\"`, with the `scope` needed when a scope is missing, and `resource_metadata` (RFC 9728) last when the API publishes its metadata.",
			Schema:      &Schema{Type: "string"},
		},
		"Retry-After": {
			Description: "Seconds until the next request may pass, rounded up; at least 1.",
			Schema:      &Schema{Type: "integer", Format: "int32", Minimum: Ptr(1.0)}, Required: true,
		},
		"RateLimit-Policy": {
			Description: "The limits of the route (draft-ietf-httpapi-ratelimit-headers-11): `\"<name>\";q=<quota>;w=<window seconds>`, comma-separated when the request counts under several (an organization's and its app's). Set on every response of a rate-limited route.",
			Schema:      &Schema{Type: "string", Examples: []any{`"rest";q=1000;w=60`, `"rest";q=1000;w=60, "rest-app";q=500;w=60`}},
		},
		"RateLimit": {
			Description: "The state of the caller's limit (draft-ietf-httpapi-ratelimit-headers-11): `\"<name>\";r=<remaining>;t=<seconds until the quota is back>`; of the tightest one, under several (the one that refused the request, or the one with the fewest requests remaining). Set on every response of a rate-limited route.",
			Schema:      &Schema{Type: "string", Examples: []any{`"rest";r=998;t=1`}},
		},
		"Cache-Control": {
			Description: "`no-store`: responses with credentials must not be cached.",
			Schema:      &Schema{Type: "string", Const: "no-store"}, Required: true,
		},
	}
}
