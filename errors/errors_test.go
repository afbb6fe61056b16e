package errors_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	apierrors "github.com/waybillhq/waybill/errors"
)

// responseBody is the JSON shape Write sends.
type responseBody struct {
	Error       string `json:"error"`
	Description string `json:"error_description"`
}

// write answers a request of method to target with err, through a Writer
// whose realm is "waybill" and whose log lines are dropped, and returns the
// recording.
func write(t *testing.T, method, target string, err error) *httptest.ResponseRecorder {
	t.Helper()
	rec, _ := writeLogged(t, method, target, err)
	return rec
}

// writeLogged is write that also returns the Writer's log lines, as JSON.
func writeLogged(t *testing.T, method, target string, err error) (*httptest.ResponseRecorder, *bytes.Buffer) {
	t.Helper()
	var logs bytes.Buffer
	rec := httptest.NewRecorder()
	w := apierrors.Writer{Logger: slog.New(slog.NewJSONHandler(&logs, nil)), Realm: "waybill"}
	w.Write(rec, httptest.NewRequest(method, target, nil), err)
	return rec, &logs
}

// logEntry parses logs as the one JSON line that Writer logged.
func logEntry(t *testing.T, logs *bytes.Buffer) map[string]any {
	t.Helper()
	var entry map[string]any
	if err := json.Unmarshal(logs.Bytes(), &entry); err != nil {
		t.Fatalf("json.Unmarshal(logs.Bytes(), &entry) = %v, want no error: log %q", err, logs.String())
	}
	return entry
}

// decode parses the recorded body as the error shape, rejecting unknown fields.
func decode(t *testing.T, rec *httptest.ResponseRecorder) responseBody {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(rec.Body.Bytes()))
	dec.DisallowUnknownFields()
	var b responseBody
	if err := dec.Decode(&b); err != nil {
		t.Fatalf("dec.Decode(&b) = %v, want no error: body %q", err, rec.Body.String())
	}
	return b
}

func TestStatus(t *testing.T) {
	t.Parallel()
	tests := []struct {
		code string
		want int
	}{
		{apierrors.CodeInvalidRequest, http.StatusBadRequest},
		{apierrors.CodeInvalidCreate, http.StatusBadRequest},
		{apierrors.CodeCreateFailed, http.StatusBadRequest},
		{apierrors.CodeInvalidUpdate, http.StatusBadRequest},
		{apierrors.CodeUnauthorized, http.StatusUnauthorized},
		{apierrors.CodeInvalidToken, http.StatusUnauthorized},
		{apierrors.CodeInvalidTokenType, http.StatusForbidden},
		{apierrors.CodeInsufficientScope, http.StatusForbidden},
		{apierrors.CodeNotFound, http.StatusNotFound},
		{apierrors.CodeConflict, http.StatusConflict},
		{apierrors.CodeMethodNotAllowed, http.StatusMethodNotAllowed},
		{apierrors.CodePayloadTooLarge, http.StatusRequestEntityTooLarge},
		{apierrors.CodeUnsupportedMedia, http.StatusUnsupportedMediaType},
		{apierrors.CodeRateLimited, http.StatusTooManyRequests},
		{apierrors.CodeServerError, http.StatusInternalServerError},
		{apierrors.CodeUnavailable, http.StatusServiceUnavailable},
		{apierrors.CodePreconditionFailed, http.StatusPreconditionFailed},
		{apierrors.CodePreconditionRequired, http.StatusPreconditionRequired},
		{apierrors.CodeIdempotencyKeyReused, http.StatusUnprocessableEntity},
		{apierrors.CodeIdempotencyInProgress, http.StatusConflict},
		{apierrors.CodeCursorExpired, http.StatusGone},
		{apierrors.CodeInvalidClient, http.StatusUnauthorized},
		{apierrors.CodeInvalidGrant, http.StatusBadRequest},
		{apierrors.CodeUnauthorizedClient, http.StatusBadRequest},
		{apierrors.CodeUnsupportedGrantType, http.StatusBadRequest},
		{apierrors.CodeInvalidScope, http.StatusBadRequest},
		{apierrors.CodeAccessDenied, http.StatusForbidden},
		{apierrors.CodeUnsupportedResponseType, http.StatusBadRequest},
		{apierrors.CodeUnsupportedTokenType, http.StatusBadRequest},
		{apierrors.CodeInvalidTarget, http.StatusBadRequest},
		{"no_such_code", http.StatusInternalServerError},
		{"", http.StatusInternalServerError},
	}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			t.Parallel()
			checkEqual(t, "apierrors.Status(tt.code)", apierrors.Status(tt.code), tt.want)
		})
	}
}

