package ratelimit

import (
	"log/slog"
	"net"
	"net/http"
	"strconv"
	"time"

	apierrors "github.com/waybillhq/waybill/errors"
)

// KeyFunc names the key a request is counted under: an organization, an
// app, a remote address. ok false means "do not limit this request": it
// passes without being counted and without RateLimit headers.
type KeyFunc func(r *http.Request) (key string, ok bool)

// KeyByRemoteAddr is the default KeyFunc: the host of r.RemoteAddr, without
// the port. A request without a remote address (a Unix socket) is not
// limited. Behind a reverse proxy every request has the proxy's address;
// name the client some other way there.
func KeyByRemoteAddr(r *http.Request) (key string, ok bool) {
	host, _, err := net.SplitHostPort(r.RemoteAddr)
	if err != nil {
		host = r.RemoteAddr // no port
	}
	return host, host != ""
}

// Options configures MiddlewareWithOptions. The zero value limits nothing;
// a Limit with a Quota is enough to limit by remote address in process.
type Options struct {
	// Limiter decides. Nil means a Memory limiter of the middleware's own
	// (NewMemory with zero MemoryOptions).
	Limiter Limiter
	// Limit is the quota per window of each key. A Quota of 0 disables the
	// middleware: every request passes and no header is set.
	Limit Limit
	// Key names the key of a request. Nil means KeyByRemoteAddr.
	Key KeyFunc
	// FailClosed is the policy for a Limiter that fails (Redis is down).
	// False, the default, fails open: the request passes, without a
	// RateLimit header. True answers 503 temporarily_unavailable with
	// Retry-After: 1.
	FailClosed bool
	// OnError is called with every error of the Limiter, so that the host
	// logs it and counts it. Nil means a warning on Logger with the
	// limit's name, the method and path, and the error: never the key or
	// the query string.
	OnError func(r *http.Request, err error)
	// Logger receives the default OnError's warnings and the 503s of a
	// failed limiter with FailClosed; nil means slog.Default.
	Logger *slog.Logger
}

// Middleware limits each key that key names, as MiddlewareWithOptions does
// with l, limit and key and the default policy (fail open, errors logged
// to slog.Default). Use MiddlewareWithOptions to give it a Logger.
func Middleware(l Limiter, limit Limit, key KeyFunc) func(http.Handler) http.Handler {
	return MiddlewareWithOptions(Options{Limiter: l, Limit: limit, Key: key})
}

// MiddlewareWithOptions returns middleware that counts each request under
// its key and the limit, and answers one over the limit with 429
// rate_limited and a Retry-After header in whole seconds, rounded up.
//
// Every response of the limited route carries the RateLimit-Policy and
// RateLimit headers of draft-ietf-httpapi-ratelimit-headers-11 (see
// SetHeaders), set before the next handler runs; a request let through
// because the limiter failed carries RateLimit-Policy only.
//
// It panics when opts.Limit has a Quota and no positive Window.
func MiddlewareWithOptions(opts Options) func(http.Handler) http.Handler {
	if !opts.Limit.Enabled() {
		return func(next http.Handler) http.Handler { return next }
	}
	if err := opts.Limit.Validate(); err != nil {
		panic(err)
	}
	limiter := opts.Limiter
	if limiter == nil {
		limiter = NewMemory(MemoryOptions{})
	}
	key := opts.Key
	if key == nil {
		key = KeyByRemoteAddr
	}
	logger := opts.Logger
	if logger == nil {
		logger = slog.Default()
	}
	onError := opts.OnError
	if onError == nil {
		onError = logError(logger, opts.Limit.Name, opts.FailClosed)
	}
	errw := apierrors.Writer{Logger: logger}
	limit := opts.Limit
	hdr := newHeaders(limit)

	return func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			k, ok := key(r)
			if !ok {
				next.ServeHTTP(w, r)
				return
			}
			d, err := limiter.Allow(r.Context(), k, limit)
			h := w.Header()
			h.Set(headerPolicy, hdr.policy)
			if err != nil {
				onError(r, err)
				if opts.FailClosed {
					errw.Write(w, r, apierrors.Unavailable("the rate limit could not be checked; retry later"))
					return
				}
				next.ServeHTTP(w, r)
				return
			}
			h.Set(headerState, hdr.state(d))
			if !d.Allowed {
				errw.Write(w, r, apierrors.RateLimited(ceilSeconds(d.RetryAfter)))
				return
			}
			next.ServeHTTP(w, r)
		})
	}
}

// logError returns the default OnError, which warns on logger.
func logError(logger *slog.Logger, name string, failClosed bool) func(*http.Request, error) {
	outcome := "request let through"
	if failClosed {
		outcome = "request refused"
	}
	return func(r *http.Request, err error) {
		logger.WarnContext(r.Context(), "ratelimit: limiter failed; "+outcome,
			"limit", name, "method", r.Method, "path", r.URL.Path, "error", err)
	}
}

// The header names of draft-ietf-httpapi-ratelimit-headers-11, in Go's
// canonical form.
const (
	headerPolicy = "Ratelimit-Policy"
	headerState  = "Ratelimit"
)

// SetHeaders sets the RateLimit headers of draft-ietf-httpapi-ratelimit-
// headers-11 for decision d under l, for a handler that checks a limit
// itself:
//
//	RateLimit-Policy: "<name>";q=<quota>;w=<window in seconds>
//	RateLimit: "<name>";r=<remaining>;t=<seconds until the full quota is back>
//
// Seconds are rounded up. The name is sent as a structured-field string
// (RFC 8941): characters outside printable ASCII are left out.
func SetHeaders(h http.Header, l Limit, d Decision) {
	hdr := newHeaders(l)
	h.Set(headerPolicy, hdr.policy)
	h.Set(headerState, hdr.state(d))
}

// headers holds the parts of the RateLimit headers of one limit that do not
// change from request to request.
type headers struct {
	policy string // the whole RateLimit-Policy value
	prefix string // `"<name>";r=`
}

func newHeaders(l Limit) headers {
	name := sfString(l.Name)
	return headers{
		policy: name + ";q=" + strconv.Itoa(l.Quota) + ";w=" + strconv.FormatInt(ceilSeconds(l.Window), 10),
		prefix: name + ";r=",
	}
}

// state returns the RateLimit value of d.
func (h headers) state(d Decision) string {
	var buf [64]byte
	b := append(buf[:0], h.prefix...)
	b = strconv.AppendInt(b, int64(max(d.Remaining, 0)), 10)
	b = append(b, ";t="...)
	b = strconv.AppendInt(b, ceilSeconds(d.Reset), 10)
	return string(b)
}

// sfString returns s as an RFC 8941 sf-string: in double quotes, with " and
// \ escaped and characters outside %x20-7E left out.
func sfString(s string) string {
	b := make([]byte, 0, len(s)+2)
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '\\':
			b = append(b, '\\', c)
		case c >= 0x20 && c <= 0x7e:
			b = append(b, c)
		}
	}
	return string(append(b, '"'))
}

// ceilSeconds returns d in whole seconds, rounded up.
func ceilSeconds(d time.Duration) int64 {
	if d <= 0 {
		return 0
	}
	s := int64(d / time.Second)
	if d%time.Second != 0 {
		s++
	}
	return s
}
