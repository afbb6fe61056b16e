package resource

import (
	"context"
	"database/sql"
	"errors"
	"net/http"
	"strconv"
	"strings"
	"time"

	sq "github.com/Masterminds/squirrel"
	"github.com/google/uuid"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/internal/conditional"
	"github.com/waybillhq/waybill/internal/idempotency"
	"github.com/waybillhq/waybill/internal/sqlerr"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/query/sqlbuild"
	"github.com/waybillhq/waybill/tenancy"
)

// handlers serve one resource.
type handlers struct {
	registry *Registry
	resource *Resource
	cols     []column
	// columnList is the names of cols joined with ", ", once: the columns
	// of selectFrom and of the writes' RETURNING.
	columnList string
	keys       []string // `"name":` of each column, for the JSON writer
	colIndex   map[string]int
	// historyKey authenticates the cursors of record histories: the
	// registry's cursor key.
	historyKey []byte
}

func newHandlers(g *Registry, r *Resource) *handlers {
	h := &handlers{registry: g, resource: r, cols: selected(r), colIndex: map[string]int{}}
	names := make([]string, len(h.cols))
	for i, c := range h.cols {
		h.colIndex[c.name] = i
		names[i] = c.name
		h.keys = append(h.keys, string(appendString(nil, c.name))+":")
	}
	h.columnList = strings.Join(names, ", ")
	return h
}

func (h *handlers) db() *sql.DB            { return h.registry.DB }
func (h *handlers) dialect() query.Dialect { return h.registry.Dialect }

// selectFrom returns the SELECT of the selected columns from the
// resource's table. Its column list is one string, joined once: squirrel
// writes it as it would the columns one by one, without building a part
// for each at every request.
func (h *handlers) selectFrom() sq.SelectBuilder {
	return sq.Select(h.columnList).From(h.resource.table())
}

// tenant returns the tenant that the tenancy middleware resolved.
func tenant(r *http.Request) tenancy.Tenant {
	t, ok := tenancy.FromContext(r.Context())
	if !ok {
		panic("resource: no tenant in the request context; mount the handlers with Registry.Mount")
	}
	return t
}

// get is GET {prefix}/{scopeId}/{resource}/{id}.
func (h *handlers) get(w http.ResponseWriter, r *http.Request) error {
	t := tenant(r)
	id, ok := query.CanonicalUUID(r.PathValue("id"))
	if !ok {
		return h.notFound()
	}
	vals, err := h.find(r.Context(), h.db(), t, id, false)
	if err != nil {
		return err
	}
	return h.writeRecord(w, r, http.StatusOK, vals)
}

// answerFailed answers a POST, PATCH or DELETE that failed: with the
// answer another request with its Idempotency-Key stored meanwhile (or
// returns 422 idempotency_key_reused when that answer is of another
// request); 412 with the stored record for an If-Match that names another
// version. Else it writes nothing and returns err as refuse judges it (see
// writeError).
func (h *handlers) answerFailed(w http.ResponseWriter, r *http.Request, err error, refuse func(string, ...any) *apierrors.Error) error {
	var stale *conditional.Stale
	var rep *idempotency.Replayed
	switch {
	case errors.As(err, &rep):
		return idempotency.Replay(w, idempotentOf(r).Fingerprint, rep.Answer)
	case errors.As(err, &stale):
		writeStale(w, stale)
		return nil
	}
	return writeError(err, refuse)
}

// recordAnswer returns the answer of a write of a record: status, the
// record in its envelope, its ETag, and location (when not "") as
// Location.
func (h *handlers) recordAnswer(status int, vals []any, location string) (*answer, error) {
	buf := append(make([]byte, 0, 512), `{"data":`...)
	buf, err := h.appendRecord(buf, vals)
	if err != nil {
		return nil, apierrors.Internal(err)
	}
	a := &answer{Status: status, Headers: map[string]string{"ETag": conditional.ETag(buf[len(`{"data":`):])}}
	if location != "" {
		a.Headers["Location"] = location
	}
	a.Body = append(buf, `,"version":"`+Version+`"}`...)
	return a, nil
}