func TestConstructors(t *testing.T) {
	t.Parallel()
	cause := errors.New("cause")
	tests := []struct {
		name string
		err  *apierrors.Error
		code string
		desc string
	}{
		{"New", apierrors.New(apierrors.CodeInvalidScope, "scope %q", "x"), apierrors.CodeInvalidScope, `scope "x"`},
		{"InvalidRequest", apierrors.InvalidRequest("bad %s", "limit"), apierrors.CodeInvalidRequest, "bad limit"},
		{"InvalidCreate", apierrors.InvalidCreate("bad"), apierrors.CodeInvalidCreate, "bad"},
		{"CreateFailed", apierrors.CreateFailed("dup"), apierrors.CodeCreateFailed, "dup"},
		{"InvalidUpdate", apierrors.InvalidUpdate("bad"), apierrors.CodeInvalidUpdate, "bad"},
		{"Unauthorized", apierrors.Unauthorized("no token"), apierrors.CodeUnauthorized, "no token"},
		{"InvalidToken", apierrors.InvalidToken("expired"), apierrors.CodeInvalidToken, "expired"},
		{"InvalidTokenType", apierrors.InvalidTokenType("user token"), apierrors.CodeInvalidTokenType, "user token"},
		{"InsufficientScope", apierrors.InsufficientScope("svc:orders:read", "needs %s", "svc:orders:read"), apierrors.CodeInsufficientScope, "needs svc:orders:read"},
		{"NotFound", apierrors.NotFound("no order %d", 7), apierrors.CodeNotFound, "no order 7"},
		{"Conflict", apierrors.Conflict("still referenced by %d orders", 2), apierrors.CodeConflict, "still referenced by 2 orders"},
		{"MethodNotAllowed", apierrors.MethodNotAllowed("GET", "HEAD"), apierrors.CodeMethodNotAllowed, "method not allowed; allowed: GET, HEAD"},
		{"PayloadTooLarge", apierrors.PayloadTooLarge(1 << 20), apierrors.CodePayloadTooLarge, "request body is larger than 1048576 bytes"},
		{"RateLimited", apierrors.RateLimited(3), apierrors.CodeRateLimited, "rate limit exceeded; retry in 3 s"},
		{"Internal", apierrors.Internal(cause), apierrors.CodeServerError, "internal server error"},
		{"Unavailable", apierrors.Unavailable("database down"), apierrors.CodeUnavailable, "database down"},
		{"PreconditionFailed", apierrors.PreconditionFailed("stale"), apierrors.CodePreconditionFailed, "stale"},
		{"PreconditionRequired", apierrors.PreconditionRequired("If-Match needed"), apierrors.CodePreconditionRequired, "If-Match needed"},
		{"InvalidClient", apierrors.InvalidClient("Basic", "bad secret"), apierrors.CodeInvalidClient, "bad secret"},
		{"InvalidGrant", apierrors.InvalidGrant("spent"), apierrors.CodeInvalidGrant, "spent"},
		{"UnauthorizedClient", apierrors.UnauthorizedClient("no"), apierrors.CodeUnauthorizedClient, "no"},
		{"UnsupportedGrantType", apierrors.UnsupportedGrantType("password"), apierrors.CodeUnsupportedGrantType, "password"},
		{"InvalidScope", apierrors.InvalidScope("svc:x"), apierrors.CodeInvalidScope, "svc:x"},
		{"AccessDenied", apierrors.AccessDenied("denied"), apierrors.CodeAccessDenied, "denied"},
		{"UnsupportedResponseType", apierrors.UnsupportedResponseType("token"), apierrors.CodeUnsupportedResponseType, "token"},
		{"UnsupportedTokenType", apierrors.UnsupportedTokenType("access token"), apierrors.CodeUnsupportedTokenType, "access token"},
		// A format without args is used verbatim, % signs and all.
		{"verbatim format", apierrors.InvalidRequest("100% off"), apierrors.CodeInvalidRequest, "100% off"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			checkEqual(t, "tt.err.Code", tt.err.Code, tt.code)
			checkEqual(t, "tt.err.Status (status must come from the table)", tt.err.Status, apierrors.Status(tt.code))
			checkEqual(t, "tt.err.Description", tt.err.Description, tt.desc)
			checkEqual(t, "tt.err.Error()", tt.err.Error(), tt.code+": "+tt.desc)
		})
	}
}

