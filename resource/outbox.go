package resource

import (
	"context"
	"database/sql"
	"reflect"
	"time"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/tenancy"
)

// Outbox records the writes of a registry. Append runs inside the
// transaction of each create, update and delete, as its last statement, so
// that a change is recorded if and only if its write commits; an error it
// returns rolls the write back (and the client gets 500). Package events
// has one that keeps CloudEvents for a change feed and webhooks.
type Outbox interface {
	Append(ctx context.Context, tx *sql.Tx, c *Change) error
}

// BatchOutbox is an Outbox that records the changes of a batch write at
// once: AppendAll runs in the batch's transaction, as its last statement,
// with its changes in the order of the batch's items, and records them
// as Append would one by one, in that order. A batch write through an
// Outbox that is not a BatchOutbox calls Append for each change.
type BatchOutbox interface {
	Outbox
	AppendAll(ctx context.Context, tx *sql.Tx, cs []*Change) error
}

// HistoryOutbox is an Outbox that can store, in the one statement that
// stores a write's events, another statement of the write: the history
// entry of a SQLHistory on PostgreSQL, which then costs the write no round
// trip of its own. AppendWith records c as Append does, and runs the
// statement that with returns, given the number of its first placeholder
// ($first), in the same statement (on PostgreSQL, as a data-modifying WITH
// clause). The registry calls it for a single write when its History is a
// *SQLHistory on PostgreSQL; a batch write stores its entries on their own.
// A type that wraps an Outbox to change what Append does, and embeds it,
// must change AppendWith as well, or it is bypassed for those writes.
type HistoryOutbox interface {
	Outbox
	AppendWith(ctx context.Context, tx *sql.Tx, c *Change, with func(first int) (string, []any)) error
}

// Operation is what a write did to a record.
type Operation uint8

// The operations of a Change.
const (
	Created Operation = iota + 1
	Updated
	Deleted
)

// String returns "created", "updated" or "deleted".
func (o Operation) String() string {
	switch o {
	case Created:
		return "created"
	case Updated:
		return "updated"
	case Deleted:
		return "deleted"
	}
	return "unknown"
}

// Change is one write, as an Outbox sees it (and as a History's entry is
// made of it: see Change.HistoryEntry).
type Change struct {
	// Resource is the resource written.
	Resource *Resource
	// Tenant is the request's tenant: the organization, the branch of the
	// path, and the token (its client and user).
	Tenant tenancy.Tenant
	// Operation says what the write did.
	Operation Operation
	// ID is the record's id.
	ID string
	// EventID is the id of the write: a UUID (version 7) the registry
	// gives each change, which the events an Outbox keeps of it (the first,
	// when it keeps several) and the entry of the record's history carry,
	// so that a client can match an entry of the history with the event of
	// the change feed or the webhook delivery of the same write.
	EventID string
	// BranchID is the record's branch; "" for an organization-wide record
	// (every record of an organization-scoped resource, and those of a
	// branch-or-null resource whose branch_id is null).
	BranchID string
	// Path is the record's path, under the registry's first prefix:
	// /v1/{scopeId}/{resource}/{id}.
	Path string
	// Record is the record after the write as JSON, as the API shows it;
	// for a delete, the record as it was.
	Record []byte
	// Before is the record as it was before the write, as JSON, as the API
	// showed it: nil on create; on delete, the same as Record.
	Before []byte
	// Changed names the fields the write changed, in the order of the
	// resource's fields: on create, those the record was given (by the
	// client or a hook); on update, those whose value differs from before;
	// on delete, none.
	Changed []string
	// Status is the move of the resource's status field (see StatusFlow),
	// when an update moved it; nil otherwise.
	Status *StatusMove
	// Time is when the write happened (Write.Time).
	Time time.Time

	h             *handlers // the handlers of the write, for HistoryEntry
	before, after []any     // the values selected before and after the write
}

// StatusMove is a change of a status field from one state to another.
type StatusMove struct {
	Field, From, To string
}

// StatusField returns the field that the resource's StatusFlow keeps, or
// "".
func (r *Resource) StatusField() string { return r.Hooks.status }

