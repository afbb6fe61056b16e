package main

import (
	"net/http"

	apierrors "github.com/waybillhq/waybill/errors"
)

// newHandler returns the server's routes. Every response that is not a
// success has the API error shape of package errors, including those for
// routes that do not exist.
func newHandler() http.Handler {
	mux := http.NewServeMux()
	mux.HandleFunc("GET /healthz", handleHealthz)
	mux.Handle("/healthz", methodNotAllowed(http.MethodGet, http.MethodHead))
	// The catch-all: without it ServeMux would answer in plain text.
	mux.HandleFunc("/", handleNotFound)
	return mux
}

// handleHealthz is the liveness probe: 200 {"status":"ok"} while the process
// serves requests. It checks no dependency; readiness (/readyz) will.
func handleHealthz(w http.ResponseWriter, r *http.Request) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Cache-Control", "no-store")
	w.WriteHeader(http.StatusOK)
	if r.Method != http.MethodHead {
		_, _ = w.Write([]byte(`{"status":"ok"}` + "\n"))
	}
}

// handleNotFound answers every request that no route matches with 404
// not_found.
func handleNotFound(w http.ResponseWriter, r *http.Request) {
	apierrors.Write(w, r, apierrors.NotFound("no route for %s %s", r.Method, r.URL.Path))
}

// methodNotAllowed returns a handler that answers 405 method_not_allowed with
// an Allow header listing allow.
func methodNotAllowed(allow ...string) http.Handler {
	err := apierrors.MethodNotAllowed(allow...)
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		apierrors.Write(w, r, err)
	})
}