func TestErrorString(t *testing.T) {
	t.Parallel()
	checkEqual(t, `apierrors.NotFound("").Error()`, apierrors.NotFound("").Error(), "not_found")
	checkEqual(t, `apierrors.NotFound("no order").Error()`, apierrors.NotFound("no order").Error(), "not_found: no order")
}

func TestWrite(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		err        error
		wantStatus int
		wantCode   string
		wantDesc   string
		wantHeader map[string]string // "" means the header must be absent
	}{
		{
			name:       "not found",
			err:        apierrors.NotFound("no quotation %s", "42"),
			wantStatus: http.StatusNotFound, wantCode: "not_found", wantDesc: "no quotation 42",
			wantHeader: map[string]string{"WWW-Authenticate": "", "Allow": "", "Retry-After": ""},
		},
		{
			name:       "unauthorized",
			err:        apierrors.Unauthorized("missing bearer token"),
			wantStatus: http.StatusUnauthorized, wantCode: "unauthorized", wantDesc: "missing bearer token",
			wantHeader: map[string]string{"WWW-Authenticate": `Bearer realm="waybill"`},
		},
		{
			name:       "invalid token",
			err:        apierrors.InvalidToken("token expired"),
			wantStatus: http.StatusUnauthorized, wantCode: "invalid_token", wantDesc: "token expired",
			wantHeader: map[string]string{
				"WWW-Authenticate": `Bearer realm="waybill", error="invalid_token", error_description="token expired"`,
			},
		},
		{
			name:       "insufficient scope",
			err:        apierrors.InsufficientScope("svc:orders:read", "missing scope"),
			wantStatus: http.StatusForbidden, wantCode: "insufficient_scope", wantDesc: "missing scope",
			wantHeader: map[string]string{
				"WWW-Authenticate": `Bearer realm="waybill", error="insufficient_scope", error_description="missing scope", scope="svc:orders:read"`,
			},
		},
		{
			name:       "insufficient scope without scope",
			err:        apierrors.InsufficientScope("", "branch not allowed"),
			wantStatus: http.StatusForbidden, wantCode: "insufficient_scope", wantDesc: "branch not allowed",
			wantHeader: map[string]string{
				"WWW-Authenticate": `Bearer realm="waybill", error="insufficient_scope", error_description="branch not allowed"`,
			},
		},
		{
			name:       "invalid token type has no challenge",
			err:        apierrors.InvalidTokenType("product user token"),
			wantStatus: http.StatusForbidden, wantCode: "invalid_token_type", wantDesc: "product user token",
			wantHeader: map[string]string{"WWW-Authenticate": ""},
		},
		{
			name:       "invalid client basic",
			err:        apierrors.InvalidClient("Basic", "client authentication failed"),
			wantStatus: http.StatusUnauthorized, wantCode: "invalid_client", wantDesc: "client authentication failed",
			wantHeader: map[string]string{"WWW-Authenticate": `Basic realm="waybill"`},
		},
		{
			name:       "invalid client in body names Basic",
			err:        apierrors.InvalidClient("", "client authentication failed"),
			wantStatus: http.StatusUnauthorized, wantCode: "invalid_client", wantDesc: "client authentication failed",
			wantHeader: map[string]string{"WWW-Authenticate": `Basic realm="waybill"`},
		},
		{
			name:       "method not allowed",
			err:        apierrors.MethodNotAllowed("GET", "HEAD"),
			wantStatus: http.StatusMethodNotAllowed, wantCode: "method_not_allowed", wantDesc: "method not allowed; allowed: GET, HEAD",
			wantHeader: map[string]string{"Allow": "GET, HEAD"},
		},
		{
			name:       "rate limited",
			err:        apierrors.RateLimited(17),
			wantStatus: http.StatusTooManyRequests, wantCode: "rate_limited", wantDesc: "rate limit exceeded; retry in 17 s",
			wantHeader: map[string]string{"Retry-After": "17"},
		},
		{
			name:       "rate limited rounds up to one second",
			err:        apierrors.RateLimited(0),
			wantStatus: http.StatusTooManyRequests, wantCode: "rate_limited", wantDesc: "rate limit exceeded; retry in 1 s",
			wantHeader: map[string]string{"Retry-After": "1"},
		},
		{
			name:       "payload too large",
			err:        apierrors.PayloadTooLarge(1024),
			wantStatus: http.StatusRequestEntityTooLarge, wantCode: "payload_too_large", wantDesc: "request body is larger than 1024 bytes",
		},
		{
			name:       "wrapped with %w",
			err:        fmt.Errorf("get quotation: %w", apierrors.NotFound("no quotation")),
			wantStatus: http.StatusNotFound, wantCode: "not_found", wantDesc: "no quotation",
		},
		{
			name:       "wrapped twice keeps headers",
			err:        fmt.Errorf("a: %w", fmt.Errorf("b: %w", apierrors.MethodNotAllowed("GET"))),
			wantStatus: http.StatusMethodNotAllowed, wantCode: "method_not_allowed", wantDesc: "method not allowed; allowed: GET",
			wantHeader: map[string]string{"Allow": "GET"},
		},
		{
			name:       "literal without status uses the table",
			err:        &apierrors.Error{Code: apierrors.CodeInvalidRequest, Description: "bad"},
			wantStatus: http.StatusBadRequest, wantCode: "invalid_request", wantDesc: "bad",
		},
		{
			name:       "with header",
			err:        apierrors.NotFound("gone").WithHeader("Cache-Control", "no-store"),
			wantStatus: http.StatusNotFound, wantCode: "not_found", wantDesc: "gone",
			wantHeader: map[string]string{"Cache-Control": "no-store"},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := write(t, http.MethodGet, "/v1/x/quotations/42", tt.err)
			checkEqual(t, "rec.Code", rec.Code, tt.wantStatus)
			checkEqual(t, `rec.Header().Get("Content-Type")`, rec.Header().Get("Content-Type"), "application/json")
			checkEqual(t, `rec.Header().Get("X-Content-Type-Options")`, rec.Header().Get("X-Content-Type-Options"), "nosniff")
			for k, v := range tt.wantHeader {
				if v == "" {
					if got := rec.Header().Values(k); len(got) != 0 {
						t.Errorf("header %s = %q, want none", k, got)
					}
				} else {
					checkEqual(t, "header "+k, rec.Header().Values(k), []string{v})
				}
			}
			b := decode(t, rec)
			checkEqual(t, "b.Error", b.Error, tt.wantCode)
			checkEqual(t, "b.Description", b.Description, tt.wantDesc)
		})
	}
}

