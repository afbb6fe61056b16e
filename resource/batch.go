package resource

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strconv"
	"strings"
	"time"

	sq "github.com/Masterminds/squirrel"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/internal/httpbody"
	"github.com/waybillhq/waybill/internal/sqlerr"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/query/sqlbuild"
	"github.com/waybillhq/waybill/tenancy"
)

// Batch writes.
//
// POST {prefix}/{scopeId}/{resource} takes a JSON array of 1 to
// MaxBatchItems objects as well as one object, in a body of up to
// MaxBatchBytes (one object keeps the MaxBodyBytes bound), and creates
// them all or none, in one transaction: 201 {"data": [records in the order
// given], "version"}. PATCH {prefix}/{scopeId}/{resource} takes an array
// of objects that each name a record by "id", or by "external_id" when
// they have no id, with the fields to change, and updates them all or
// none: 200 {"data": [...], "version"}. Each item is checked as the single
// write would be (the whitelists, types and bounds, the hooks, the
// references, the If-Match of a RequireIfMatch resource excepted, which a
// batch update refuses with 428) and every refused item is named, not
// only the first: 400 invalid_batch (409 conflict when every refusal is a
// conflict) with "errors": [{"index", "error", "error_description"}], and
// nothing is written. An empty array, more than MaxBatchItems items, or a
// body that is not a JSON array of objects is refused likewise. Each
// record written gives its change to the Outbox, in the order given.
//
// POST with Prefer: resolution=merge-duplicates is an upsert, of one
// object or an array: every item carries external_id (Resource.ExternalID);
// an item whose external_id names a record of the scope it would be
// created in updates that record under the PATCH rules (the update
// whitelist, the hooks; fields not sent keep their values; a field that
// may be set only on create may be sent with its stored value), any other
// creates one. The answer is 200 {"data": [...], "outcomes": ["created" |
// "updated" | "unchanged", ...], "version"} with Preference-Applied:
// resolution=merge-duplicates, for one object as for an array; an item
// whose fields all hold the values sent is "unchanged": nothing is written
// and no change recorded. Two upserts of one new external_id at once never
// make two records: the database's unique index refuses the second insert,
// and the upsert runs again and finds the record.
//
// A batch counts against the registry's rate limits as ceil(n/10)
// requests (see Registry.ChargeExtra), and an Idempotency-Key covers it
// whole.

// The bounds of a batch write.
const (
	// MaxBatchItems is the most items one batch write holds.
	MaxBatchItems = 1000
	// MaxBatchBytes is the largest body of a batch write: 10 MiB.
	MaxBatchBytes = 10 << 20
	// ItemsPerRequest is how many items of a batch count as one request
	// of the rate limits.
	ItemsPerRequest = 10
)

// mergeDuplicates is the Prefer preference of an upsert.
const mergeDuplicates = "resolution=merge-duplicates"

// The outcomes of an upsert's items.
const (
	outcomeCreated   = "created"
	outcomeUpdated   = "updated"
	outcomeUnchanged = "unchanged"
)

// item is one item of a batch write, as read and as written.
type item struct {
	index int
	// sent are the fields the item sends, as read; changes those it
	// writes (an upsert's update leaves out those that hold the values
	// sent).
	sent, changes Record
	err           *apierrors.Error // the item's refusal; nil while it stands
	// The record: its id, its branch (nil when organization-wide), and
	// its values before the write (nil for a new record) and after.
	id           string
	branch       any
	current, out []any
	// key is what a batch update or an upsert finds the record by: the
	// id, or the external_id (byExternalID).
	key          string
	byExternalID bool
	outcome      string
	write        *Write
	// record is the record as the answer shows it (see batchAnswer),
	// which its change carries too.
	record []byte
}

// refuse records the item's refusal, when it has none yet: err as an API
// error, or refuse's judgement of a database error (see writeError).
func (it *item) refuse(err error, refuse func(string, ...any) *apierrors.Error) {
	if it.err != nil {
		return
	}
	e, ok := apierrors.As(writeError(err, refuse))
	if !ok {
		e = apierrors.Internal(err)
	}
	it.err = e
}

// refusals returns the refusals of the items, nil when none was refused.
func refusals(items []*item) []apierrors.ItemError {
	var out []apierrors.ItemError
	for _, it := range items {
		if it.err != nil {
			out = append(out, apierrors.ItemError{Index: it.index, Code: it.err.Code, Description: it.err.Description})
		}
	}
	return out
}

// refusedBatch is the answer of a batch some of whose items were refused.
func refusedBatch(items []*item) error {
	refused := refusals(items)
	return apierrors.InvalidBatch(refused, "%d of the %d items were refused (see errors); nothing was written", len(refused), len(items))
}

