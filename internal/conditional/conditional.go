// Package conditional holds the parts of RFC 9110 conditional requests
// that every single-record answer of the API shares: the strong entity tag
// of a record's JSON, the If-Match and If-None-Match lists and their
// comparison, the 304 answer, and the 412 of a write whose If-Match names
// another version. The resource and webhook packages decide when to check
// them.
package conditional

import (
	"crypto/sha256"
	"encoding/base64"
	"encoding/json"
	"net/http"
	"strconv"
	"strings"

	apierrors "github.com/waybillhq/waybill/errors"
)

// ETag returns the strong entity tag of a record's JSON: 128 bits of its
// SHA-256, base64url-encoded, quoted. Every change of the JSON gives
// another tag.
func ETag(record []byte) string {
	sum := sha256.Sum256(record)
	b := make([]byte, 0, 24)
	b = append(b, '"')
	b = base64.RawURLEncoding.AppendEncode(b, sum[:16])
	return string(append(b, '"'))
}

// List is the value of an If-Match or If-None-Match header: "*" or a
// comma-separated list of entity tags, each "opaque" or W/"opaque".
type List string

// Matches reports whether the list names etag (a strong tag of ours). With
// weak comparison (If-None-Match) a weak tag with the same opaque part
// matches too; with strong comparison (If-Match) it never does.
func (l List) Matches(etag string, weak bool) bool {
	for part := range strings.SplitSeq(string(l), ",") {
		t := strings.TrimSpace(part)
		if t == "*" {
			return true
		}
		if strings.HasPrefix(t, "W/") {
			if !weak {
				continue
			}
			t = t[2:]
		}
		if t == etag {
			return true
		}
	}
	return false
}

// IfMatch returns the If-Match header of r; ok is false without one. A
// header given more than once counts as one list.
func IfMatch(r *http.Request) (l List, ok bool) { return header(r, "If-Match") }

// IfNoneMatch returns the If-None-Match header of r, like IfMatch.
func IfNoneMatch(r *http.Request) (l List, ok bool) { return header(r, "If-None-Match") }

func header(r *http.Request, name string) (List, bool) {
	vs := r.Header.Values(name)
	if len(vs) == 0 {
		return "", false
	}
	return List(strings.Join(vs, ",")), true
}

// NotModified answers a GET whose If-None-Match names the record's tag: 304
// with the ETag and no body.
func NotModified(w http.ResponseWriter, etag string) {
	w.Header().Set("ETag", etag)
	w.WriteHeader(http.StatusNotModified)
}

// Stale is the error of a write (PATCH, DELETE) whose If-Match names
// another version of what it changes: Current is that as stored and
// locked, as the API shows it in JSON, and ETag its tag. WriteStale
// answers it.
type Stale struct {
	Current []byte
	ETag    string
}

func (*Stale) Error() string { return "conditional: If-Match names another version" }

// CheckIfMatch returns a *Stale when r has an If-Match that does not name
// the tag of current (strong comparison; "*" matches), the JSON of what
// the write changes as stored; nil when it names it or r has no If-Match.
func CheckIfMatch(r *http.Request, current []byte) error {
	l, ok := IfMatch(r)
	if !ok {
		return nil
	}
	etag := ETag(current)
	if l.Matches(etag, false) {
		return nil
	}
	return &Stale{Current: current, ETag: etag}
}

// WriteStale answers a write that s refused: 412 precondition_failed in
// the error shape with description, s.Current in data, version as the
// envelope's, and s.ETag as ETag, so that the client can apply its change
// to what is stored and send again without another GET.
func WriteStale(w http.ResponseWriter, s *Stale, description, version string) {
	e := apierrors.PreconditionFailed("%s", description)
	body := make([]byte, 0, len(s.Current)+len(description)+96)
	body = append(body, `{"error":`...)
	body = appendString(body, e.Code)
	body = append(body, `,"error_description":`...)
	body = appendString(body, e.Description)
	body = append(body, `,"data":`...)
	body = append(body, s.Current...)
	body = append(body, `,"version":`...)
	body = appendString(body, version)
	body = append(body, "}\n"...)
	h := w.Header()
	h.Set("ETag", s.ETag)
	h.Set("Content-Type", "application/json")
	h.Set("Content-Length", strconv.Itoa(len(body)))
	w.WriteHeader(e.Status)
	_, _ = w.Write(body)
}

func appendString(b []byte, s string) []byte {
	q, _ := json.Marshal(s) // a string always marshals
	return append(b, q...)
}