func TestWriteOverridesStaleHeaders(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	rec.Header().Set("Content-Type", "text/html")
	rec.Header().Set("Content-Length", "9999")
	apierrors.Write(rec, httptest.NewRequest(http.MethodGet, "/", nil), apierrors.NotFound("x"))
	checkEqual(t, `rec.Header().Get("Content-Type")`, rec.Header().Get("Content-Type"), "application/json")
	if got := rec.Header().Get("Content-Length"); got != "" {
		t.Errorf("Content-Length = %q, want none: a stale length is dropped", got)
	}
}

func TestWriteHEADHasNoBody(t *testing.T) {
	t.Parallel()
	rec := write(t, http.MethodHead, "/v1/x/orders", apierrors.RateLimited(5))
	checkEqual(t, "rec.Code", rec.Code, http.StatusTooManyRequests)
	checkEqual(t, `rec.Header().Get("Content-Type")`, rec.Header().Get("Content-Type"), "application/json")
	checkEqual(t, `rec.Header().Get("Retry-After")`, rec.Header().Get("Retry-After"), "5")
	if rec.Body.Len() != 0 {
		t.Errorf("HEAD body = %q, want none", rec.Body.String())
	}
}

func TestWriteServerErrors(t *testing.T) {
	t.Parallel()
	t.Run("plain error is a 500 that hides its text and is logged", func(t *testing.T) {
		rec, logs := writeLogged(t, http.MethodPost, "/v1/x/orders?access_token=tok-secret", errors.New("db password=hunter2"))

		checkEqual(t, "rec.Code", rec.Code, http.StatusInternalServerError)
		checkEqual(t, `rec.Header().Get("Content-Type")`, rec.Header().Get("Content-Type"), "application/json")
		checkNotContains(t, "rec.Body.String()", rec.Body.String(), "hunter2")
		checkEqual(t, "decode(t, rec)", decode(t, rec), responseBody{Error: "server_error", Description: "internal server error"})

		entry := logEntry(t, logs)
		checkEqual(t, `entry["level"]`, entry["level"], "ERROR")
		checkEqual(t, `entry["method"]`, entry["method"], "POST")
		checkEqual(t, `entry["path"]`, entry["path"], "/v1/x/orders")
		checkEqual(t, `entry["status"]`, entry["status"], float64(http.StatusInternalServerError))
		checkEqual(t, `entry["error"]`, entry["error"], "db password=hunter2")
		checkNotContains(t, "logs.String() (the query string is never logged)", logs.String(), "tok-secret")
	})

	t.Run("wrapped plain error", func(t *testing.T) {
		rec, logs := writeLogged(t, http.MethodGet, "/", fmt.Errorf("list: %w", errors.New("connection refused")))
		checkEqual(t, "rec.Code", rec.Code, http.StatusInternalServerError)
		checkEqual(t, "decode(t, rec).Error", decode(t, rec).Error, "server_error")
		checkNotContains(t, "rec.Body.String()", rec.Body.String(), "connection refused")
		checkContains(t, "logs.String()", logs.String(), "connection refused")
	})

	t.Run("Internal hides its cause and logs it", func(t *testing.T) {
		rec, logs := writeLogged(t, http.MethodGet, "/", apierrors.Internal(errors.New("secret cause")))
		checkEqual(t, "rec.Code", rec.Code, http.StatusInternalServerError)
		checkNotContains(t, "rec.Body.String()", rec.Body.String(), "secret cause")

		entry := logEntry(t, logs)
		checkEqual(t, `entry["error"]`, entry["error"], "server_error: internal server error")
		checkEqual(t, `entry["cause"]`, entry["cause"], "secret cause")
	})

	t.Run("cause of a wrapped 503 is logged", func(t *testing.T) {
		err := fmt.Errorf("ready: %w", apierrors.Unavailable("database unreachable").Wrap(errors.New("dial tcp: refused")))
		rec, logs := writeLogged(t, http.MethodGet, "/readyz", err)
		checkEqual(t, "rec.Code", rec.Code, http.StatusServiceUnavailable)
		checkNotContains(t, "rec.Body.String()", rec.Body.String(), "refused")
		checkContains(t, "logs.String()", logs.String(), `"cause":"dial tcp: refused"`)
	})

	t.Run("503 is logged", func(t *testing.T) {
		rec, logs := writeLogged(t, http.MethodGet, "/readyz", apierrors.Unavailable("database unreachable"))
		checkEqual(t, "rec.Code", rec.Code, http.StatusServiceUnavailable)
		checkEqual(t, "decode(t, rec)", decode(t, rec), responseBody{Error: "temporarily_unavailable", Description: "database unreachable"})
		checkContains(t, "logs.String()", logs.String(), `"path":"/readyz"`)
	})

	t.Run("4xx is not logged", func(t *testing.T) {
		rec, logs := writeLogged(t, http.MethodGet, "/", apierrors.NotFound("no order"))
		checkEqual(t, "rec.Code", rec.Code, http.StatusNotFound)
		if logs.Len() != 0 {
			t.Errorf("logs = %q, want none for a 4xx", logs.String())
		}
	})

	t.Run("HEAD of a 500 has no body", func(t *testing.T) {
		rec := write(t, http.MethodHead, "/", errors.New("boom"))
		checkEqual(t, "rec.Code", rec.Code, http.StatusInternalServerError)
		if rec.Body.Len() != 0 {
			t.Errorf("HEAD body = %q, want none", rec.Body.String())
		}
	})
}

