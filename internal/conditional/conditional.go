// Package conditional holds the parts of RFC 9110 conditional requests
// that every single-record answer of the API shares: the strong entity tag
// of a record's JSON, the If-Match and If-None-Match lists and their
// comparison, and the 304 answer. The resource and webhook packages decide
// when to check them; what a 412 carries is theirs too.
package conditional

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strings"
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