// readWrite reads the body of a POST: one JSON object of up to
// MaxBodyBytes, or a JSON array (batch true) of up to MaxBatchBytes.
func readWrite(w http.ResponseWriter, r *http.Request) (body []byte, batch bool, err error) {
	if httpbody.MediaType(r) != "application/json" {
		return nil, false, apierrors.InvalidRequest("Content-Type must be application/json")
	}
	start, err := httpbody.Peek(r, 4096)
	if err != nil {
		return nil, false, apierrors.InvalidRequest("the request body could not be read")
	}
	limit := MaxBodyBytes
	if batch = isArray(start); batch {
		limit = MaxBatchBytes
	}
	body, err = httpbody.Read(w, r, limit)
	return body, batch, err
}

// isArray reports whether a JSON text starts with an array.
func isArray(b []byte) bool {
	t := bytes.TrimLeft(b, " \t\r\n")
	return len(t) > 0 && t[0] == '['
}

// readBatch parses body, a JSON array of 1 to MaxBatchItems values, and
// gives each value to read with its index, in order. A body that is not
// such an array is invalid_batch, naming the item where the JSON breaks
// when it does.
func readBatch(body []byte, read func(i int, raw json.RawMessage) *item) ([]*item, error) {
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('[') {
		return nil, apierrors.InvalidBatch(nil, "the body must be one JSON object or a JSON array of 1 to %d objects", MaxBatchItems)
	}
	var items []*item
	for dec.More() {
		i := len(items)
		if i == MaxBatchItems {
			return nil, apierrors.InvalidBatch(nil, "a batch holds at most %d items; this one holds more: send it in several batches", MaxBatchItems)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, brokenAt(i, dec, err)
		}
		items = append(items, read(i, raw))
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim(']') {
		return nil, brokenAt(len(items), dec, err)
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, apierrors.InvalidBatch(nil, "the body holds more than one JSON array; send one array of 1 to %d objects", MaxBatchItems)
	}
	if len(items) == 0 {
		return nil, apierrors.InvalidBatch(nil, "the batch is empty: send 1 to %d items", MaxBatchItems)
	}
	return items, nil
}

// brokenAt is the refusal of a batch whose JSON breaks at item i.
func brokenAt(i int, dec *json.Decoder, err error) error {
	msg := "item " + strconv.Itoa(i) + " is not valid JSON"
	var syntax *json.SyntaxError
	if errors.As(err, &syntax) {
		msg += " (at byte " + strconv.FormatInt(syntax.Offset, 10) + " of the body)"
	} else {
		msg += " (at byte " + strconv.FormatInt(dec.InputOffset(), 10) + " of the body)"
	}
	return apierrors.InvalidBatch([]apierrors.ItemError{{Index: i, Code: apierrors.CodeInvalidRequest, Description: msg}},
		"the body is not valid JSON from item %d on; nothing was written", i)
}

// itemObject returns the members of raw, one item of a batch, which must
// be a JSON object, checking each name with accept as readObject does.
func (r *Resource) itemObject(raw json.RawMessage, accept func(string) error, refuse func(string, ...any) *apierrors.Error) ([]member, error) {
	if len(raw) == 0 || raw[0] != '{' {
		return nil, refuse("an item must be a JSON object, not %s", jsonKind(raw))
	}
	return decodeObject(raw, accept, len(r.fields))
}

// jsonKind names the kind of a JSON value, with its article.
func jsonKind(raw json.RawMessage) string {
	switch raw[0] {
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	}
	return "a number"
}

// newItem returns the item at index i, refused with err when err is not
// nil.
func newItem(i int, changes Record, err error) *item {
	it := &item{index: i, sent: changes, changes: changes}
	if err != nil {
		it.refuse(err, apierrors.InvalidRequest)
	}
	return it
}

// charge counts a batch of n items against the rate limits as
// ceil(n/ItemsPerRequest) requests: the one the request was, and the rest
// through Registry.ChargeExtra.
func (h *handlers) charge(w http.ResponseWriter, r *http.Request, n int) error {
	extra := (n+ItemsPerRequest-1)/ItemsPerRequest - 1
	if extra <= 0 || h.registry.ChargeExtra == nil {
		return nil
	}
	return h.registry.ChargeExtra(w, r, extra)
}

// repeatedExternalIDs refuses, as a conflict, each standing item whose
// external_id an earlier item of the batch has.
func repeatedExternalIDs(items []*item) {
	first := map[string]int{}
	for _, it := range items {
		v, ok := it.changes[ExternalIDColumn].(string)
		if it.err != nil || !ok {
			continue
		}
		if j, seen := first[v]; seen {
			it.err = apierrors.Conflict("external_id %q is also item %d's: a batch may hold each external_id once", v, j)
			continue
		}
		first[v] = it.index
	}
}

// createBatch is POST {prefix}/{scopeId}/{resource} with an array.
func (h *handlers) createBatch(w http.ResponseWriter, r *http.Request, t tenancy.Tenant, body []byte) error {
	res := h.resource
	items, err := readBatch(body, func(i int, raw json.RawMessage) *item {
		members, err := res.itemObject(raw, func(name string) error {
			_, err := res.writableField(name, true)
			return err
		}, apierrors.InvalidCreate)
		if err != nil {
			return newItem(i, nil, err)
		}
		changes, err := res.changes(members, true)
		return newItem(i, changes, err)
	})
	if err != nil {
		return err
	}
	if err := h.charge(w, r, len(items)); err != nil {
		return err
	}
	repeatedExternalIDs(items)
	var branch any
	if res.ScopeType != tenancy.Organization {
		branch = t.BranchID
	}
	// Each run of the transaction (see writeBatch) starts from the items
	// as read.
	create := func(context.Context, *sql.Tx) error {
		for _, it := range items {
			it.id, it.branch, it.outcome = newID(), branch, outcomeCreated
		}
		return nil
	}
	return h.writeBatch(w, r, t, items, http.StatusCreated, batchCreate, create)
}

// writeBatch writes the standing items of a batch in one transaction, all
// or none, and answers status with the records (and, of an upsert, their
// outcomes). find runs first in the transaction, on the items as read:
// an upsert's and a batch update's finding of their records, which sets
// each item's id, current record and outcome (a create's new ids). Creates (current nil) and
// updates alike go through their hooks, reference checks, write and
// change, in the order given. Items refused before (err set) refuse the
// batch, after the others are checked too, so that the answer names every
// refusal. An upsert whose insert another request's overtook runs again,
// up to maxAttempts times, and so does any batch the database broke off
// (a deadlock, a serialization failure).
func (h *handlers) writeBatch(w http.ResponseWriter, r *http.Request, t tenancy.Tenant, items []*item, status int, kind batchKind,
	find func(ctx context.Context, tx *sql.Tx) error) error {
	ctx := r.Context()
	var a *answer
	var changes []*Change
	var err error
	refused := make([]*apierrors.Error, len(items))
	for i, it := range items {
		refused[i] = it.err
	}
	for attempt := 1; ; attempt++ {
		err = h.inTx(ctx, func(tx *sql.Tx) error {
			if err := find(ctx, tx); err != nil {
				return err
			}
			at := h.registry.now()
			if err := h.takenExternalIDs(ctx, tx, t, items); err != nil {
				return err
			}
			if kind == batchUpsert && overtaken(items, refused) {
				return errOvertaken
			}
			if err := h.runHooks(ctx, tx, t, items, at); err != nil {
				return err
			}
			if err := h.checkItemReferences(ctx, tx, t, items); err != nil {
				return err
			}
			if refusals(items) != nil {
				// Write the others too, so that the answer names those the
				// database refuses (each alone only when the database
				// refuses some), then roll back.
				if err := h.tryWrite(ctx, tx, t, items); err != nil {
					return err
				}
				return refusedBatch(items)
			}
			if err := h.writeItems(ctx, tx, t, items, kind == batchUpsert); err != nil {
				return err
			}
			var err error
			if a, err = h.batchAnswer(status, items, kind == batchUpsert); err != nil {
				return err
			}
			if err := h.rememberFor(r, tx, t, a); err != nil {
				return err
			}
			changes, err = h.appendChanges(ctx, tx, t, items, at)
			return err
		})
		if !errors.Is(err, errOvertaken) && !sqlerr.Retryable(err) || attempt == maxAttempts {
			break
		}
		for i, it := range items { // as read, for the next attempt
			*it = item{index: it.index, sent: it.sent, changes: it.sent, err: refused[i], key: it.key, byExternalID: it.byExternalID}
		}
	}
	if errors.Is(err, errOvertaken) {
		err = apierrors.Conflict("other requests kept writing the same external_id meanwhile; nothing was written: send the batch again")
	}
	if err != nil {
		return h.answerFailed(w, r, err, apierrors.InvalidRequest)
	}
	for _, c := range changes {
		h.committed(c)
	}
	send(w, a)
	return nil
}

// batchKind is what a batch write does with its items.
type batchKind int

const (
	batchCreate batchKind = iota // POST of an array
	batchUpsert                  // POST with Prefer: resolution=merge-duplicates
	batchUpdate                  // PATCH of an array
)

// overtaken reports whether an upsert's item that was to create a record
// found its external_id taken (by a record another request committed
// since the upsert looked): refused with a conflict it did not have as
// read (refused, by index).
func overtaken(items []*item, refused []*apierrors.Error) bool {
	for i, it := range items {
		if it.current == nil && it.err != nil && refused[i] == nil && it.err.Code == apierrors.CodeConflict {
			return true
		}
	}
	return false
}

// maxAttempts bounds the runs of an upsert whose inserts other requests
// overtook (see writeBatch).
const maxAttempts = 5

// errOvertaken is the failure of an upsert's insert of an external_id
// that another request inserted first: the upsert runs again and finds
// the record.
var errOvertaken = errors.New("resource: an external_id was inserted meanwhile")

// writes reports whether the item is to be written: it stands and is not
// unchanged.
func (it *item) writes() bool { return it.err == nil && it.outcome != outcomeUnchanged }

// runHooks runs the create or update hooks of each item to be written,
// refusing the item with what its hook returns: the update hooks of each
// update, then each create hook in turn on the creates still standing, at
// once where it has a BeforeCreateBatch. An error that is not the item's
// (the database's, the server's) fails the batch.
func (h *handlers) runHooks(ctx context.Context, tx *sql.Tx, t tenancy.Tenant, items []*item, at time.Time) error {
	res := h.resource
	var creates []*item
	for _, it := range items {
		if !it.writes() {
			continue
		}
		it.write = &Write{Resource: res, Tenant: t, Changes: it.changes, Dialect: h.dialect(), Time: at}
		if it.current == nil {
			creates = append(creates, it)
			continue
		}
		it.write.Current = h.record(it.current)
		if err := runHook(ctx, tx, it, res.Hooks.BeforeUpdate, apierrors.InvalidUpdate); err != nil {
			return err
		}
	}
	for _, step := range res.Hooks.steps() {
		if step.BeforeCreateBatch != nil {
			var ws []*Write
			for _, it := range creates {
				if it.err == nil {
					ws = append(ws, it.write)
				}
			}
			if len(ws) > 0 {
				if err := step.BeforeCreateBatch(ctx, tx, ws); err != nil {
					return err
				}
			}
			continue
		}
		for _, it := range creates {
			if err := runHook(ctx, tx, it, step.BeforeCreate, apierrors.CreateFailed); err != nil {
				return err
			}
		}
	}
	return nil
}

// runHook runs hook (when not nil) on the write of it, a standing item,
// refusing it with what the hook returns; an error that is not the item's
// is returned.
func runHook(ctx context.Context, tx *sql.Tx, it *item, hook func(context.Context, *sql.Tx, *Write) error, refuse func(string, ...any) *apierrors.Error) error {
	if hook == nil || it.err != nil {
		return nil
	}
	if err := hook(ctx, tx, it.write); err != nil {
		if e, ok := apierrors.As(err); !ok || e.Status >= http.StatusInternalServerError {
			return err // the server's failure, not the item's
		}
		it.refuse(err, refuse)
	}
	return nil
}

// checkItemReferences checks the references of every item to be written
// (see checkReferences), with one query per reference field and branch.
func (h *handlers) checkItemReferences(ctx context.Context, tx *sql.Tx, t tenancy.Tenant, items []*item) error {
	byBranch := map[any][]*item{}
	var branches []any
	for _, it := range items {
		if !it.writes() {
			continue
		}
		if _, ok := byBranch[it.branch]; !ok {
			branches = append(branches, it.branch)
		}
		byBranch[it.branch] = append(byBranch[it.branch], it)
	}
	for _, b := range branches {
		group := byBranch[b]
		recs := make([]Record, len(group))
		for i, it := range group {
			recs[i] = it.write.Changes
		}
		refused, err := h.referenceRefusals(ctx, tx, t, b, recs)
		if err != nil {
			return err
		}
		for i, it := range group {
			if refused[i] != "" {
				refuse := apierrors.CreateFailed
				if it.current != nil {
					refuse = apierrors.InvalidUpdate
				}
				it.err = refuse("%s", refused[i])
			}
		}
	}
	return nil
}

// takenExternalIDs refuses, as a conflict, each item to be written whose
// new external_id another record of its scope holds.
func (h *handlers) takenExternalIDs(ctx context.Context, tx *sql.Tx, t tenancy.Tenant, items []*item) error {
	if !h.resource.ExternalID {
		return nil
	}
	byBranch := map[any]map[string][]*item{}
	for _, it := range items {
		v, ok := it.changes[ExternalIDColumn].(string)
		if !it.writes() || !ok {
			continue
		}
		if byBranch[it.branch] == nil {
			byBranch[it.branch] = map[string][]*item{}
		}
		byBranch[it.branch][v] = append(byBranch[it.branch][v], it)
	}
	for branch, wanted := range byBranch {
		values := make([]string, 0, len(wanted))
		for v := range wanted {
			values = append(values, v)
		}
		b := sq.Select("id", ExternalIDColumn).From(h.resource.table()).
			Where(h.scopeOf(t, branch)).Where(sq.Eq{ExternalIDColumn: values})
		rows, err := h.queryRows(ctx, tx, b)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id, v string
			if err := rows.Scan(&id, &v); err != nil {
				rows.Close()
				return err
			}
			for _, it := range wanted[v] {
				if it.id != id && it.err == nil {
					it.err = h.takenError(v, branch)
				}
			}
		}
		rows.Close()
		if err := rows.Err(); err != nil {
			return err
		}
	}
	return nil
}