func TestIsAndAsSeeThroughWrapping(t *testing.T) {
	t.Parallel()
	cause := errors.New("no rows")
	inner := apierrors.NotFound("no quotation 42").Wrap(cause)
	err := fmt.Errorf("handler: %w", fmt.Errorf("store: %w", inner))

	t.Run("errors.Is matches by code", func(t *testing.T) {
		if !errors.Is(err, apierrors.NotFound("")) {
			t.Errorf("errors.Is(err, apierrors.NotFound(\"\")) = false, want true")
		}
		if !errors.Is(err, &apierrors.Error{Code: apierrors.CodeNotFound}) {
			t.Errorf("errors.Is(err, &apierrors.Error{Code: apierrors.CodeNotFound}) = false, want true")
		}
		if errors.Is(err, apierrors.InvalidRequest("")) {
			t.Errorf("errors.Is(err, apierrors.InvalidRequest(\"\")) = true, want false")
		}
	})
	t.Run("errors.Is reaches the cause", func(t *testing.T) {
		if !errors.Is(err, cause) {
			t.Errorf("errors.Is(err, cause) = false, want true")
		}
		if !errors.Is(apierrors.Internal(cause), cause) {
			t.Errorf("errors.Is(apierrors.Internal(cause), cause) = false, want true")
		}
	})
	t.Run("errors.As", func(t *testing.T) {
		var e *apierrors.Error
		if !errors.As(err, &e) {
			t.Fatalf("errors.As(%v, *apierrors.Error) = false, want true", err)
		}
		if e != inner {
			t.Errorf("e = %p, want the same pointer as inner, %p", e, inner)
		}
		checkEqual(t, "e.Status", e.Status, http.StatusNotFound)
	})
	t.Run("As", func(t *testing.T) {
		e, ok := apierrors.As(err)
		if !ok {
			t.Fatalf("As(%v) ok = false, want true", err)
		}
		if e != inner {
			t.Errorf("e = %p, want the same pointer as inner, %p", e, inner)
		}

		e, ok = apierrors.As(cause)
		if ok || e != nil {
			t.Errorf("As(%v) = %v, %v; want nil, false", cause, e, ok)
		}

		if _, ok = apierrors.As(nil); ok {
			t.Errorf("As(nil) ok = true, want false")
		}
	})
	t.Run("HasCode", func(t *testing.T) {
		if !apierrors.HasCode(err, apierrors.CodeNotFound) {
			t.Errorf("apierrors.HasCode(err, apierrors.CodeNotFound) = false, want true")
		}
		if apierrors.HasCode(err, apierrors.CodeInvalidRequest) {
			t.Errorf("apierrors.HasCode(err, apierrors.CodeInvalidRequest) = true, want false")
		}
		if apierrors.HasCode(cause, apierrors.CodeServerError) {
			t.Errorf("apierrors.HasCode(cause, apierrors.CodeServerError) = true, want false: a plain error holds no *Error")
		}
		if apierrors.HasCode(nil, apierrors.CodeNotFound) {
			t.Errorf("apierrors.HasCode(nil, apierrors.CodeNotFound) = true, want false")
		}
	})
	t.Run("CodeOf", func(t *testing.T) {
		checkEqual(t, "apierrors.CodeOf(err)", apierrors.CodeOf(err), apierrors.CodeNotFound)
		checkEqual(t, "apierrors.CodeOf(cause)", apierrors.CodeOf(cause), apierrors.CodeServerError)
		checkEqual(t, "apierrors.CodeOf(nil)", apierrors.CodeOf(nil), "")
	})
	t.Run("Unwrap", func(t *testing.T) {
		if inner.Unwrap() != cause {
			t.Errorf("inner.Unwrap() = %p, want the same pointer as cause, %p", inner.Unwrap(), cause)
		}
		if err := apierrors.NotFound("x").Unwrap(); err != nil {
			t.Errorf("apierrors.NotFound(\"x\").Unwrap() = %v, want no error", err)
		}
	})
}

