package errors_test

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"

	apierrors "github.com/waybillhq/waybill/errors"
)

// A handler returns an *Error and Write answers with its status, headers and
// JSON body.
func ExampleWrite() {
	handler := func(w http.ResponseWriter, r *http.Request) {
		apierrors.Write(w, r, apierrors.NotFound("no quotation %s", r.PathValue("id")))
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /v1/{scopeId}/quotations/{id}", handler)

	rec := httptest.NewRecorder()
	mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/v1/b1/quotations/42", nil))

	fmt.Println(rec.Code)
	fmt.Println(rec.Header().Get("Content-Type"))
	fmt.Print(rec.Body.String())
	// Output:
	// 404
	// application/json
	// {"error":"not_found","error_description":"no quotation 42"}
}

// A Writer logs the failures of the server to the logger it is given, with
// their cause and never the query string, and names its realm in
// WWW-Authenticate challenges.
func ExampleWriter() {
	logger := slog.New(slog.NewTextHandler(os.Stdout, &slog.HandlerOptions{
		// Drop the time, so that the output is the same on every run.
		ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		},
	}))
	errw := apierrors.Writer{Logger: logger, Realm: "tms"}

	rec := httptest.NewRecorder()
	errw.Write(rec, httptest.NewRequest(http.MethodGet, "/v1/b1/orders", nil), apierrors.Unauthorized("an Authorization: Bearer token is required"))
	fmt.Println(rec.Code, rec.Header().Get("WWW-Authenticate"))

	rec = httptest.NewRecorder()
	errw.Write(rec, httptest.NewRequest(http.MethodGet, "/v1/b1/orders?access_token=secret", nil), apierrors.Internal(errors.New("scan: column count")))
	fmt.Println(rec.Code)
	// Output:
	// 401 Bearer realm="tms"
	// level=ERROR msg="request failed" method=GET path=/v1/b1/orders status=500 error="server_error: internal server error" cause="scan: column count"
	// 500
}

// New takes any code; its status comes from the one table.
func ExampleNew() {
	err := apierrors.New(apierrors.CodeInvalidScope, "scope %q is not allowed for this app", "svc:invoices:write")

	fmt.Println(err.Status)
	fmt.Println(err)
	// Output:
	// 400
	// invalid_scope: scope "svc:invoices:write" is not allowed for this app
}

// Errors that call for response headers carry them.
func ExampleMethodNotAllowed() {
	rec := httptest.NewRecorder()
	req := httptest.NewRequest(http.MethodDelete, "/v1/org1/branches/b1", nil)
	apierrors.Write(rec, req, apierrors.MethodNotAllowed("GET", "HEAD"))

	fmt.Println(rec.Code, rec.Header().Get("Allow"))
	fmt.Print(rec.Body.String())
	// Output:
	// 405 GET, HEAD
	// {"error":"method_not_allowed","error_description":"method not allowed; allowed: GET, HEAD"}
}

// As finds the *Error however deep it is wrapped.
func ExampleAs() {
	err := fmt.Errorf("load quotation: %w", apierrors.NotFound("no quotation 42"))

	if e, ok := apierrors.As(err); ok {
		fmt.Println(e.Code, e.Status, e.Description)
	}
	_, ok := apierrors.As(errors.New("connection refused"))
	fmt.Println(ok)
	// Output:
	// not_found 404 no quotation 42
	// false
}

// HasCode and errors.Is both compare codes through wrapping.
func ExampleHasCode() {
	err := fmt.Errorf("refresh: %w", apierrors.InvalidGrant("refresh token already used"))

	fmt.Println(apierrors.HasCode(err, apierrors.CodeInvalidGrant))
	fmt.Println(apierrors.HasCode(err, apierrors.CodeInvalidClient))
	fmt.Println(errors.Is(err, apierrors.InvalidGrant("")))
	// Output:
	// true
	// false
	// true
}

// Wrap keeps a cause for logs and errors.Is; the client never sees it.
func ExampleError_Wrap() {
	errNoRows := errors.New("sql: no rows in result set")
	err := apierrors.NotFound("no order 7").Wrap(errNoRows)

	fmt.Println(errors.Is(err, errNoRows))
	fmt.Println(err.Description)
	// Output:
	// true
	// no order 7
}

// From judges an error that is not an *Error by its cause: a deadline is
// overload (503 with Retry-After), a cancellation a client that left (499),
// anything else a 500.
func ExampleFrom() {
	for _, err := range []error{
		fmt.Errorf("list orders: %w", context.DeadlineExceeded),
		apierrors.Internal(fmt.Errorf("list orders: %w", context.Canceled)),
		errors.New("nil map"),
	} {
		e := apierrors.From(err)
		fmt.Printf("%d %s retry-after=%q\n", e.Status, e.Code, e.Header.Get("Retry-After"))
	}
	// Output:
	// 503 temporarily_unavailable retry-after="1"
	// 499 client_closed_request retry-after=""
	// 500 server_error retry-after=""
}

// A handler that returns its errors: each failure is one return, and
// Handle answers it.
func ExampleWriter_Handle() {
	quotation := func(w http.ResponseWriter, r *http.Request) error {
		id := r.PathValue("id")
		if id != "q-1" {
			return apierrors.NotFound("no quotation %s", id)
		}
		_, err := fmt.Fprintln(w, `{"id":"q-1"}`)
		return err
	}
	mux := http.NewServeMux()
	mux.Handle("GET /quotations/{id}", apierrors.Writer{}.Handle(quotation))
	for _, path := range []string{"/quotations/q-1", "/quotations/q-2"} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest(http.MethodGet, path, nil))
		fmt.Print(rec.Code, " ", rec.Body.String())
	}
	// Output:
	// 200 {"id":"q-1"}
	// 404 {"error":"not_found","error_description":"no quotation q-2"}
}
