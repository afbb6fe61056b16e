package errors

import (
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
)

// LogLevel returns the level at which a request answered with status is
// logged: info for a client that went away (499), warning for a 503
// (overload and outages are answered as they should be, not failures of
// the server), error for the other 5xx, and debug for the rest.
func LogLevel(status int) slog.Level {
	switch {
	case status == StatusClientClosedRequest:
		return slog.LevelInfo
	case status == http.StatusServiceUnavailable:
		return slog.LevelWarn
	case status >= http.StatusInternalServerError:
		return slog.LevelError
	}
	return slog.LevelDebug
}

// body is the JSON shape of every error response.
type body struct {
	Error       string      `json:"error"`
	Description string      `json:"error_description"`
	Errors      []ItemError `json:"errors,omitzero"`
}

// Writer answers requests with errors. Every component that writes errors
// (the token service, the tenancy middleware, the resource registry, the
// rate limiter) has the fields a Writer needs, so that the host decides
// where their log lines go and which realm their challenges name.
type Writer struct {
	// Logger receives the requests that failed on the server's side
	// (status 500 and above) and those the client abandoned (499); nil
	// means slog.Default.
	Logger *slog.Logger
	// Realm, when not empty, is the realm of the WWW-Authenticate
	// challenges written: `Bearer realm="api", error="invalid_token"`.
	// RFC 6750 makes it optional for Bearer; RFC 7617 requires it for
	// Basic, which only the token endpoint's client authentication uses.
	// Characters that cannot be quoted in a header are dropped.
	Realm string
	// ResourceMetadata, when not empty, is the URL of the protected
	// resource metadata (RFC 9728) of the API that answers, given in the
	// resource_metadata parameter of every Bearer challenge written:
	// `Bearer realm="api", error="invalid_token", ...,
	// resource_metadata="https://api.example/.well-known/oauth-protected-resource"`,
	// so that a client that was refused finds the authorization servers
	// and scopes of the API. Challenges of other schemes (Basic) do not
	// carry it. Characters that cannot be quoted are dropped.
	ResourceMetadata string
}

// Write answers the request with err: Writer{}.Write, which logs to
// slog.Default and names no realm.
func Write(w http.ResponseWriter, r *http.Request, err error) {
	Writer{}.Write(w, r, err)
}

// Write answers the request with err, as FromRequest judges it: the *Error in
// err's chain with its status, headers and {"error","error_description"}
// body; a 503 temporarily_unavailable for a deadline or a dependency that
// cannot be reached; a 500 server_error, whose description says nothing of
// err, for anything else. Errors with a status of 500 or more are logged to
// the Logger with the request's method and path (never its query string
// or headers, which may hold secrets), the error as the client was answered
// (an Internal error whose cause is a deadline is logged as the 503 it was
// answered with) and the cause beside it: 500s at the error level, 503s
// (load and outages, which the server answers as it should) at the warning
// level. A request whose client went away is logged at the info level with
// status 499 and answered with that status, which nobody reads. A HEAD
// request gets the status and headers without a body.
func (wr Writer) Write(w http.ResponseWriter, r *http.Request, err error) {
	e := FromRequest(r, err)
	status := e.Status
	if status == 0 {
		status = Status(e.Code)
	}
	if status >= http.StatusInternalServerError || status == StatusClientClosedRequest {
		logged := err
		var cause error
		if orig, ok := As(err); ok {
			// An *Error's text is its code and description only; the cause
			// given to Wrap or Internal is what the log is for.
			cause = orig.Unwrap()
			if orig.Code != e.Code {
				// The answer was judged from the cause (an Internal error
				// whose cause is a deadline or a locked SQLite file is a
				// 503): the log says what the client was answered, not the
				// server_error it was not.
				logged = e
			}
		}
		attrs := []any{"method", r.Method, "path", r.URL.Path, "status", status, "error", logged}
		if cause != nil {
			attrs = append(attrs, "cause", cause)
		}
		msg := "request failed"
		switch status {
		case StatusClientClosedRequest:
			msg = "request abandoned by the client"
		case http.StatusServiceUnavailable:
			msg = "request not served"
		}
		logger := wr.Logger
		if logger == nil {
			logger = slog.Default()
		}
		logger.Log(r.Context(), LogLevel(status), msg, attrs...)
	}
	h := w.Header()
	for k, vs := range e.Header {
		h[k] = append([]string(nil), vs...)
	}
	if wr.Realm != "" || wr.ResourceMetadata != "" {
		for i, c := range h["Www-Authenticate"] {
			if wr.Realm != "" {
				c = withRealm(c, wr.Realm)
			}
			if wr.ResourceMetadata != "" {
				c = withResourceMetadata(c, wr.ResourceMetadata)
			}
			h["Www-Authenticate"][i] = c
		}
	}
	h.Set("Content-Type", "application/json")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Del("Content-Length")
	w.WriteHeader(status)
	if r.Method == http.MethodHead {
		return
	}
	// Encoding strings and ints cannot fail; a write error means the client
	// left.
	_ = json.NewEncoder(w).Encode(body{Error: e.Code, Description: e.Description, Errors: e.Items})
}

// withRealm puts realm into challenge, after its scheme: "Bearer" becomes
// `Bearer realm="api"` and `Bearer error="x"` becomes
// `Bearer realm="api", error="x"`.
func withRealm(challenge, realm string) string {
	scheme, params, _ := strings.Cut(challenge, " ")
	c := scheme + ` realm="` + quotable(realm) + `"`
	if params != "" {
		c += ", " + params
	}
	return c
}

// withResourceMetadata adds the resource_metadata parameter of RFC 9728
// to challenge, last, when its scheme is Bearer: "Bearer" becomes
// `Bearer resource_metadata="u"` and `Bearer error="x"` becomes
// `Bearer error="x", resource_metadata="u"`. Other schemes are left as
// they are.
func withResourceMetadata(challenge, url string) string {
	scheme, params, _ := strings.Cut(challenge, " ")
	if !strings.EqualFold(scheme, "Bearer") {
		return challenge
	}
	if params != "" {
		params += ", "
	}
	return scheme + " " + params + `resource_metadata="` + quotable(url) + `"`
}

// HandlerFunc is an HTTP handler that returns its error instead of
// writing it: a handler says what went wrong and returns, and one place
// (Writer.Handle) turns every error into its answer. It returns nil when
// it has answered the request itself, and must not have written anything
// when it returns an error.
type HandlerFunc func(http.ResponseWriter, *http.Request) error

// Handle returns an http.Handler that runs h and answers the error h
// returns, if any, as Write does.
func (wr Writer) Handle(h HandlerFunc) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := h(w, r); err != nil {
			wr.Write(w, r, err)
		}
	})
}