func TestCopiesLeaveTheOriginalUntouched(t *testing.T) {
	t.Parallel()
	const challenge = `Bearer error="invalid_token", error_description="token expired"`
	newOrig := func() *apierrors.Error { return apierrors.InvalidToken("token expired") }

	t.Run("WithDescription", func(t *testing.T) {
		orig := newOrig()
		c := orig.WithDescription("signature is %s", "invalid")
		if c == orig {
			t.Fatalf("c is orig, want a copy")
		}
		checkEqual(t, "c.Description", c.Description, "signature is invalid")
		checkEqual(t, "c.Code", c.Code, apierrors.CodeInvalidToken)
		checkEqual(t, "c.Status", c.Status, http.StatusUnauthorized)
		checkEqual(t, "orig.Description", orig.Description, "token expired")
		checkEqual(t, `c.Header.Get("WWW-Authenticate") (the challenge follows the new description)`, c.Header.Get("WWW-Authenticate"), `Bearer error="invalid_token", error_description="signature is invalid"`)

		scoped := apierrors.InsufficientScope("svc:orders:read", "missing scope").WithDescription("needs %s", "svc:orders:read")
		checkEqual(t, `scoped.Header.Get("WWW-Authenticate")`, scoped.Header.Get("WWW-Authenticate"), `Bearer error="insufficient_scope", error_description="needs svc:orders:read", scope="svc:orders:read"`)

		c.Header.Set("WWW-Authenticate", "changed")
		checkEqual(t, `orig.Header.Get("WWW-Authenticate") (the copy's header map is its own)`, orig.Header.Get("WWW-Authenticate"), challenge)
	})
	t.Run("WithHeader", func(t *testing.T) {
		orig := newOrig()
		c := orig.WithHeader("Cache-Control", "no-store")
		if c == orig {
			t.Fatalf("c is orig, want a copy")
		}
		checkEqual(t, `c.Header.Get("Cache-Control")`, c.Header.Get("Cache-Control"), "no-store")
		checkEqual(t, `c.Header.Get("WWW-Authenticate") (the copy keeps the original headers)`, c.Header.Get("WWW-Authenticate"), challenge)
		if got := orig.Header.Get("Cache-Control"); got != "" {
			t.Errorf("orig Cache-Control = %q, want none", got)
		}
		if len(orig.Header) != 1 {
			t.Errorf("orig.Header = %v, want only its challenge", orig.Header)
		}
	})
	t.Run("WithHeader on an error without headers", func(t *testing.T) {
		orig := apierrors.NotFound("x")
		c := orig.WithHeader("Cache-Control", "no-store")
		checkEqual(t, `c.Header.Get("Cache-Control")`, c.Header.Get("Cache-Control"), "no-store")
		if orig.Header != nil {
			t.Errorf("orig.Header = %v, want nil", orig.Header)
		}
	})
	t.Run("Wrap", func(t *testing.T) {
		orig := newOrig()
		cause := errors.New("cause")
		c := orig.Wrap(cause)
		if c == orig {
			t.Fatalf("c is orig, want a copy")
		}
		if c.Unwrap() != cause {
			t.Errorf("c.Unwrap() = %p, want the same pointer as cause, %p", c.Unwrap(), cause)
		}
		if err := orig.Unwrap(); err != nil {
			t.Errorf("orig.Unwrap() = %v, want no error", err)
		}
		if errors.Is(orig, cause) {
			t.Errorf("errors.Is(orig, cause) = true, want false")
		}
		checkEqual(t, "c.Description", c.Description, orig.Description)

		c.Header.Set("WWW-Authenticate", "changed")
		checkEqual(t, `orig.Header.Get("WWW-Authenticate")`, orig.Header.Get("WWW-Authenticate"), challenge)
	})
	t.Run("sentinel reuse", func(t *testing.T) {
		// A package-level sentinel may be specialised per request without
		// leaking into the next one.
		sentinel := apierrors.MethodNotAllowed("GET")
		_ = sentinel.WithHeader("Allow", "GET, POST").WithDescription("other")
		checkEqual(t, `sentinel.Header.Get("Allow")`, sentinel.Header.Get("Allow"), "GET")
		checkEqual(t, "sentinel.Description", sentinel.Description, "method not allowed; allowed: GET")
	})
}