// rememberFor stores a, the answer of the write of tx, when r has an
// Idempotency-Key (see remember).
func (h *handlers) rememberFor(r *http.Request, tx *sql.Tx, t tenancy.Tenant, a *answer) error {
	idem := idempotentOf(r)
	if idem == nil {
		return nil
	}
	return h.remember(r.Context(), tx, t, idem, a)
}

// send writes a.
func send(w http.ResponseWriter, a *answer) {
	for k, v := range a.Headers {
		w.Header().Set(k, v)
	}
	writeJSON(w, a.Status, a.Body)
}

// create is POST {prefix}/{scopeId}/{resource}.
func (h *handlers) create(w http.ResponseWriter, r *http.Request) error {
	t := tenant(r)
	if _, err := h.mayWrite(r.Context(), t); err != nil {
		return err
	}
	body, batch, err := readWrite(w, r)
	if err != nil {
		return err
	}
	switch {
	case preferred(r, mergeDuplicates):
		return h.upsert(w, r, t, body, batch)
	case batch:
		return h.createBatch(w, r, t, body)
	}
	changes, err := h.resource.decodeChanges(body, true)
	if err != nil {
		return err
	}
	id := newID()
	var branch any
	if h.resource.ScopeType != tenancy.Organization {
		branch = t.BranchID
	}
	var a *answer
	var change *Change
	err = h.inTx(r.Context(), func(tx *sql.Tx) error {
		wr := &Write{Resource: h.resource, Tenant: t, Changes: changes, Dialect: h.dialect(), Time: h.registry.now()}
		if hook := h.resource.Hooks.BeforeCreate; hook != nil {
			if err := hook(r.Context(), tx, wr); err != nil {
				return err
			}
		}
		if err := h.checkReferences(r.Context(), tx, t, branch, wr.Changes, apierrors.CreateFailed); err != nil {
			return err
		}
		vals, err := h.insert(r.Context(), tx, t, id, wr)
		if err != nil {
			return err
		}
		a, err = h.recordAnswer(http.StatusCreated, vals, strings.TrimSuffix(r.URL.Path, "/")+"/"+id)
		if err != nil {
			return err
		}
		if err := h.rememberFor(r, tx, t, a); err != nil {
			return err
		}
		change, err = h.appendChange(r.Context(), tx, t, Created, id, nil, vals, record(a), wr.Time)
		return err
	})
	if err != nil {
		err = h.externalIDConflict(r.Context(), t, branch, id, changes, err)
		return h.answerFailed(w, r, err, apierrors.CreateFailed)
	}
	h.committed(change)
	send(w, a)
	return nil
}

// update is PATCH {prefix}/{scopeId}/{resource}/{id}.
func (h *handlers) update(w http.ResponseWriter, r *http.Request) error {
	t := tenant(r)
	id, ok := query.CanonicalUUID(r.PathValue("id"))
	if !ok {
		return h.notFound()
	}
	coversAll, err := h.mayWrite(r.Context(), t)
	if err != nil {
		return err
	}
	if err := h.requireIfMatch(r); err != nil {
		return err
	}
	changes, err := h.resource.readChanges(w, r, false)
	if err != nil {
		return err
	}
	var a *answer
	var change *Change
	var branch any
	err = h.change(r, t, id, coversAll, func(tx *sql.Tx, current []any) error {
		vals := current
		branch = h.branchOf(current)
		at := h.registry.now()
		if len(changes) > 0 {
			var err error
			if vals, err = h.applyUpdate(r.Context(), tx, t, id, current, changes, at); err != nil {
				return err
			}
		}
		var err error
		if a, err = h.recordAnswer(http.StatusOK, vals, ""); err != nil {
			return err
		}
		if err := h.rememberFor(r, tx, t, a); err != nil {
			return err
		}
		if len(changes) == 0 {
			return nil // nothing was written
		}
		change, err = h.appendChange(r.Context(), tx, t, Updated, id, current, vals, record(a), at)
		return err
	})
	if err != nil {
		err = h.externalIDConflict(r.Context(), t, branch, id, changes, err)
		return h.answerFailed(w, r, err, apierrors.InvalidUpdate)
	}
	h.committed(change)
	send(w, a)
	return nil
}

