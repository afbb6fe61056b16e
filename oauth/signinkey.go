package oauth

import (
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/url"
	"strings"

	"github.com/waybillhq/waybill/internal/httpbody"
)

// KeyBySignInEmail is a rate-limit key function (a ratelimit.KeyFunc) for
// the password sign-ins (PathUserToken and the consent pages' PathLogin):
// it keys a request by the email it signs in with, "email:" and the hex
// SHA-256 of the email without surrounding space and in lower case, so
// that a limit counts the attempts on one account wherever they come
// from, and no email is kept in the limiter's store. It reads the
// parameters as the endpoints do (a form-urlencoded or JSON body of at
// most 64 KiB, with the same parser) and puts the body back for the
// endpoint to read. A request that names no email, or whose body does not
// read as the token endpoint reads one, has no key: the limit's other keys
// (its address, say) still count it.
func KeyBySignInEmail(r *http.Request) (string, bool) {
	email := strings.ToLower(strings.TrimSpace(peekParams(r).Get("email")))
	if email == "" {
		return "", false
	}
	sum := sha256.Sum256([]byte(email))
	return "email:" + hex.EncodeToString(sum[:]), true
}

// peekParams returns the parameters of r's body as readParams reads them,
// or nil when it would refuse them, and leaves r.Body to be read again
// from its start.
func peekParams(r *http.Request) url.Values {
	if read, ok := r.Context().Value(paramsKey{}).(*readParamsResult); ok {
		return read.form
	}
	if r.Body == nil || r.Body == http.NoBody {
		return nil
	}
	ct := httpbody.MediaType(r)
	if ct != "application/x-www-form-urlencoded" && ct != "application/json" {
		return nil
	}
	body, err := httpbody.Peek(r, maxRequestBytes)
	if err != nil || len(body) > maxRequestBytes {
		return nil
	}
	form, err := parseParams(ct, body)
	if err != nil {
		return nil
	}
	return form
}
