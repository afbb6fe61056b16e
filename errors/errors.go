// Package errors is Waybill's API error model: one error value with a code,
// an HTTP status and a description, a single table from code to status, and
// one writer that turns any error into the JSON body every Waybill endpoint
// answers with:
//
//	{"error": "invalid_request", "error_description": "filter on \"status\": ..."}
//
// The package is named after what it holds, beside the standard library's
// errors package. Import it as apierrors, the same alias in every file:
//
//	import apierrors "github.com/waybillhq/waybill/errors"
//
//	return apierrors.NotFound("no quotation %s", id)
//
// Errors that are not an *Error are judged by what they are (see From): a
// client that went away is logged with status 499; a deadline that passed, a
// database that cannot be reached or a SQLite database that another
// connection keeps locked is 503 temporarily_unavailable with Retry-After;
// anything else (a bug, say) is 500 server_error with a fixed
// description. Their text is logged, never sent.
//
// A Writer writes the answers: it logs to the logger it is given and names
// its realm in the WWW-Authenticate challenges of 401s and insufficient_scope.
// The components of the module that answer requests (oauth.Server,
// tenancy.Options, resource.Registry, ratelimit.Options) take a Logger and,
// where they challenge, a Realm, and build their Writer from them; the
// package-level Write is the zero Writer, for a host's own handlers.
package errors

import (
	"errors"
	"fmt"
	"net/http"
	"slices"
	"strings"
)

// The codes of the API: every error a Waybill endpoint answers with.
const (
	CodeInvalidRequest    = "invalid_request"
	CodeInvalidCreate     = "invalid_create"
	CodeCreateFailed      = "create_failed"
	CodeInvalidUpdate     = "invalid_update"
	CodeUnauthorized      = "unauthorized"
	CodeInvalidToken      = "invalid_token"
	CodeInvalidTokenType  = "invalid_token_type"
	CodeInsufficientScope = "insufficient_scope"
	CodeNotFound          = "not_found"
	CodeConflict          = "conflict"
	CodeMethodNotAllowed  = "method_not_allowed"
	CodePayloadTooLarge   = "payload_too_large"
	CodeUnsupportedMedia  = "unsupported_media_type"
	CodeRateLimited       = "rate_limited"
	CodeServerError       = "server_error"
	CodeUnavailable       = "temporarily_unavailable"
	// CodePreconditionFailed is RFC 9110's 412: an If-Match that names
	// another version of the record than the stored one.
	CodePreconditionFailed = "precondition_failed"
	// CodePreconditionRequired is RFC 6585's 428: a write without the
	// If-Match that the resource requires.
	CodePreconditionRequired = "precondition_required"
	// CodeIdempotencyKeyReused is a 422 for an Idempotency-Key sent again
	// with another request than the first.
	CodeIdempotencyKeyReused = "idempotency_key_reused"
	// CodeIdempotencyInProgress is a 409 for an Idempotency-Key sent again
	// while the first request with it is still being served.
	CodeIdempotencyInProgress = "idempotency_in_progress"
	// CodeCursorExpired is a 410 for a change-feed cursor older than what
	// the feed still keeps: the events after it were removed.
	CodeCursorExpired = "cursor_expired"
	// CodeInvalidBatch is a 400 for a batch write refused as a whole: an
	// empty batch, one over the bounds, or one with refused items, which
	// Error.Items names (see InvalidBatch).
	CodeInvalidBatch = "invalid_batch"
	// CodeClientClosed is no answer a client sees: it marks, in logs and
	// metrics, a request whose client went away before the answer.
	CodeClientClosed = "client_closed_request"
)

// StatusClientClosedRequest is the status logged for a request whose client
// went away (its context was cancelled) before the answer: nginx's 499,
// which Go's ecosystem uses for the same case. No client ever reads it.
const StatusClientClosedRequest = 499