// applyUpdate runs the update hooks, checks the references and writes
// changes to the record with id, current as stored, at the time at; it
// returns the record as written.
func (h *handlers) applyUpdate(ctx context.Context, tx *sql.Tx, t tenancy.Tenant, id string, current []any, changes Record, at time.Time) ([]any, error) {
	wr := &Write{Resource: h.resource, Tenant: t, Current: h.record(current), Changes: changes, Dialect: h.dialect(), Time: at}
	if hook := h.resource.Hooks.BeforeUpdate; hook != nil {
		if err := hook(ctx, tx, wr); err != nil {
			return nil, err
		}
	}
	if err := h.checkReferences(ctx, tx, t, h.branchOf(current), wr.Changes, apierrors.InvalidUpdate); err != nil {
		return nil, err
	}
	return h.updateRow(ctx, tx, t, id, wr)
}

// delete is DELETE {prefix}/{scopeId}/{resource}/{id}.
func (h *handlers) delete(w http.ResponseWriter, r *http.Request) error {
	t := tenant(r)
	id, ok := query.CanonicalUUID(r.PathValue("id"))
	if !ok {
		return h.notFound()
	}
	coversAll, err := h.mayWrite(r.Context(), t)
	if err != nil {
		return err
	}
	if err := h.requireIfMatch(r); err != nil {
		return err
	}
	var vals []any
	var change *Change
	err = h.change(r, t, id, coversAll, func(tx *sql.Tx, current []any) error {
		at := h.registry.now()
		if hook := h.resource.Hooks.BeforeDelete; hook != nil {
			wr := &Write{Resource: h.resource, Tenant: t, Current: h.record(current), Changes: Record{}, Dialect: h.dialect(), Time: at}
			if err := hook(r.Context(), tx, wr); err != nil {
				return err
			}
		}
		var err error
		if vals, err = h.deleteRow(r.Context(), tx, t, id); err != nil || !h.recordsChanges() {
			return err
		}
		record, err := h.appendRecord(nil, vals)
		if err != nil {
			return apierrors.Internal(err)
		}
		change, err = h.appendChange(r.Context(), tx, t, Deleted, id, vals, nil, record, at)
		return err
	})
	if err != nil {
		if sqlerr.KindOf(err) == sqlerr.ForeignKey {
			err = apierrors.Conflict("the record is still referenced by other records; delete or change those first")
		}
		return h.answerFailed(w, r, err, apierrors.InvalidRequest)
	}
	h.committed(change)
	return h.writeRecord(w, r, http.StatusOK, vals)
}

// change runs f in a transaction on the record with id of the tenant,
// selected and locked: the common part of PATCH and DELETE of r. coversAll
// is what mayWrite found; an organization-wide record that the token may
// not change is 403, no such record 404, and an If-Match that names another
// version of the record a *conditional.Stale.
func (h *handlers) change(r *http.Request, t tenancy.Tenant, id string, coversAll bool, f func(tx *sql.Tx, current []any) error) error {
	ctx := r.Context()
	return h.inTx(ctx, func(tx *sql.Tx) error {
		current, err := h.find(ctx, tx, t, id, true)
		if err != nil {
			return err
		}
		if err := h.mayChange(coversAll, current); err != nil {
			return err
		}
		if err := h.checkIfMatch(r, current); err != nil {
			return err
		}
		return f(tx, current)
	})
}

