package errors

import (
	"encoding/json"
	"log/slog"
	"net/http"
)

// body is the JSON shape of every error response.
type body struct {
	Error       string `json:"error"`
	Description string `json:"error_description"`
}

// Write answers the request with err: the *Error in err's chain with its
// status, headers and {"error","error_description"} body, or, for any other
// error, a 500 server_error whose description says nothing of err. Errors
// with a status of 500 or more are logged to slog.Default with the request's
// method and path (never its query string or headers, which may hold
// secrets). A HEAD request gets the status and headers without a body.
func Write(w http.ResponseWriter, r *http.Request, err error) {
	e, ok := As(err)
	if !ok {
		e = Internal(err)
	}
	status := e.Status
	if status == 0 {
		status = Status(e.Code)
	}
	if status >= http.StatusInternalServerError {
		attrs := []any{"method", r.Method, "path", r.URL.Path, "status", status, "error", err}
		// An *Error's text is its code and description only; the cause given
		// to Wrap or Internal is what the log is for.
		if ok && e.Unwrap() != nil {
			attrs = append(attrs, "cause", e.Unwrap())
		}
		slog.Default().ErrorContext(r.Context(), "request failed", attrs...)
	}
	h := w.Header()
	for k, vs := range e.Header {
		h[k] = append([]string(nil), vs...)
	}
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Del("Content-Length")
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return
	}
	// Encoding two strings cannot fail; a write error means the client left.
	_ = json.NewEncoder(w).Encode(body{Error: e.Code, Description: e.Description})
}