// scopeOf returns the condition that selects the records of the
// external_id scope of a record of the tenant's organization whose branch
// is branch (nil: an organization-wide record).
func (h *handlers) scopeOf(t tenancy.Tenant, branch any) sq.Sqlizer {
	and := sq.And{sq.Eq{OrganizationColumn: t.OrganizationID}}
	if h.resource.ScopeType != tenancy.Organization {
		and = append(and, sq.Eq{BranchColumn: branch}) // nil is IS NULL
	}
	return and
}

// takenError is the refusal of a write that would repeat external_id v in
// the scope of branch.
func (h *handlers) takenError(v string, branch any) *apierrors.Error {
	where := "this organization"
	if branch != nil {
		where = "this branch"
	}
	return apierrors.Conflict("external_id %q is already used by another %s of %s", v, Singular(h.resource.Name), where)
}

// externalIDConflict returns the 409 of a single write of a record of
// branch with changes, refused with err, when err is a unique violation
// and the external_id it sets is taken; otherwise err.
func (h *handlers) externalIDConflict(ctx context.Context, t tenancy.Tenant, branch any, id string, changes Record, err error) error {
	v, ok := changes[ExternalIDColumn].(string)
	if !ok || !h.resource.ExternalID || sqlerr.KindOf(err) != sqlerr.Unique {
		return err
	}
	text, args, qerr := sqlbuild.SQL(h.dialect(), sq.Select("1").From(h.resource.table()).
		Where(h.scopeOf(t, branch)).Where(sq.Eq{ExternalIDColumn: v}).Where(sq.NotEq{"id": id}).Limit(1))
	if qerr != nil {
		return err
	}
	var one int
	if qerr := h.db().QueryRowContext(ctx, text, args...).Scan(&one); qerr != nil {
		return err
	}
	return h.takenError(v, branch)
}