// The codes of the OAuth 2.1 endpoints (RFC 6749 sections 4.1.2.1 and 5.2,
// and RFC 7009 section 2.2.1 for revocation). invalid_request and
// server_error are shared with the API codes above.
const (
	CodeInvalidClient           = "invalid_client"
	CodeInvalidGrant            = "invalid_grant"
	CodeUnauthorizedClient      = "unauthorized_client"
	CodeUnsupportedGrantType    = "unsupported_grant_type"
	CodeInvalidScope            = "invalid_scope"
	CodeAccessDenied            = "access_denied"
	CodeUnsupportedResponseType = "unsupported_response_type"
	CodeUnsupportedTokenType    = "unsupported_token_type"
	// CodeInvalidTarget is RFC 8707's: a resource indicator the server
	// does not issue tokens for.
	CodeInvalidTarget = "invalid_target"
	// CodeInvalidRedirectURI and CodeInvalidClientMetadata are RFC 7591's
	// (Dynamic Client Registration, section 3.2.2): a redirect URI, or
	// another field of a client's metadata, that the server refuses.
	CodeInvalidRedirectURI    = "invalid_redirect_uri"
	CodeInvalidClientMetadata = "invalid_client_metadata"
)

// statuses is the one table from code to HTTP status.
var statuses = map[string]int{
	CodeInvalidRequest:          http.StatusBadRequest,
	CodeInvalidCreate:           http.StatusBadRequest,
	CodeCreateFailed:            http.StatusBadRequest,
	CodeInvalidUpdate:           http.StatusBadRequest,
	CodeUnauthorized:            http.StatusUnauthorized,
	CodeInvalidToken:            http.StatusUnauthorized,
	CodeInvalidTokenType:        http.StatusForbidden,
	CodeInsufficientScope:       http.StatusForbidden,
	CodeNotFound:                http.StatusNotFound,
	CodeConflict:                http.StatusConflict,
	CodeMethodNotAllowed:        http.StatusMethodNotAllowed,
	CodePayloadTooLarge:         http.StatusRequestEntityTooLarge,
	CodeUnsupportedMedia:        http.StatusUnsupportedMediaType,
	CodeRateLimited:             http.StatusTooManyRequests,
	CodeServerError:             http.StatusInternalServerError,
	CodeUnavailable:             http.StatusServiceUnavailable,
	CodePreconditionFailed:      http.StatusPreconditionFailed,
	CodePreconditionRequired:    http.StatusPreconditionRequired,
	CodeIdempotencyKeyReused:    http.StatusUnprocessableEntity,
	CodeIdempotencyInProgress:   http.StatusConflict,
	CodeCursorExpired:           http.StatusGone,
	CodeInvalidBatch:            http.StatusBadRequest,
	CodeClientClosed:            StatusClientClosedRequest,
	CodeInvalidClient:           http.StatusUnauthorized,
	CodeInvalidGrant:            http.StatusBadRequest,
	CodeUnauthorizedClient:      http.StatusBadRequest,
	CodeUnsupportedGrantType:    http.StatusBadRequest,
	CodeInvalidScope:            http.StatusBadRequest,
	CodeAccessDenied:            http.StatusForbidden,
	CodeUnsupportedResponseType: http.StatusBadRequest,
	CodeUnsupportedTokenType:    http.StatusBadRequest,
	CodeInvalidTarget:           http.StatusBadRequest,
	CodeInvalidRedirectURI:      http.StatusBadRequest,
	CodeInvalidClientMetadata:   http.StatusBadRequest,
}

// Status returns the HTTP status of an error code: the one table every
// Waybill package answers from. An unknown code is a 500.
func Status(code string) int {
	if s, ok := statuses[code]; ok {
		return s
	}
	return http.StatusInternalServerError
}

// Error is an API error: a code from the table above, the HTTP status that
// goes with it, a description safe to show to the client, and the response
// headers the code calls for (WWW-Authenticate, Allow, Retry-After).
//
// An Error may wrap a cause (see Wrap) for logs and errors.Is; the cause is
// never sent to the client.
type Error struct {
	// Code is the machine-readable error code, sent as "error".
	Code string
	// Status is the HTTP status code.
	Status int
	// Description is the human-readable text, sent as "error_description".
	Description string
	// Header holds response headers that go with this error. Nil for most.
	Header http.Header
	// Items are the refusals of the items of a batch write, sent as
	// "errors" (see InvalidBatch); nil for every other error, which sends
	// no "errors" member.
	Items []ItemError

	cause error
	scope string // the scope named in an insufficient_scope challenge
}

