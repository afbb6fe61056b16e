package resource

import (
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strings"

	apierrors "github.com/waybillhq/waybill/errors"
)

// Conditional requests (RFC 9110 section 13).
//
// Every single-record answer carries a strong ETag: a hash of the record as
// the API shows it, updated_at included, so that every write of the record
// gives it a new tag and two records that look alike to a client share
// none (the id is part of the hash). GET by id with If-None-Match naming
// the current tag is 304 Not Modified. PATCH and DELETE with If-Match that
// does not name the current tag (strong comparison; "*" matches any stored
// record) change nothing and get 412 precondition_failed with the current
// record in the body and its ETag, so that the client can merge and retry
// without another GET. The check runs inside the write's transaction, after
// the record is locked (SELECT ... FOR UPDATE on PostgreSQL; SQLite has one
// writer at a time), so no other write can come between the check and the
// write. A resource with RequireIfMatch refuses PATCH and DELETE without
// If-Match with 428 precondition_required.
//
// As RFC 9110 section 13.2.1 asks, preconditions are evaluated only for a
// request that would otherwise succeed: an unknown id stays 404.

// etagOf returns the strong entity tag of a record's JSON: 128 bits of its
// SHA-256, base64url-encoded, quoted.
func etagOf(record []byte) string {
	sum := sha256.Sum256(record)
	b := make([]byte, 0, 24)
	b = append(b, '"')
	b = base64.RawURLEncoding.AppendEncode(b, sum[:16])
	return string(append(b, '"'))
}

// tagList is the value of an If-Match or If-None-Match header: "*" or a
// comma-separated list of entity tags, each "opaque" or W/"opaque".
type tagList string

// matches reports whether the list names etag (a strong tag of ours). With
// weak comparison (If-None-Match) a weak tag with the same opaque part
// matches too; with strong comparison (If-Match) it never does.
func (l tagList) matches(etag string, weak bool) bool {
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

// ifMatch returns the If-Match header of r; ok is false without one. A
// header given more than once counts as one list.
func ifMatch(r *http.Request) (tagList, bool) {
	return headerList(r, "If-Match")
}

func ifNoneMatch(r *http.Request) (tagList, bool) {
	return headerList(r, "If-None-Match")
}

func headerList(r *http.Request, name string) (tagList, bool) {
	vs := r.Header.Values(name)
	if len(vs) == 0 {
		return "", false
	}
	return tagList(strings.Join(vs, ",")), true
}

// staleRecord is the error of a PATCH or DELETE whose If-Match names
// another version of the record: it carries the record as stored, as JSON,
// which the 412 answer shows, and its tag.
type staleRecord struct {
	record []byte
	etag   string
}

func (e *staleRecord) Error() string { return "resource: If-Match names another version of the record" }

// checkIfMatch returns a *staleRecord when r's If-Match does not name the
// tag of current, the record as stored and locked.
func (h *handlers) checkIfMatch(r *http.Request, current []any) error {
	l, ok := ifMatch(r)
	if !ok {
		return nil
	}
	rec, err := h.appendRecord(nil, current)
	if err != nil {
		return apierrors.Internal(err)
	}
	etag := etagOf(rec)
	if l.matches(etag, false) {
		return nil
	}
	return &staleRecord{record: rec, etag: etag}
}

// requireIfMatch refuses a write without If-Match when the resource
// requires one.
func (h *handlers) requireIfMatch(r *http.Request) error {
	if _, ok := ifMatch(r); ok || !h.resource.RequireIfMatch {
		return nil
	}
	return apierrors.PreconditionRequired("%s requires If-Match: send the ETag of the record as you last read it (GET it first), so that a change made meanwhile is not overwritten", h.resource.Name)
}

// writeStale answers a write refused by If-Match: 412 precondition_failed,
// in the error shape, with the record as stored in data and its ETag.
func (h *handlers) writeStale(w http.ResponseWriter, s *staleRecord) {
	rec := s.record
	e := apierrors.PreconditionFailed("the record has changed since the version If-Match names; nothing was changed. data holds the record as stored, ETag its version: apply your change to it and send again with that ETag")
	buf := make([]byte, 0, len(rec)+256)
	buf = append(buf, `{"error":`...)
	buf = appendJSON(buf, e.Code)
	buf = append(buf, `,"error_description":`...)
	buf = appendJSON(buf, e.Description)
	buf = append(buf, `,"data":`...)
	buf = append(buf, rec...)
	buf = append(buf, `,"version":"`+Version+`"}`...)
	w.Header().Set("ETag", s.etag)
	writeJSON(w, http.StatusPreconditionFailed, buf)
}

// notModified answers a GET whose If-None-Match names the record's tag: 304
// with the ETag and no body.
func notModified(w http.ResponseWriter, etag string) {
	w.Header().Set("ETag", etag)
	w.WriteHeader(http.StatusNotModified)
}