// writeItems inserts the new records of the batch, in one statement for
// the records that set the same fields, and updates the others, one
// statement each. When a statement fails (a constraint of the database
// that no check above foresaw), it rolls back what it wrote and names
// every item the database refuses (see diagnose). An upsert (upsert true)
// whose insert meets a record inserted meanwhile with the same
// external_id gets errOvertaken.
func (h *handlers) writeItems(ctx context.Context, tx *sql.Tx, t tenancy.Tenant, items []*item, upsert bool) error {
	if _, err := tx.ExecContext(ctx, "SAVEPOINT waybill_batch"); err != nil {
		return err
	}
	err := h.insertItems(ctx, tx, t, items)
	if err == nil {
		for _, it := range items {
			if it.writes() && it.current != nil {
				if it.out, err = h.updateRow(ctx, tx, t, it.id, it.write); err != nil {
					break
				}
			}
		}
	}
	if err == nil || sqlerr.KindOf(err) == sqlerr.None {
		return err
	}
	if _, err := tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT waybill_batch"); err != nil {
		return err
	}
	if upsert && sqlerr.KindOf(err) == sqlerr.Unique {
		// Another request may have inserted an external_id meanwhile (it
		// committed while this insert waited for it): this statement sees
		// it, and the upsert runs again to update that record.
		if err := h.takenExternalIDs(ctx, tx, t, items); err != nil {
			return err
		}
		if refusals(items) != nil {
			return errOvertaken
		}
	}
	if err := h.diagnose(ctx, tx, t, items); err != nil {
		return err
	}
	if refusals(items) == nil {
		return errors.New("resource: a batch write failed that its items, written alone, do not")
	}
	return refusedBatch(items)
}