// recordsChanges reports whether the registry keeps anything of a write:
// an Outbox or a History.
func (h *handlers) recordsChanges() bool {
	return h.registry.Outbox != nil || h.registry.History != nil
}

// appendChange tells the registry's Outbox and History, if any, of a write
// in tx and returns the change it told: before and after are the record's
// values as selected before and after the write (before nil on create,
// after nil on delete).
func (h *handlers) appendChange(ctx context.Context, tx *sql.Tx, t tenancy.Tenant, op Operation, id string, before, after []any, record []byte, at time.Time) (*Change, error) {
	if !h.recordsChanges() {
		return nil, nil
	}
	c, err := h.newChange(t, op, id, before, after, record, at)
	if err != nil {
		return nil, err
	}
	if out, ok := h.registry.Outbox.(HistoryOutbox); ok {
		if with, err := h.historyWith(c); err != nil {
			return nil, err
		} else if with != nil {
			// The event and the history entry in one statement.
			return c, out.AppendWith(ctx, tx, c, with)
		}
	}
	if out := h.registry.Outbox; out != nil {
		if err := out.Append(ctx, tx, c); err != nil {
			return nil, err
		}
	}
	if err := h.appendHistory(ctx, tx, []*Change{c}); err != nil {
		return nil, err
	}
	return c, nil
}

// newChange returns the change of a write (see appendChange).
func (h *handlers) newChange(t tenancy.Tenant, op Operation, id string, before, after []any, record []byte, at time.Time) (*Change, error) {
	c := &Change{Resource: h.resource, Tenant: t, Operation: op, ID: id, EventID: newID(), Record: record, Time: at,
		h: h, before: before, after: after}
	switch {
	case op == Deleted:
		c.Before = record
	case before != nil:
		b, err := h.appendRecord(make([]byte, 0, len(record)), before)
		if err != nil {
			return nil, apierrors.Internal(err)
		}
		c.Before = b
	}
	scope := t.OrganizationID
	if t.BranchID != "" {
		scope = t.BranchID
	}
	c.Path = h.registry.prefixes()[0] + "/" + scope + "/" + h.resource.Name + "/" + id
	vals := after
	if vals == nil {
		vals = before
	}
	if b, ok := h.branchOf(vals).(string); ok {
		c.BranchID = b
	}
	if op != Deleted {
		c.Changed, c.Status = h.changed(before, after)
	}
	return c, nil
}

// committed calls the registry's AfterCommit with a change whose write
// committed; c is nil when neither an Outbox nor a History recorded the
// write.
func (h *handlers) committed(c *Change) {
	if c != nil && h.registry.AfterCommit != nil {
		h.registry.AfterCommit(c)
	}
}

// changed returns the declared fields whose value differs between before
// (nil: a new record, whose non-null fields all count) and after, and the
// move of the status field among them.
func (h *handlers) changed(before, after []any) ([]string, *StatusMove) {
	var names []string
	var move *StatusMove
	for i, c := range h.cols {
		if h.resource.Field(c.name) == nil || isCommon(c.name) {
			continue
		}
		if before == nil {
			if after[i] != nil {
				names = append(names, c.name)
			}
			continue
		}
		a, errA := normalize(c.typ, after[i])
		if errA != nil {
			continue
		}
		b, errB := normalize(c.typ, before[i])
		if errB == nil && sameValue(a, b) {
			continue
		}
		names = append(names, c.name)
		if c.name == h.resource.StatusField() {
			from, _ := b.(string)
			to, _ := a.(string)
			move = &StatusMove{Field: c.name, From: from, To: to}
		}
	}
	return names, move
}

// isCommon reports whether name is a field every resource has.
func isCommon(name string) bool {
	switch name {
	case "id", "created_at", "updated_at":
		return true
	}
	return false
}

// sameValue reports whether two normalized values are equal.
func sameValue(a, b any) bool {
	if ta, ok := a.(time.Time); ok {
		tb, ok := b.(time.Time)
		return ok && ta.Equal(tb)
	}
	return reflect.DeepEqual(a, b)
}
