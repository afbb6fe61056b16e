package resource

import (
	"net/http"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/internal/conditional"
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

// checkIfMatch returns a *conditional.Stale when r's If-Match does not
// name the tag of current, the record as stored and locked.
func (h *handlers) checkIfMatch(r *http.Request, current []any) error {
	if _, ok := conditional.IfMatch(r); !ok {
		return nil
	}
	rec, err := h.appendRecord(nil, current)
	if err != nil {
		return apierrors.Internal(err)
	}
	return conditional.CheckIfMatch(r, rec)
}

// requireIfMatch refuses a write without If-Match when the resource
// requires one.
func (h *handlers) requireIfMatch(r *http.Request) error {
	if _, ok := conditional.IfMatch(r); ok || !h.resource.RequireIfMatch {
		return nil
	}
	return apierrors.PreconditionRequired("%s requires If-Match: send the ETag of the record as you last read it (GET it first), so that a change made meanwhile is not overwritten", h.resource.Name)
}

// writeStale answers a write refused by If-Match: 412 precondition_failed,
// in the error shape, with the record as stored in data and its ETag.
func writeStale(w http.ResponseWriter, s *conditional.Stale) {
	conditional.WriteStale(w, s, "the record has changed since the version If-Match names; nothing was changed. data holds the record as stored, ETag its version: apply your change to it and send again with that ETag", Version)
}