// New returns an Error with the given code, its status from the table, and a
// description formatted from format and args.
func New(code, format string, args ...any) *Error {
	return &Error{Code: code, Status: Status(code), Description: describe(format, args)}
}

func describe(format string, args []any) string {
	if len(args) == 0 {
		return format
	}
	return fmt.Sprintf(format, args...)
}

// Error returns "code: description".
func (e *Error) Error() string {
	if e.Description == "" {
		return e.Code
	}
	return e.Code + ": " + e.Description
}

// Unwrap returns the cause given to Wrap, if any.
func (e *Error) Unwrap() error { return e.cause }

// Is reports whether target is an *Error with the same code, so that
// errors.Is(err, apierrors.NotFound("")) matches any not_found error.
func (e *Error) Is(target error) bool {
	t, ok := target.(*Error)
	return ok && t.Code == e.Code
}

// Wrap returns a copy of e that carries cause for logs and errors.Is/As.
// The cause is never shown to a client.
func (e *Error) Wrap(cause error) *Error {
	c := e.clone()
	c.cause = cause
	return c
}

// WithDescription returns a copy of e with a new description. The
// WWW-Authenticate challenge of invalid_token and insufficient_scope, which
// repeats the description, follows it.
func (e *Error) WithDescription(format string, args ...any) *Error {
	c := e.clone()
	c.Description = describe(format, args)
	if c.Code == CodeInvalidToken || c.Code == CodeInsufficientScope {
		c.Header.Set("Www-Authenticate", bearerChallenge(c.Code, c.Description, c.scope))
	}
	return c
}

// WithHeader returns a copy of e that also sends header key with value.
func (e *Error) WithHeader(key, value string) *Error {
	c := e.clone()
	c.Header.Set(key, value)
	return c
}

func (e *Error) clone() *Error {
	c := *e
	c.Header = e.Header.Clone()
	if c.Header == nil {
		c.Header = http.Header{}
	}
	return &c
}

// As returns the *Error in err's chain, if there is one.
func As(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}

// CodeOf returns the code of the *Error in err's chain, server_error for any
// other non-nil error, and "" for nil.
func CodeOf(err error) string {
	if err == nil {
		return ""
	}
	if e, ok := As(err); ok {
		return e.Code
	}
	return CodeServerError
}

// HasCode reports whether err's chain holds an *Error with the given code.
func HasCode(err error, code string) bool {
	e, ok := As(err)
	return ok && e.Code == code
}

// InvalidRequest is a 400 for a malformed request: a bad query parameter, a
// body that is not a JSON object, a missing Content-Type.
func InvalidRequest(format string, args ...any) *Error {
	return New(CodeInvalidRequest, format, args...)
}

// InvalidCreate is a 400 for a POST body that fails validation.
func InvalidCreate(format string, args ...any) *Error {
	return New(CodeInvalidCreate, format, args...)
}

// CreateFailed is a 400 for a POST the database refused (a foreign key to no
// record of this tenant, a duplicate).
func CreateFailed(format string, args ...any) *Error {
	return New(CodeCreateFailed, format, args...)
}

// InvalidUpdate is a 400 for a PATCH body that fails validation or that the
// database refused.
func InvalidUpdate(format string, args ...any) *Error {
	return New(CodeInvalidUpdate, format, args...)
}

// PreconditionFailed is a 412 for a conditional write whose If-Match names
// a version of the record other than the stored one.
func PreconditionFailed(format string, args ...any) *Error {
	return New(CodePreconditionFailed, format, args...)
}

// PreconditionRequired is a 428 for a write without the If-Match that the
// resource requires.
func PreconditionRequired(format string, args ...any) *Error {
	return New(CodePreconditionRequired, format, args...)
}

// Unauthorized is a 401 for a request without credentials. Per RFC 6750
// section 3.1 its challenge carries no error code.
func Unauthorized(format string, args ...any) *Error {
	e := New(CodeUnauthorized, format, args...)
	e.Header = http.Header{"Www-Authenticate": {"Bearer"}}
	return e
}

// InvalidToken is a 401 for a bearer token that is malformed, badly signed,
// expired, or meant for another audience.
func InvalidToken(format string, args ...any) *Error {
	e := New(CodeInvalidToken, format, args...)
	e.Header = http.Header{"Www-Authenticate": {bearerChallenge(CodeInvalidToken, e.Description, "")}}
	return e
}