// tryWrite writes the standing items of a refused batch as writeItems
// would, under a savepoint it rolls back, to find those the database
// refuses: in one statement a group when it takes them all, else each
// alone (see diagnose).
func (h *handlers) tryWrite(ctx context.Context, tx *sql.Tx, t tenancy.Tenant, items []*item) error {
	if _, err := tx.ExecContext(ctx, "SAVEPOINT waybill_try"); err != nil {
		return err
	}
	err := h.insertItems(ctx, tx, t, items)
	for _, it := range items {
		if err == nil && it.writes() && it.current != nil {
			_, err = h.updateRow(ctx, tx, t, it.id, it.write)
		}
	}
	if _, rerr := tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT waybill_try"); rerr != nil {
		return rerr
	}
	switch {
	case err == nil:
		return nil
	case sqlerr.KindOf(err) == sqlerr.None:
		return err
	}
	return h.diagnose(ctx, tx, t, items)
}

// diagnose writes each item to be written alone, under a savepoint of its
// own that it then rolls back, and refuses those the database refuses: a
// constraint that no check foresaw (a CHECK, a unique index).
func (h *handlers) diagnose(ctx context.Context, tx *sql.Tx, t tenancy.Tenant, items []*item) error {
	for _, it := range items {
		if !it.writes() {
			continue
		}
		if _, err := tx.ExecContext(ctx, "SAVEPOINT waybill_item"); err != nil {
			return err
		}
		var err error
		refuse := apierrors.CreateFailed
		if it.current == nil {
			_, err = h.insert(ctx, tx, t, it.id, it.write)
		} else {
			refuse = apierrors.InvalidUpdate
			_, err = h.updateRow(ctx, tx, t, it.id, it.write)
		}
		if err != nil && sqlerr.KindOf(err) == sqlerr.None {
			return err
		}
		if _, rerr := tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT waybill_item"); rerr != nil {
			return rerr
		}
		if err == nil {
			continue
		}
		if v, ok := it.write.Changes[ExternalIDColumn].(string); ok && sqlerr.KindOf(err) == sqlerr.Unique && h.resource.ExternalID {
			it.err = h.takenError(v, it.branch)
			continue
		}
		it.refuse(err, refuse)
	}
	return nil
}

