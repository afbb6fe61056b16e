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

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

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

// decode parses the recorded body as the error shape, rejecting unknown fields.
func decode(t *testing.T, rec *httptest.ResponseRecorder) responseBody {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(rec.Body.Bytes()))
	dec.DisallowUnknownFields()
	var b responseBody
	require.NoError(t, dec.Decode(&b), "body %q", rec.Body.String())
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
		{"no_such_code", http.StatusInternalServerError},
		{"", http.StatusInternalServerError},
	}
	for _, tt := range tests {
		t.Run(tt.code, func(t *testing.T) {
			t.Parallel()
			assert.Equal(t, tt.want, apierrors.Status(tt.code))
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
			assert.Equal(t, tt.code, tt.err.Code)
			assert.Equal(t, apierrors.Status(tt.code), tt.err.Status, "status must come from the table")
			assert.Equal(t, tt.desc, tt.err.Description)
			assert.Equal(t, tt.code+": "+tt.desc, tt.err.Error())
		})
	}
}

func TestErrorString(t *testing.T) {
	t.Parallel()
	assert.Equal(t, "not_found", apierrors.NotFound("").Error())
	assert.Equal(t, "not_found: no order", apierrors.NotFound("no order").Error())
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
			assert.Equal(t, tt.wantStatus, rec.Code)
			assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
			assert.Equal(t, "nosniff", rec.Header().Get("X-Content-Type-Options"))
			for k, v := range tt.wantHeader {
				if v == "" {
					assert.Empty(t, rec.Header().Values(k), "header %s", k)
				} else {
					assert.Equal(t, []string{v}, rec.Header().Values(k), "header %s", k)
				}
			}
			b := decode(t, rec)
			assert.Equal(t, tt.wantCode, b.Error)
			assert.Equal(t, tt.wantDesc, b.Description)
		})
	}
}

func TestWriteOverridesStaleHeaders(t *testing.T) {
	t.Parallel()
	rec := httptest.NewRecorder()
	rec.Header().Set("Content-Type", "text/html")
	rec.Header().Set("Content-Length", "9999")
	apierrors.Write(rec, httptest.NewRequest(http.MethodGet, "/", nil), apierrors.NotFound("x"))
	assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	assert.Empty(t, rec.Header().Get("Content-Length"))
}

func TestWriteHEADHasNoBody(t *testing.T) {
	t.Parallel()
	rec := write(t, http.MethodHead, "/v1/x/orders", apierrors.RateLimited(5))
	assert.Equal(t, http.StatusTooManyRequests, rec.Code)
	assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
	assert.Equal(t, "5", rec.Header().Get("Retry-After"))
	assert.Zero(t, rec.Body.Len(), "body %q", rec.Body.String())
}

func TestWriteServerErrors(t *testing.T) {
	t.Parallel()
	t.Run("plain error is a 500 that hides its text and is logged", func(t *testing.T) {
		rec, logs := writeLogged(t, http.MethodPost, "/v1/x/orders?access_token=tok-secret", errors.New("db password=hunter2"))

		assert.Equal(t, http.StatusInternalServerError, rec.Code)
		assert.Equal(t, "application/json", rec.Header().Get("Content-Type"))
		assert.NotContains(t, rec.Body.String(), "hunter2")
		assert.Equal(t, responseBody{Error: "server_error", Description: "internal server error"}, decode(t, rec))

		var entry map[string]any
		require.NoError(t, json.Unmarshal(logs.Bytes(), &entry), "log %q", logs.String())
		assert.Equal(t, "ERROR", entry["level"])
		assert.Equal(t, "POST", entry["method"])
		assert.Equal(t, "/v1/x/orders", entry["path"])
		assert.EqualValues(t, http.StatusInternalServerError, entry["status"])
		assert.Equal(t, "db password=hunter2", entry["error"])
		assert.NotContains(t, logs.String(), "tok-secret", "the query string is never logged")
	})

	t.Run("wrapped plain error", func(t *testing.T) {
		rec, logs := writeLogged(t, http.MethodGet, "/", fmt.Errorf("list: %w", errors.New("connection refused")))
		assert.Equal(t, http.StatusInternalServerError, rec.Code)
		assert.Equal(t, "server_error", decode(t, rec).Error)
		assert.NotContains(t, rec.Body.String(), "connection refused")
		assert.Contains(t, logs.String(), "connection refused")
	})

	t.Run("Internal hides its cause and logs it", func(t *testing.T) {
		rec, logs := writeLogged(t, http.MethodGet, "/", apierrors.Internal(errors.New("secret cause")))
		assert.Equal(t, http.StatusInternalServerError, rec.Code)
		assert.NotContains(t, rec.Body.String(), "secret cause")

		var entry map[string]any
		require.NoError(t, json.Unmarshal(logs.Bytes(), &entry), "log %q", logs.String())
		assert.Equal(t, "server_error: internal server error", entry["error"])
		assert.Equal(t, "secret cause", entry["cause"])
	})

	t.Run("cause of a wrapped 503 is logged", func(t *testing.T) {
		err := fmt.Errorf("ready: %w", apierrors.Unavailable("database unreachable").Wrap(errors.New("dial tcp: refused")))
		rec, logs := writeLogged(t, http.MethodGet, "/readyz", err)
		assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
		assert.NotContains(t, rec.Body.String(), "refused")
		assert.Contains(t, logs.String(), `"cause":"dial tcp: refused"`)
	})

	t.Run("503 is logged", func(t *testing.T) {
		rec, logs := writeLogged(t, http.MethodGet, "/readyz", apierrors.Unavailable("database unreachable"))
		assert.Equal(t, http.StatusServiceUnavailable, rec.Code)
		assert.Equal(t, responseBody{Error: "temporarily_unavailable", Description: "database unreachable"}, decode(t, rec))
		assert.Contains(t, logs.String(), `"path":"/readyz"`)
	})

	t.Run("4xx is not logged", func(t *testing.T) {
		rec, logs := writeLogged(t, http.MethodGet, "/", apierrors.NotFound("no order"))
		assert.Equal(t, http.StatusNotFound, rec.Code)
		assert.Empty(t, logs.String())
	})

	t.Run("HEAD of a 500 has no body", func(t *testing.T) {
		rec := write(t, http.MethodHead, "/", errors.New("boom"))
		assert.Equal(t, http.StatusInternalServerError, rec.Code)
		assert.Zero(t, rec.Body.Len())
	})
}