// mayWrite reports whether the token covers every branch of the
// organization (see coversAll), and refuses with 403 insufficient_scope
// any write to an organization-scoped resource by a token that does not:
// what such a resource holds (vehicles, say) every branch uses, so a
// branch-restricted token may read it but not change it. It runs before
// the body is read and the record looked up. Creates in branch and
// branch-or-null resources belong to the path's branch and need nothing
// more; a change of an organization-wide record of a branch-or-null
// resource is checked once the record is found (see mayChange).
func (h *handlers) mayWrite(ctx context.Context, t tenancy.Tenant) (coversAll bool, err error) {
	coversAll, err = h.coversAll(ctx, t)
	if err != nil {
		return false, err
	}
	if h.resource.ScopeType == tenancy.Organization && !coversAll {
		return false, apierrors.InsufficientScope("", "organization-wide data may be changed only by a token that covers every branch of the organization")
	}
	return coversAll, nil
}

// coversAll reports, for an organization-scoped or branch-or-null
// resource, whether the token covers every branch of the organization (see
// tenancy.Tenant.CoversAllBranches); true for a branch resource. It asks
// before the write's transaction begins, so that a database of one
// connection (SQLite) is never asked twice at once.
func (h *handlers) coversAll(ctx context.Context, t tenancy.Tenant) (bool, error) {
	if h.resource.ScopeType == tenancy.Branch {
		return true, nil
	}
	all, err := t.CoversAllBranches(ctx)
	if err != nil {
		return false, apierrors.Internal(err)
	}
	return all, nil
}

// mayChange refuses a change of an organization-wide record (branch_id
// NULL of a branch-or-null resource) by a token that does not cover every
// branch: a branch-restricted token never changes what other branches see.
func (h *handlers) mayChange(coversAll bool, current []any) error {
	if h.resource.ScopeType != tenancy.BranchOrNull || h.branchOf(current) != nil || coversAll {
		return nil
	}
	return apierrors.InsufficientScope("", "an organization-wide record may be changed only by a token that covers every branch")
}

// branchOf returns the branch_id of selected values, or nil.
func (h *handlers) branchOf(vals []any) any {
	if h.resource.ScopeType == tenancy.Organization {
		return nil
	}
	return vals[len(vals)-1]
}

// querier is a *sql.DB, a *sql.Conn or a *sql.Tx.
type querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// rowsQuerier is a *sql.DB, a *sql.Conn or a *sql.Tx.
type rowsQuerier interface {
	querier
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
}

// find selects the record with id inside the tenant; forUpdate locks it on
// PostgreSQL for the rest of the transaction. No record is 404.
func (h *handlers) find(ctx context.Context, q querier, t tenancy.Tenant, id string, forUpdate bool) ([]any, error) {
	cond, args := tenantWhere(h.resource, t)
	b := h.selectFrom().Where("id = ?", id).Where(cond, args...)
	if forUpdate && h.dialect() == query.Postgres {
		b = b.Suffix("FOR UPDATE")
	}
	return h.scanOne(ctx, q, b)
}

func (h *handlers) insert(ctx context.Context, tx *sql.Tx, t tenancy.Tenant, id string, w *Write) ([]any, error) {
	b := sq.Insert(h.resource.table()).Columns(h.insertColumns(w)...).Values(h.insertValues(t, id, w)...).
		Suffix("RETURNING " + h.columnList)
	return h.scanOne(ctx, tx, b)
}

// insertColumns returns the columns of the insert of w's record: those
// the server sets, then the fields w sets, in the resource's order.
func (h *handlers) insertColumns(w *Write) []string {
	cols := []string{"id", OrganizationColumn, "created_at", "updated_at"}
	if h.resource.ScopeType != tenancy.Organization {
		cols = append(cols, BranchColumn)
	}
	for _, f := range h.resource.fields {
		if _, ok := w.Changes[f.Name]; ok {
			cols = append(cols, f.Name)
		}
	}
	return cols
}