// insertItems inserts the new records among items, those that set the
// same fields in one statement of at most maxInsertRows rows, and keeps
// each record as written.
func (h *handlers) insertItems(ctx context.Context, tx *sql.Tx, t tenancy.Tenant, items []*item) error {
	type group struct {
		cols  []string
		items []*item
	}
	var groups []*group
	byCols := map[string]*group{}
	for _, it := range items {
		if !it.writes() || it.current != nil {
			continue
		}
		cols := h.insertColumns(it.write)
		key := strings.Join(cols, ",")
		g := byCols[key]
		if g == nil {
			g = &group{cols: cols}
			byCols[key] = g
			groups = append(groups, g)
		}
		g.items = append(g.items, it)
	}
	for _, g := range groups {
		for start := 0; start < len(g.items); start += maxInsertRows {
			chunk := g.items[start:min(start+maxInsertRows, len(g.items))]
			b := sq.Insert(h.resource.table()).Columns(g.cols...).Suffix("RETURNING " + h.columnList)
			byID := make(map[string]*item, len(chunk))
			for _, it := range chunk {
				b = b.Values(h.insertValues(t, it.id, it.write)...)
				byID[it.id] = it
			}
			rows, err := h.queryRows(ctx, tx, b)
			if err != nil {
				return err
			}
			for rows.Next() {
				vals, ptrs := h.scratch()
				if err := rows.Scan(ptrs...); err != nil {
					rows.Close()
					return err
				}
				if id, _ := normalizeString(vals[0]); byID[id] != nil {
					it := byID[id]
					it.out = vals
				}
			}
			rows.Close()
			if err := rows.Err(); err != nil {
				return err
			}
		}
	}
	return nil
}

// maxInsertRows bounds the rows of one INSERT of a batch, well below the
// bound of both databases on the parameters of a statement.
const maxInsertRows = 500

// batchAnswer returns the answer of a batch write: status, the records in
// the order given, and their outcomes when outcomes is true.
func (h *handlers) batchAnswer(status int, items []*item, outcomes bool) (*answer, error) {
	buf := make([]byte, 0, 64+len(items)*512)
	buf = append(buf, `{"data":[`...)
	spans := make([][2]int, len(items))
	for i, it := range items {
		if i > 0 {
			buf = append(buf, ',')
		}
		vals := it.out
		if vals == nil {
			vals = it.current
		}
		spans[i][0] = len(buf)
		var err error
		if buf, err = h.appendRecord(buf, vals); err != nil {
			return nil, apierrors.Internal(err)
		}
		spans[i][1] = len(buf)
	}
	buf = append(buf, ']')
	a := &answer{Status: status, Headers: map[string]string{}}
	if outcomes {
		buf = append(buf, `,"outcomes":[`...)
		for i, it := range items {
			if i > 0 {
				buf = append(buf, ',')
			}
			buf = appendString(buf, it.outcome)
		}
		buf = append(buf, ']')
		a.Headers["Preference-Applied"] = mergeDuplicates
	}
	a.Body = append(buf, `,"version":"`+Version+`"}`...)
	for i, it := range items {
		it.record = a.Body[spans[i][0]:spans[i][1]:spans[i][1]]
	}
	return a, nil
}

// appendChanges tells the Outbox and the History of each record written,
// in the order given, with the record the answer shows (batchAnswer runs
// first): the Outbox at once when it is a BatchOutbox.
func (h *handlers) appendChanges(ctx context.Context, tx *sql.Tx, t tenancy.Tenant, items []*item, at time.Time) ([]*Change, error) {
	if !h.recordsChanges() {
		return nil, nil
	}
	var changes []*Change
	for _, it := range items {
		if !it.writes() {
			continue
		}
		op := Created
		if it.current != nil {
			op = Updated
		}
		c, err := h.newChange(t, op, it.id, it.current, it.out, it.record, at)
		if err != nil {
			return nil, err
		}
		changes = append(changes, c)
	}
	if len(changes) == 0 {
		return nil, nil
	}
	switch out := h.registry.Outbox.(type) {
	case nil:
	case BatchOutbox:
		if err := out.AppendAll(ctx, tx, changes); err != nil {
			return nil, err
		}
	default:
		for _, c := range changes {
			if err := out.Append(ctx, tx, c); err != nil {
				return nil, err
			}
		}
	}
	return changes, h.appendHistory(ctx, tx, changes)
}