func TestIsAndAsSeeThroughWrapping(t *testing.T) {
	t.Parallel()
	cause := errors.New("no rows")
	inner := apierrors.NotFound("no quotation 42").Wrap(cause)
	err := fmt.Errorf("handler: %w", fmt.Errorf("store: %w", inner))

	t.Run("errors.Is matches by code", func(t *testing.T) {
		assert.ErrorIs(t, err, apierrors.NotFound(""))
		assert.ErrorIs(t, err, &apierrors.Error{Code: apierrors.CodeNotFound})
		assert.NotErrorIs(t, err, apierrors.InvalidRequest(""))
	})
	t.Run("errors.Is reaches the cause", func(t *testing.T) {
		assert.ErrorIs(t, err, cause)
		assert.ErrorIs(t, apierrors.Internal(cause), cause)
	})
	t.Run("errors.As", func(t *testing.T) {
		var e *apierrors.Error
		require.ErrorAs(t, err, &e)
		assert.Same(t, inner, e)
		assert.Equal(t, http.StatusNotFound, e.Status)
	})
	t.Run("As", func(t *testing.T) {
		e, ok := apierrors.As(err)
		require.True(t, ok)
		assert.Same(t, inner, e)

		e, ok = apierrors.As(cause)
		assert.False(t, ok)
		assert.Nil(t, e)

		_, ok = apierrors.As(nil)
		assert.False(t, ok)
	})
	t.Run("HasCode", func(t *testing.T) {
		assert.True(t, apierrors.HasCode(err, apierrors.CodeNotFound))
		assert.False(t, apierrors.HasCode(err, apierrors.CodeInvalidRequest))
		assert.False(t, apierrors.HasCode(cause, apierrors.CodeServerError), "a plain error holds no *Error")
		assert.False(t, apierrors.HasCode(nil, apierrors.CodeNotFound))
	})
	t.Run("CodeOf", func(t *testing.T) {
		assert.Equal(t, apierrors.CodeNotFound, apierrors.CodeOf(err))
		assert.Equal(t, apierrors.CodeServerError, apierrors.CodeOf(cause))
		assert.Equal(t, "", apierrors.CodeOf(nil))
	})
	t.Run("Unwrap", func(t *testing.T) {
		assert.Same(t, cause, inner.Unwrap())
		assert.NoError(t, apierrors.NotFound("x").Unwrap())
	})
}