// insertValues returns the values of insertColumns for the record with
// id.
func (h *handlers) insertValues(t tenancy.Tenant, id string, w *Write) []any {
	d := h.dialect()
	vals := []any{id, t.OrganizationID, d.Timestamp(w.Time), d.Timestamp(w.Time)}
	if h.resource.ScopeType != tenancy.Organization {
		vals = append(vals, t.BranchID)
	}
	for _, f := range h.resource.fields {
		if v, ok := w.Changes[f.Name]; ok {
			vals = append(vals, bind(d, f.Type, v))
		}
	}
	return vals
}

func (h *handlers) updateRow(ctx context.Context, tx *sql.Tx, t tenancy.Tenant, id string, w *Write) ([]any, error) {
	d, changes := h.dialect(), w.Changes
	cond, args := tenantWhere(h.resource, t)
	b := sq.Update(h.resource.table()).Set("updated_at", d.Timestamp(w.Time))
	for _, f := range h.resource.fields {
		if v, ok := changes[f.Name]; ok {
			b = b.Set(f.Name, bind(d, f.Type, v))
		}
	}
	b = b.Where("id = ?", id).Where(cond, args...).Suffix("RETURNING " + h.columnList)
	return h.scanOne(ctx, tx, b)
}

func (h *handlers) deleteRow(ctx context.Context, tx *sql.Tx, t tenancy.Tenant, id string) ([]any, error) {
	cond, args := tenantWhere(h.resource, t)
	b := sq.Delete(h.resource.table()).Where("id = ?", id).Where(cond, args...).Suffix("RETURNING " + h.columnList)
	return h.scanOne(ctx, tx, b)
}

// scanOne runs a statement that returns at most one record of the
// resource; none is 404.
func (h *handlers) scanOne(ctx context.Context, q querier, b sq.Sqlizer) ([]any, error) {
	text, args, err := sqlbuild.SQL(h.dialect(), b)
	if err != nil {
		return nil, apierrors.Internal(err)
	}
	vals, ptrs := h.scratch()
	if err := q.QueryRowContext(ctx, text, args...).Scan(ptrs...); err != nil {
		if errors.Is(err, sql.ErrNoRows) {
			return nil, h.notFound()
		}
		return nil, err
	}
	return vals, nil
}

// checkReferences checks that every reference among changes names a
// record the record being written can see (see referenceRefusals),
// refusing the write with refuse when one does not.
func (h *handlers) checkReferences(ctx context.Context, tx *sql.Tx, t tenancy.Tenant, branch any, changes Record, refuse func(string, ...any) *apierrors.Error) error {
	refused, err := h.referenceRefusals(ctx, tx, t, branch, []Record{changes})
	if err != nil {
		return err
	}
	if refused[0] != "" {
		return refuse("%s", refused[0])
	}
	return nil
}