func TestWriterRealm(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		realm string
		err   error
		want  string
	}{
		{"no realm, no params", "", apierrors.Unauthorized("no token"), "Bearer"},
		{"no realm, params", "", apierrors.InvalidToken("expired"), `Bearer error="invalid_token", error_description="expired"`},
		{"realm, no params", "tms", apierrors.Unauthorized("no token"), `Bearer realm="tms"`},
		{"realm, params", "tms", apierrors.InvalidToken("expired"), `Bearer realm="tms", error="invalid_token", error_description="expired"`},
		{"realm on Basic", "auth.example.com", apierrors.InvalidClient("", "failed"), `Basic realm="auth.example.com"`},
		{"realm sanitised", "a\"b\r\nc", apierrors.Unauthorized("no token"), `Bearer realm="abc"`},
		{"no challenge, no header", "tms", apierrors.NotFound("x"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := httptest.NewRecorder()
			apierrors.Writer{Realm: tt.realm}.Write(rec, httptest.NewRequest(http.MethodGet, "/", nil), tt.err)
			checkEqual(t, `rec.Header().Get("WWW-Authenticate")`, rec.Header().Get("WWW-Authenticate"), tt.want)
		})
	}
	t.Run("the error keeps its own challenge", func(t *testing.T) {
		t.Parallel()
		e := apierrors.InvalidToken("expired")
		apierrors.Writer{Realm: "tms"}.Write(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil), e)
		checkEqual(t, `e.Header.Get("WWW-Authenticate")`, e.Header.Get("WWW-Authenticate"), `Bearer error="invalid_token", error_description="expired"`)
	})
}