// InvalidTokenType is a 403 for a valid token of the wrong kind: a product
// user token where an OAuth access token is required.
func InvalidTokenType(format string, args ...any) *Error {
	return New(CodeInvalidTokenType, format, args...)
}

// InsufficientScope is a 403 for a token that lacks the scope a call needs,
// or that may not use the branch it names. scope, when not empty, is the
// scope the call needs and is named in the WWW-Authenticate challenge.
func InsufficientScope(scope, format string, args ...any) *Error {
	e := New(CodeInsufficientScope, format, args...)
	e.scope = scope
	e.Header = http.Header{"Www-Authenticate": {bearerChallenge(CodeInsufficientScope, e.Description, scope)}}
	return e
}

// NotFound is a 404. It is also the answer for another tenant's ids, so that
// no response reveals whether they exist.
func NotFound(format string, args ...any) *Error {
	return New(CodeNotFound, format, args...)
}

// Conflict is a 409 for a write the current state forbids, such as
// deleting a record that others still refer to.
func Conflict(format string, args ...any) *Error {
	return New(CodeConflict, format, args...)
}

// ItemError is the refusal of one item of a batch write: its place in the
// batch (from 0) and why it was refused, in the code and description an
// error of a single write would have.
type ItemError struct {
	Index       int    `json:"index"`
	Code        string `json:"error"`
	Description string `json:"error_description"`
}

// InvalidBatch returns the refusal of a whole batch write: 400
// invalid_batch with items as its "errors", or 409 conflict when items
// are all conflicts (a record with the same unique key exists). Items may
// be empty (an empty batch, one with too many items); the answer then
// sends "errors": [].
func InvalidBatch(items []ItemError, format string, args ...any) *Error {
	if items == nil {
		items = []ItemError{}
	}
	code := CodeInvalidBatch
	if len(items) > 0 && !slices.ContainsFunc(items, func(i ItemError) bool { return i.Code != CodeConflict }) {
		code = CodeConflict
	}
	e := New(code, format, args...)
	e.Items = items
	return e
}

// CursorExpired is a 410 for a change-feed cursor older than what the feed
// still keeps.
func CursorExpired(format string, args ...any) *Error {
	return New(CodeCursorExpired, format, args...)
}

// MethodNotAllowed is a 405 whose Allow header lists the allowed methods.
func MethodNotAllowed(allow ...string) *Error {
	e := New(CodeMethodNotAllowed, "method not allowed; allowed: %s", strings.Join(allow, ", "))
	e.Header = http.Header{"Allow": {strings.Join(allow, ", ")}}
	return e
}

// PayloadTooLarge is a 413 for a request body over the limit of limit bytes.
func PayloadTooLarge(limit int64) *Error {
	return New(CodePayloadTooLarge, "request body is larger than %d bytes", limit)
}

// RateLimited is a 429 whose Retry-After header tells, in whole seconds
// rounded up and at least 1, when the next request may pass.
func RateLimited(retryAfterSeconds int64) *Error {
	if retryAfterSeconds < 1 {
		retryAfterSeconds = 1
	}
	e := New(CodeRateLimited, "rate limit exceeded; retry in %d s", retryAfterSeconds)
	e.Header = http.Header{"Retry-After": {fmt.Sprint(retryAfterSeconds)}}
	return e
}

// Internal is a 500 that wraps cause for the log. Its description is fixed:
// nothing of cause reaches the client.
func Internal(cause error) *Error {
	e := New(CodeServerError, "internal server error")
	e.cause = cause
	return e
}

// Unavailable is a 503 temporarily_unavailable for a request the server
// cannot serve now: a dependency that is down or too slow, or overload. It
// asks the client to retry in a second (Retry-After: 1); WithHeader sets
// another delay.
func Unavailable(format string, args ...any) *Error {
	e := New(CodeUnavailable, format, args...)
	e.Header = http.Header{"Retry-After": {"1"}}
	return e
}