// upsert is POST {prefix}/{scopeId}/{resource} with Prefer:
// resolution=merge-duplicates, of one object or (batch) an array.
func (h *handlers) upsert(w http.ResponseWriter, r *http.Request, t tenancy.Tenant, body []byte, batch bool) error {
	res := h.resource
	if !res.ExternalID {
		return apierrors.InvalidRequest("%s have no external_id, which an upsert (Prefer: %s) finds records by", res.Name, mergeDuplicates)
	}
	if res.RequireIfMatch {
		return apierrors.PreconditionRequired("%s require If-Match, which an upsert cannot carry for the records it updates: create them with POST, and update each with PATCH and the ETag of the record as you last read it", res.Name)
	}
	read := func(i int, raw json.RawMessage) *item {
		members, err := res.itemObject(raw, res.upsertable, apierrors.InvalidCreate)
		if err != nil {
			return newItem(i, nil, err)
		}
		changes, err := res.decodeMembers(members, apierrors.InvalidCreate, res.upsertable)
		if err != nil {
			return newItem(i, nil, err)
		}
		it := newItem(i, changes, nil)
		if it.key, _ = changes[ExternalIDColumn].(string); it.key == "" {
			it.err = apierrors.InvalidCreate("external_id is required in an upsert: it names the record to create or update")
		}
		it.byExternalID = true
		return it
	}
	var items []*item
	if batch {
		var err error
		if items, err = readBatch(body, read); err != nil {
			return err
		}
	} else {
		items = []*item{read(0, body)}
	}
	if err := h.charge(w, r, len(items)); err != nil {
		return err
	}
	repeatedExternalIDs(items)
	var branch any
	if res.ScopeType != tenancy.Organization {
		branch = t.BranchID
	}
	find := func(ctx context.Context, tx *sql.Tx) error {
		found, err := h.findItems(ctx, tx, h.scopeOf(t, branch), items)
		if err != nil {
			return err
		}
		for _, it := range items {
			if it.err != nil {
				continue
			}
			if vals := found.of(it); vals != nil {
				h.upsertUpdate(it, vals)
				continue
			}
			it.id, it.branch, it.outcome = newID(), branch, outcomeCreated
			it.err = res.creatable(it.changes)
		}
		return nil
	}
	return h.writeBatch(w, r, t, items, http.StatusOK, batchUpsert, find)
}

// upsertable refuses the fields an upsert's item may not send: those that
// may be neither created nor updated.
func (r *Resource) upsertable(name string) error {
	f := r.Field(name)
	if f != nil && (f.Create || f.Update) {
		return nil
	}
	_, err := r.writableField(name, true)
	return err
}

// creatable refuses the changes of an upsert's item that creates a
// record: a field that only an update may set, a required field missing.
func (r *Resource) creatable(changes Record) *apierrors.Error {
	for _, f := range r.fields {
		if _, ok := changes[f.Name]; ok && !f.Create {
			return apierrors.InvalidCreate("%s cannot be set on create; fields that may be sent: %s", f.Name, quoteList(r.writable(true)))
		}
	}
	if missing := r.missing(changes); missing != "" {
		return apierrors.InvalidCreate("%s", missing)
	}
	return nil
}

// upsertUpdate makes it, an upsert's item whose record is vals, an update
// of that record under the PATCH rules: a field that may not be updated
// may be sent with its stored value only; the fields sent with their
// stored values are no change; with no change left the item is
// unchanged.
func (h *handlers) upsertUpdate(it *item, vals []any) {
	it.id, _ = normalizeString(vals[0])
	it.current, it.branch = vals, h.branchOf(vals)
	stored := h.record(vals)
	changes := Record{}
	for _, f := range h.resource.fields {
		v, ok := it.changes[f.Name]
		if !ok || sameValue(v, stored[f.Name]) {
			continue
		}
		if !f.Update {
			it.err = apierrors.InvalidUpdate("%s cannot be changed (it is %s, the item sends %s); fields that may be changed: %s",
				f.Name, appendJSON(nil, stored[f.Name]), appendJSON(nil, v), quoteList(h.resource.writable(false)))
			return
		}
		changes[f.Name] = v
	}
	it.changes, it.outcome = changes, outcomeUpdated
	if len(changes) == 0 {
		it.outcome = outcomeUnchanged
	}
}

// found are the records a batch's items name, by id and by external_id.
type found struct{ byID, byExternalID map[string][]any }

// of returns the record that it names, or nil.
func (f found) of(it *item) []any {
	if it.byExternalID {
		return f.byExternalID[it.key]
	}
	return f.byID[it.key]
}