func TestWriterResourceMetadata(t *testing.T) {
	t.Parallel()
	const u = "https://api.example/.well-known/oauth-protected-resource"
	tests := []struct {
		name, realm, metadata string
		err                   error
		want                  string
	}{
		{"no params", "", u, apierrors.Unauthorized("no token"), `Bearer resource_metadata="` + u + `"`},
		{"realm", "tms", u, apierrors.Unauthorized("no token"), `Bearer realm="tms", resource_metadata="` + u + `"`},
		{"invalid_token", "tms", u, apierrors.InvalidToken("expired"),
			`Bearer realm="tms", error="invalid_token", error_description="expired", resource_metadata="` + u + `"`},
		{"insufficient_scope", "", u, apierrors.InsufficientScope("svc:orders:read", "needs svc:orders:read"),
			`Bearer error="insufficient_scope", error_description="needs svc:orders:read", scope="svc:orders:read", resource_metadata="` + u + `"`},
		{"not on Basic", "auth", u, apierrors.InvalidClient("", "failed"), `Basic realm="auth"`},
		{"sanitised", "", "https://x/\"\r\n", apierrors.Unauthorized("no token"), `Bearer resource_metadata="https://x/"`},
		{"none", "tms", "", apierrors.Unauthorized("no token"), `Bearer realm="tms"`},
		{"no challenge, no header", "tms", u, apierrors.NotFound("x"), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := httptest.NewRecorder()
			apierrors.Writer{Realm: tt.realm, ResourceMetadata: tt.metadata}.Write(rec, httptest.NewRequest(http.MethodGet, "/", nil), tt.err)
			checkEqual(t, `rec.Header().Get("WWW-Authenticate")`, rec.Header().Get("WWW-Authenticate"), tt.want)
		})
	}
}

func TestChallengeIsQuotable(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		desc  string
		scope string
		want  string
	}{
		{
			name: "quotes and backslashes dropped",
			desc: `bad "token" \here\`,
			want: `Bearer realm="waybill", error="insufficient_scope", error_description="bad token here"`,
		},
		{
			name: "control characters dropped",
			desc: "line one\r\nSet-Cookie: x=1\x00\t\x7f end",
			want: `Bearer realm="waybill", error="insufficient_scope", error_description="line oneSet-Cookie: x=1 end"`,
		},
		{
			name: "non-ASCII dropped",
			desc: "café ✓ ok",
			want: `Bearer realm="waybill", error="insufficient_scope", error_description="caf  ok"`,
		},
		{
			name:  "scope sanitised too",
			desc:  "needs scope",
			scope: "svc:orders:read\" evil=\"1",
			want:  `Bearer realm="waybill", error="insufficient_scope", error_description="needs scope", scope="svc:orders:read evil=1"`,
		},
		{
			name: "empty description omitted",
			want: `Bearer realm="waybill", error="insufficient_scope"`,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := apierrors.InsufficientScope(tt.scope, tt.desc)
			checkEqual(t, `e.Header.Get("WWW-Authenticate") (the error's own challenge names no realm)`, e.Header.Get("WWW-Authenticate"), strings.Replace(tt.want, `realm="waybill", `, "", 1))

			// The body keeps the description as given; JSON escapes it.
			rec := write(t, http.MethodGet, "/", e)
			checkEqual(t, "decode(t, rec).Description", decode(t, rec).Description, tt.desc)
			checkEqual(t, `rec.Header().Get("WWW-Authenticate")`, rec.Header().Get("WWW-Authenticate"), tt.want)
		})
	}

	t.Run("invalid token", func(t *testing.T) {
		t.Parallel()
		e := apierrors.InvalidToken("bad \"sig\"\n\\")
		checkEqual(t, `e.Header.Get("WWW-Authenticate")`, e.Header.Get("WWW-Authenticate"), `Bearer error="invalid_token", error_description="bad sig"`)
	})
}

// TestWriteBodyIsOneJSONLine checks the exact bytes, so that clients that
// compare bodies (or log them) see one line.
func TestWriteBodyIsOneJSONLine(t *testing.T) {
	t.Parallel()
	rec := write(t, http.MethodGet, "/", apierrors.InvalidRequest(`filter on "status": unknown operator`))
	body, err := io.ReadAll(rec.Body)
	if err != nil {
		t.Fatalf("err = %v, want no error", err)
	}
	checkEqual(t, "string(body)", string(body), `{"error":"invalid_request","error_description":"filter on \"status\": unknown operator"}`+"\n")
	checkEqual(t, `strings.Count(string(body), "\n")`, strings.Count(string(body), "\n"), 1)
}