// ClientClosed marks a request whose client went away before the answer:
// its status is StatusClientClosedRequest (499), and Write logs it below the
// error level. cause is the cancellation, for the log.
func ClientClosed(cause error) *Error {
	e := New(CodeClientClosed, "the client closed the request before the answer")
	e.cause = cause
	return e
}

// InvalidClient is the 401 of RFC 6749 section 5.2 for a failed client
// authentication. scheme is the authentication scheme the client tried
// ("Basic" for HTTP Basic, "" for credentials in the body); RFC 6749 asks
// for a WWW-Authenticate header naming it. With no scheme the header names
// Basic, the scheme a client may use.
func InvalidClient(scheme, format string, args ...any) *Error {
	if scheme == "" {
		scheme = "Basic"
	}
	e := New(CodeInvalidClient, format, args...)
	e.Header = http.Header{"Www-Authenticate": {scheme}}
	return e
}

// InvalidGrant is RFC 6749's 400 for an authorization code or refresh token
// that is invalid, expired, revoked, spent, or bound to another client or
// redirect URI, and for a PKCE verifier that does not match.
func InvalidGrant(format string, args ...any) *Error {
	return New(CodeInvalidGrant, format, args...)
}

// UnauthorizedClient is RFC 6749's 400 for a client that may not use the
// grant type it asked for.
func UnauthorizedClient(format string, args ...any) *Error {
	return New(CodeUnauthorizedClient, format, args...)
}

// UnsupportedGrantType is RFC 6749's 400 for a grant type the server does
// not support.
func UnsupportedGrantType(format string, args ...any) *Error {
	return New(CodeUnsupportedGrantType, format, args...)
}

// InvalidScope is RFC 6749's 400 for a requested scope that is unknown,
// malformed, or beyond what the client may have.
func InvalidScope(format string, args ...any) *Error {
	return New(CodeInvalidScope, format, args...)
}

// InvalidTarget is RFC 8707's 400 for a resource indicator that is not an
// absolute URI, names a resource the server does not issue tokens for, or
// is not the one the grant was for.
func InvalidTarget(format string, args ...any) *Error {
	return New(CodeInvalidTarget, format, args...)
}

// InvalidRedirectURI is RFC 7591's 400 for a redirect URI a client may
// not register.
func InvalidRedirectURI(format string, args ...any) *Error {
	return New(CodeInvalidRedirectURI, format, args...)
}

// InvalidClientMetadata is RFC 7591's 400 for client metadata, other than
// a redirect URI, that the server refuses.
func InvalidClientMetadata(format string, args ...any) *Error {
	return New(CodeInvalidClientMetadata, format, args...)
}

// AccessDenied is RFC 6749's access_denied: the user or the server refused
// the authorization request.
func AccessDenied(format string, args ...any) *Error {
	return New(CodeAccessDenied, format, args...)
}

// UnsupportedResponseType is RFC 6749's error for an authorization request
// whose response_type is not "code".
func UnsupportedResponseType(format string, args ...any) *Error {
	return New(CodeUnsupportedResponseType, format, args...)
}

// UnsupportedTokenType is RFC 7009's 400 for a revocation request whose
// token is of a kind the server cannot revoke, such as an access token that
// lives until it expires.
func UnsupportedTokenType(format string, args ...any) *Error {
	return New(CodeUnsupportedTokenType, format, args...)
}

// bearerChallenge builds an RFC 6750 section 3 challenge, without the realm,
// which a Writer adds.
func bearerChallenge(code, description, scope string) string {
	var b strings.Builder
	b.WriteString(`Bearer error="`)
	b.WriteString(code)
	b.WriteByte('"')
	if description != "" {
		b.WriteString(`, error_description="`)
		b.WriteString(quotable(description))
		b.WriteByte('"')
	}
	if scope != "" {
		b.WriteString(`, scope="`)
		b.WriteString(quotable(scope))
		b.WriteByte('"')
	}
	return b.String()
}

// quotable keeps the characters RFC 6750 allows in a quoted attribute value
// (%x20-21 / %x23-5B / %x5D-7E) and drops the rest.
func quotable(s string) string {
	return strings.Map(func(r rune) rune {
		if r == 0x20 || r == 0x21 || (r >= 0x23 && r <= 0x5B) || (r >= 0x5D && r <= 0x7E) {
			return r
		}
		return -1
	}, s)
}