// referenceRefusals checks the references among the changes of records of
// one branch (nil for organization-wide records), with one query per
// reference field: each must name a record the record written can see, of
// the tenant's organization and, for a branch-scoped target, of the
// record's branch, or organization-wide for a branch-or-null target. It
// returns, for each record, why its first reference that does not is
// refused, or "". The database's foreign keys back this up.
func (h *handlers) referenceRefusals(ctx context.Context, tx *sql.Tx, t tenancy.Tenant, branch any, recs []Record) ([]string, error) {
	refused := make([]string, len(recs))
	for _, f := range h.resource.fields {
		if f.References == "" {
			continue
		}
		var values []any
		seen := map[any]bool{}
		for i, rec := range recs {
			if v, ok := rec[f.Name]; ok && v != nil && refused[i] == "" && !seen[v] {
				seen[v] = true
				values = append(values, v)
			}
		}
		if len(values) == 0 {
			continue
		}
		target := h.registry.Resource(f.References)
		b := sq.Select("id").From(target.table()).Where(sq.Eq{"id": values}).Where(OrganizationColumn+" = ?", t.OrganizationID)
		where := "this organization"
		switch {
		case target.ScopeType == tenancy.Branch && branch == nil:
			for i, rec := range recs {
				if v, ok := rec[f.Name]; ok && v != nil && refused[i] == "" {
					refused[i] = f.Name + ": an organization-wide record cannot refer to " + target.Name + ", which belong to a branch"
				}
			}
			continue
		case target.ScopeType == tenancy.Branch:
			b, where = b.Where(BranchColumn+" = ?", branch), "this branch"
		case target.ScopeType == tenancy.BranchOrNull && branch == nil:
			b, where = b.Where(BranchColumn+" IS NULL"), "this organization's organization-wide records"
		case target.ScopeType == tenancy.BranchOrNull:
			b, where = b.Where("("+BranchColumn+" = ? OR "+BranchColumn+" IS NULL)", branch), "this branch"
		}
		exist, err := h.ids(ctx, tx, b)
		if err != nil {
			return nil, err
		}
		for i, rec := range recs {
			if v, ok := rec[f.Name].(string); ok && refused[i] == "" && !exist[strings.ToLower(v)] {
				refused[i] = f.Name + ": no " + Singular(target.Name) + " with id " + v + " in " + where
			}
		}
	}
	return refused, nil
}

// queryRows builds b in the registry's dialect and runs it in tx.
func (h *handlers) queryRows(ctx context.Context, tx *sql.Tx, b sq.Sqlizer) (*sql.Rows, error) {
	text, args, err := sqlbuild.SQL(h.dialect(), b)
	if err != nil {
		return nil, apierrors.Internal(err)
	}
	return tx.QueryContext(ctx, text, args...)
}

// ids runs b, which selects ids, and returns them, in lower case.
func (h *handlers) ids(ctx context.Context, tx *sql.Tx, b sq.Sqlizer) (map[string]bool, error) {
	rows, err := h.queryRows(ctx, tx, b)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	out := map[string]bool{}
	for rows.Next() {
		var id any
		if err := rows.Scan(&id); err != nil {
			return nil, err
		}
		s, _ := normalizeString(id)
		out[strings.ToLower(s)] = true
	}
	return out, rows.Err()
}

// Singular names one record of the resource called name, as messages,
// the OpenAPI document and event types do: "branches" is "branch",
// "quotations" "quotation", "categories" "category", "statuses"
// "status", "address" stays, and a name that does not end in s
// (master_data) is its own singular.
func Singular(name string) string {
	switch {
	case strings.HasSuffix(name, "ies") && len(name) > 3:
		return strings.TrimSuffix(name, "ies") + "y"
	case strings.HasSuffix(name, "sses"), strings.HasSuffix(name, "shes"), strings.HasSuffix(name, "ches"),
		strings.HasSuffix(name, "xes"), strings.HasSuffix(name, "zes"), strings.HasSuffix(name, "uses"):
		return strings.TrimSuffix(name, "es")
	case strings.HasSuffix(name, "ss"):
		return name
	case strings.HasSuffix(name, "s"):
		return strings.TrimSuffix(name, "s")
	}
	return name
}

// inTx runs f in a transaction, committed when f returns nil.
func (h *handlers) inTx(ctx context.Context, f func(tx *sql.Tx) error) error {
	tx, err := h.db().BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if err := f(tx); err != nil {
		_ = tx.Rollback()
		return err
	}
	return tx.Commit()
}