// findItems selects and locks the records that the standing items name by
// their key, inside scope, in the order of their ids (so that two batches
// never lock the same records in opposite orders). Of two records with
// the external_id an item names, the one of a branch is found before an
// organization-wide one.
func (h *handlers) findItems(ctx context.Context, tx *sql.Tx, scope sq.Sqlizer, items []*item) (found, error) {
	var ids, externals []string
	for _, it := range items {
		switch {
		case it.err != nil:
		case it.byExternalID:
			externals = append(externals, it.key)
		default:
			ids = append(ids, it.key)
		}
	}
	f := found{byID: map[string][]any{}, byExternalID: map[string][]any{}}
	if len(ids)+len(externals) == 0 {
		return f, nil
	}
	var which sq.Or
	if len(ids) > 0 {
		which = append(which, sq.Eq{"id": ids})
	}
	if len(externals) > 0 {
		which = append(which, sq.Eq{ExternalIDColumn: externals})
	}
	b := h.selectFrom().Where(scope).Where(which).OrderBy("id")
	if h.dialect() == query.Postgres {
		b = b.Suffix("FOR UPDATE")
	}
	rows, err := h.queryRows(ctx, tx, b)
	if err != nil {
		return f, err
	}
	defer rows.Close()
	ext := -1
	if h.resource.ExternalID {
		ext = h.colIndex[ExternalIDColumn]
	}
	for rows.Next() {
		vals, ptrs := h.scratch()
		if err := rows.Scan(ptrs...); err != nil {
			return f, err
		}
		id, _ := normalizeString(vals[0])
		f.byID[id] = vals
		if ext >= 0 {
			if v, ok := normalizeString(vals[ext]); ok {
				if prev := f.byExternalID[v]; prev == nil || h.branchOf(prev) == nil {
					f.byExternalID[v] = vals
				}
			}
		}
	}
	return f, rows.Err()
}

// normalizeString returns a string value as scanned.
func normalizeString(v any) (string, bool) {
	switch s := v.(type) {
	case string:
		return s, true
	case []byte:
		return string(s), true
	}
	return "", false
}

// updateBatch is PATCH {prefix}/{scopeId}/{resource}: an array of items,
// each naming its record by id or external_id, with the fields to change.
func (h *handlers) updateBatch(w http.ResponseWriter, r *http.Request) error {
	t := tenant(r)
	res := h.resource
	coversAll, err := h.mayWrite(r.Context(), t)
	if err != nil {
		return err
	}
	if res.RequireIfMatch {
		return apierrors.PreconditionRequired("%s require If-Match, which a batch update cannot carry for each record: update them one at a time, each with the ETag of the record as you last read it", res.Name)
	}
	body, err := httpbody.JSON(w, r, MaxBatchBytes)
	if err != nil {
		return err
	}
	if !isArray(body) {
		return apierrors.InvalidBatch(nil, "PATCH on the collection takes a JSON array of 1 to %d objects, each naming its record by id or external_id; update one record with PATCH on its own path", MaxBatchItems)
	}
	accept := func(name string) error {
		if name == "id" {
			return nil
		}
		_, err := res.writableField(name, false)
		return err
	}
	items, err := readBatch(body, func(i int, raw json.RawMessage) *item {
		members, err := res.itemObject(raw, accept, apierrors.InvalidUpdate)
		if err != nil {
			return newItem(i, nil, err)
		}
		var id json.RawMessage
		for j, m := range members {
			if m.name == "id" {
				id = m.value
				members = append(members[:j:j], members[j+1:]...)
				break
			}
		}
		changes, err := res.changes(members, false)
		if err != nil {
			return newItem(i, nil, err)
		}
		it := newItem(i, changes, nil)
		switch ext, ok := changes[ExternalIDColumn].(string); {
		case id != nil:
			var s string
			if json.Unmarshal(id, &s) != nil {
				it.err = apierrors.InvalidUpdate("id must be a string, the id of the record to update")
			} else if it.key, ok = query.CanonicalUUID(s); !ok {
				it.err = h.notFound()
			}
		case ok:
			it.key, it.byExternalID = ext, true
			delete(changes, ExternalIDColumn) // the key, not a change
		default:
			it.err = apierrors.InvalidUpdate("each item names the record it updates: give its id, or its external_id")
		}
		return it
	})
	if err != nil {
		return err
	}
	if err := h.charge(w, r, len(items)); err != nil {
		return err
	}
	repeatedExternalIDs(items)
	cond, args := tenantWhere(res, t)
	find := func(ctx context.Context, tx *sql.Tx) error {
		found, err := h.findItems(ctx, tx, sq.Expr(cond, args...), items)
		if err != nil {
			return err
		}
		first := map[string]int{}
		for _, it := range items {
			if it.err != nil {
				continue
			}
			vals := found.of(it)
			if vals == nil {
				it.err = h.notFound()
				if it.byExternalID {
					it.err = apierrors.NotFound("no %s with external_id %q", Singular(res.Name), it.key)
				}
				continue
			}
			it.id, _ = normalizeString(vals[0])
			it.current, it.branch, it.outcome = vals, h.branchOf(vals), outcomeUpdated
			if j, seen := first[it.id]; seen {
				it.err = apierrors.InvalidUpdate("names the same record as item %d: a batch may update each record once", j)
				continue
			}
			first[it.id] = it.index
			if err := h.mayChange(coversAll, vals); err != nil {
				it.refuse(err, apierrors.InvalidUpdate)
				continue
			}
			if len(it.changes) == 0 {
				it.outcome = outcomeUnchanged // nothing to write, as PATCH with {}
			}
		}
		return nil
	}
	return h.writeBatch(w, r, t, items, http.StatusOK, batchUpdate, find)
}
