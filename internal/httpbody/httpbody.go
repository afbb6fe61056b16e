// Package httpbody reads the request bodies of Waybill's HTTP APIs (the
// resources, the webhook endpoints and the token service) with one rule
// for all of them: a body over its limit is 413 payload_too_large
// (apierrors.PayloadTooLarge), one that cannot be read 400
// invalid_request, whether it holds JSON or a form. Each API writes the
// error in its own shape; what decodes the bytes is the API's too.
package httpbody

import (
	"bytes"
	"errors"
	"io"
	"mime"
	"net/http"

	apierrors "github.com/waybillhq/waybill/errors"
)

// Read reads the whole body of r, which may be at most limit bytes. A
// longer body is apierrors.PayloadTooLarge(limit), and the server closes
// the connection after the answer (see http.MaxBytesReader; w may be nil,
// which leaves the connection as it is); a body that cannot be read is 400
// invalid_request.
func Read(w http.ResponseWriter, r *http.Request, limit int) ([]byte, error) {
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, int64(limit)))
	if err != nil {
		if TooLarge(err) {
			return nil, apierrors.PayloadTooLarge(int64(limit))
		}
		return nil, apierrors.InvalidRequest("the request body could not be read")
	}
	return body, nil
}

// Peek reads the start of r's body for a step in front of the handler (an
// idempotency fingerprint, a rate-limit key): at most limit bytes and one
// more, so that the caller can tell a body over limit. It gives r a body
// that reads the same bytes again, then what was left, and closes the
// original: the handler reads, and refuses, the body as it was sent. The
// error is the reader's own, after what could be read is put back.
func Peek(r *http.Request, limit int) ([]byte, error) {
	body, err := io.ReadAll(io.LimitReader(r.Body, int64(limit)+1))
	r.Body = peeked{Reader: io.MultiReader(bytes.NewReader(body), r.Body), Closer: r.Body}
	return body, err
}

// peeked is a body of which Peek read the start.
type peeked struct {
	io.Reader
	io.Closer
}

// JSON reads the body of r as Read does, after checking that its
// Content-Type is application/json (parameters such as charset allowed):
// another is 400 invalid_request, before the body is read.
func JSON(w http.ResponseWriter, r *http.Request, limit int) ([]byte, error) {
	if MediaType(r) != "application/json" {
		return nil, apierrors.InvalidRequest("Content-Type must be application/json")
	}
	return Read(w, r, limit)
}

// MediaType returns the media type of r's Content-Type without its
// parameters, in lower case; "" when it is missing or does not parse.
func MediaType(r *http.Request) string {
	mt, _, err := mime.ParseMediaType(r.Header.Get("Content-Type"))
	if err != nil {
		return ""
	}
	return mt
}

// Limit makes r's body fail with an *http.MaxBytesError once more than
// limit bytes are read from it, for code that reads it through another
// API (http.Request.ParseForm); TooLarge recognizes the error.
func Limit(w http.ResponseWriter, r *http.Request, limit int) {
	r.Body = http.MaxBytesReader(w, r.Body, int64(limit))
}

// TooLarge reports whether err is, or wraps, the error of a body read past
// its limit (Read, Limit).
func TooLarge(err error) bool {
	_, ok := errors.AsType[*http.MaxBytesError](err)
	return ok
}