// scratch returns a slice for one row's values and pointers to its
// elements, for Scan.
func (h *handlers) scratch() ([]any, []any) {
	vals := make([]any, len(h.cols))
	ptrs := make([]any, len(h.cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	return vals, ptrs
}

// record returns selected values as a Record.
func (h *handlers) record(vals []any) Record {
	rec := make(Record, len(vals))
	for i, c := range h.cols {
		v, err := normalize(c.typ, vals[i])
		if err == nil {
			rec[c.name] = v
		}
	}
	return rec
}

// appendRecord appends selected values as a JSON object.
func (h *handlers) appendRecord(b []byte, vals []any) ([]byte, error) {
	return h.appendFields(b, vals, nil)
}

// appendFields appends the fields of selected values that only names (nil:
// every field) as a JSON object.
func (h *handlers) appendFields(b []byte, vals []any, only []bool) ([]byte, error) {
	return h.appendObject(b, only, func(b []byte, i int, t query.Type) ([]byte, error) {
		return appendValue(b, t, vals[i])
	})
}

// appendObject appends a JSON object of the fields that only names (nil:
// every field), each value, of column i and type t, appended by value.
func (h *handlers) appendObject(b []byte, only []bool, value func(b []byte, i int, t query.Type) ([]byte, error)) ([]byte, error) {
	b = append(b, '{')
	first := true
	for i, c := range h.cols {
		if only != nil && !only[i] {
			continue
		}
		if !first {
			b = append(b, ',')
		}
		first = false
		b = append(b, h.keys[i]...)
		var err error
		if b, err = value(b, i, c.typ); err != nil {
			return nil, err
		}
	}
	return append(b, '}'), nil
}

// writeRecord answers with one record in its envelope and its ETag; a GET
// whose If-None-Match names that tag gets 304 Not Modified instead. The tag
// is the version of the whole record, also when fields (on a GET) shows
// only some of it, so that a client may read a few fields and write with
// If-Match. It returns the error of a record it cannot write, or of a
// fields parameter it refuses, having written nothing.
func (h *handlers) writeRecord(w http.ResponseWriter, r *http.Request, status int, vals []any) error {
	a, err := h.recordAnswer(status, vals, "")
	if err != nil {
		return err
	}
	if r.Method == http.MethodGet || r.Method == http.MethodHead {
		etag := a.Headers["ETag"]
		if l, ok := conditional.IfNoneMatch(r); ok && l.Matches(etag, true) {
			conditional.NotModified(w, etag)
			return nil
		}
		only, err := h.fields(r)
		if err != nil {
			return err
		}
		if only != nil {
			body := append(make([]byte, 0, len(a.Body)), `{"data":`...)
			if body, err = h.appendFields(body, vals, only); err != nil {
				return apierrors.Internal(err)
			}
			a.Body = append(body, `,"version":"`+Version+`"}`...)
		}
	}
	send(w, a)
	return nil
}

func writeJSON(w http.ResponseWriter, status int, body []byte) {
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
}

func (h *handlers) notFound() *apierrors.Error {
	return apierrors.NotFound("no %s with this id", Singular(h.resource.Name))
}

// readError maps a failure of a read: a value the column cannot take is
// the client's (invalid_request), anything else a 500.
func readError(err error) error {
	if sqlerr.KindOf(err) == sqlerr.Data {
		return apierrors.InvalidRequest("a filter value is out of range for its field")
	}
	return apierrors.Internal(err)
}

// writeError maps the failure of a write: API errors stay as they are; a
// constraint the database refused the write for, or a value its column
// cannot hold, is refuse (create_failed on POST, invalid_update on PATCH);
// anything else is a 500.
func writeError(err error, refuse func(string, ...any) *apierrors.Error) error {
	if _, ok := apierrors.As(err); ok {
		return err
	}
	switch sqlerr.KindOf(err) {
	case sqlerr.Unique:
		return refuse("a record with the same unique values exists")
	case sqlerr.ForeignKey:
		return refuse("a reference names no record of this tenant")
	case sqlerr.Check, sqlerr.NotNull, sqlerr.Other:
		return refuse("the database refused the values: a constraint is not met")
	case sqlerr.Data:
		return refuse("a value is out of range for its field")
	}
	return apierrors.Internal(err)
}

// newID returns the id of a new record: a UUID version 7, whose
// time-ordered prefix keeps the inserts of the primary key's index local.
func newID() string {
	return uuid.Must(uuid.NewV7()).String()
}