func TestCopiesLeaveTheOriginalUntouched(t *testing.T) {
	t.Parallel()
	const challenge = `Bearer error="invalid_token", error_description="token expired"`
	newOrig := func() *apierrors.Error { return apierrors.InvalidToken("token expired") }

	t.Run("WithDescription", func(t *testing.T) {
		orig := newOrig()
		c := orig.WithDescription("signature is %s", "invalid")
		require.NotSame(t, orig, c)
		assert.Equal(t, "signature is invalid", c.Description)
		assert.Equal(t, apierrors.CodeInvalidToken, c.Code)
		assert.Equal(t, http.StatusUnauthorized, c.Status)
		assert.Equal(t, "token expired", orig.Description)
		assert.Equal(t, `Bearer error="invalid_token", error_description="signature is invalid"`,
			c.Header.Get("WWW-Authenticate"), "the challenge follows the new description")

		scoped := apierrors.InsufficientScope("svc:orders:read", "missing scope").WithDescription("needs %s", "svc:orders:read")
		assert.Equal(t, `Bearer error="insufficient_scope", error_description="needs svc:orders:read", scope="svc:orders:read"`,
			scoped.Header.Get("WWW-Authenticate"))

		c.Header.Set("WWW-Authenticate", "changed")
		assert.Equal(t, challenge, orig.Header.Get("WWW-Authenticate"), "the copy's header map is its own")
	})
	t.Run("WithHeader", func(t *testing.T) {
		orig := newOrig()
		c := orig.WithHeader("Cache-Control", "no-store")
		require.NotSame(t, orig, c)
		assert.Equal(t, "no-store", c.Header.Get("Cache-Control"))
		assert.Equal(t, challenge, c.Header.Get("WWW-Authenticate"), "the copy keeps the original headers")
		assert.Empty(t, orig.Header.Get("Cache-Control"))
		assert.Len(t, orig.Header, 1)
	})
	t.Run("WithHeader on an error without headers", func(t *testing.T) {
		orig := apierrors.NotFound("x")
		c := orig.WithHeader("Cache-Control", "no-store")
		assert.Equal(t, "no-store", c.Header.Get("Cache-Control"))
		assert.Nil(t, orig.Header)
	})
	t.Run("Wrap", func(t *testing.T) {
		orig := newOrig()
		cause := errors.New("cause")
		c := orig.Wrap(cause)
		require.NotSame(t, orig, c)
		assert.Same(t, cause, c.Unwrap())
		assert.NoError(t, orig.Unwrap())
		assert.NotErrorIs(t, orig, cause)
		assert.Equal(t, orig.Description, c.Description)

		c.Header.Set("WWW-Authenticate", "changed")
		assert.Equal(t, challenge, orig.Header.Get("WWW-Authenticate"))
	})
	t.Run("sentinel reuse", func(t *testing.T) {
		// A package-level sentinel may be specialised per request without
		// leaking into the next one.
		sentinel := apierrors.MethodNotAllowed("GET")
		_ = sentinel.WithHeader("Allow", "GET, POST").WithDescription("other")
		assert.Equal(t, "GET", sentinel.Header.Get("Allow"))
		assert.Equal(t, "method not allowed; allowed: GET", sentinel.Description)
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
			assert.Equal(t, tt.want, rec.Header().Get("WWW-Authenticate"))
		})
	}
	t.Run("the error keeps its own challenge", func(t *testing.T) {
		t.Parallel()
		e := apierrors.InvalidToken("expired")
		apierrors.Writer{Realm: "tms"}.Write(httptest.NewRecorder(), httptest.NewRequest(http.MethodGet, "/", nil), e)
		assert.Equal(t, `Bearer error="invalid_token", error_description="expired"`, e.Header.Get("WWW-Authenticate"))
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
			assert.Equal(t, tt.want, rec.Header().Get("WWW-Authenticate"))
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
			assert.Equal(t, strings.Replace(tt.want, `realm="waybill", `, "", 1), e.Header.Get("WWW-Authenticate"),
				"the error's own challenge names no realm")

			// The body keeps the description as given; JSON escapes it.
			rec := write(t, http.MethodGet, "/", e)
			assert.Equal(t, tt.desc, decode(t, rec).Description)
			assert.Equal(t, tt.want, rec.Header().Get("WWW-Authenticate"))
		})
	}

	t.Run("invalid token", func(t *testing.T) {
		t.Parallel()
		e := apierrors.InvalidToken("bad \"sig\"\n\\")
		assert.Equal(t, `Bearer error="invalid_token", error_description="bad sig"`,
			e.Header.Get("WWW-Authenticate"))
	})
}

// TestWriteBodyIsOneJSONLine checks the exact bytes, so that clients that
// compare bodies (or log them) see one line.
func TestWriteBodyIsOneJSONLine(t *testing.T) {
	t.Parallel()
	rec := write(t, http.MethodGet, "/", apierrors.InvalidRequest(`filter on "status": unknown operator`))
	body, err := io.ReadAll(rec.Body)
	require.NoError(t, err)
	assert.Equal(t, `{"error":"invalid_request","error_description":"filter on \"status\": unknown operator"}`+"\n", string(body))
	assert.Equal(t, 1, strings.Count(string(body), "\n"))
}
