package resource

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"database/sql"
	"encoding/base64"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"

	sq "github.com/Masterminds/squirrel"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/query/sqlbuild"
	"github.com/waybillhq/waybill/tenancy"
)

// Record history.
//
// A registry with a History keeps, for every record of a resource that is
// not ReadOnly (the others are never written through it), one entry of each
// create, update and delete, written in the write's own transaction (an
// entry exists if and only if its write committed), and serves them,
// oldest first, at
//
//	GET {prefix}/{scopeId}/{resource}/{id}/history?after=&limit=
//
// as {"data": [entry, ...], "next_cursor": cursor or null, "version": "v1"},
// also once the record is deleted. An entry is
//
//	{"id", "type", "time", "clientid", "userid", "changed", "before", "after"}
//
// where id is the id of the write's event (Change.EventID, the id of the
// CloudEvent the change feed and the webhooks give of it), type the event's
// type ("quotation.created", "quotation.updated", "quotation.deleted"), time
// the write's, to the microsecond, clientid and userid the token's client
// and the user it acts for (null for a client-credentials token, and when
// the token has none), changed the names of the fields the write changed, in
// the order of the resource's fields, and before and after the values of
// exactly those fields, as the API shows them, before and after the write:
//
//   - create: changed names the fields the record was given a value other
//     than null (by the client or a hook); before is {}, after their values;
//   - update: changed names the fields whose value differs from before
//     (none for a PATCH that sent the values the record had: the write
//     still counts, its updated_at moved, and it has an event); before and
//     after their old and new values;
//   - delete: changed names every field of the record (the server's id,
//     created_at and updated_at aside, as always), before is their values,
//     the record as it was, and after is {}.
//
// A move of the resource's status field (StatusFlow) is part of its
// update's entry: the change feed gives it a second event,
// "<record>.status_changed", which repeats a change the update's event
// carries, so the history does not count it twice. The server's own fields
// (id, created_at, updated_at) are never in changed: time says when.
//
// The route needs the resource's read scope and follows the tenant rules of
// GET by id: the record of another organization or branch, existing or
// deleted, is 404 not_found, as is a record that never was. A record that
// exists and has no entries (written before the history was kept, or whose
// entries are past the retention) has an empty history. limit is 1 to
// MaxHistoryLimit, DefaultHistoryLimit by default; after is the
// next_cursor of the page before, bound to the record and authenticated
// with the registry's cursor key (see Registry.CursorKey): a cursor that
// was altered or is of another record is 400 invalid_request, as is any
// other parameter. The last page has next_cursor null (the route reads one
// entry ahead, so a last page of exactly limit entries has it null too);
// every other page has a cursor, and a Link rel="next" with it.

// DefaultHistoryLimit is the number of entries of a page of a record's
// history when the request gives no limit.
const DefaultHistoryLimit = 50

// MaxHistoryLimit is the largest page of a record's history.
const MaxHistoryLimit = 1000

// HistoryTable is the table of SQLHistory, which Registry.Migrate creates.
const HistoryTable = "waybill_record_history"

// History keeps the history of the records of a registry (see
// Registry.History). SQLHistory keeps it in the registry's database.
type History interface {
	// AppendHistory stores entries, the changes of one write (one entry,
	// or those of a batch in the order of its items), in tx, the write's
	// transaction, after the Outbox has recorded them. An error it
	// returns rolls the write back.
	AppendHistory(ctx context.Context, tx *sql.Tx, entries []*HistoryEntry) error
	// ReadHistory returns the first limit entries of the record of key
	// whose Seq is greater than after, in the order they were stored.
	ReadHistory(ctx context.Context, db *sql.DB, key HistoryKey, after int64, limit int) ([]*HistoryEntry, error)
}

// HistoryKey names one record: its organization, resource and id.
type HistoryKey struct {
	OrganizationID, Resource, RecordID string
}

// HistoryEntry is one entry of a record's history: one write. The route
// shows it as {"id", "type", "time", "clientid", "userid", "changed",
// "before", "after"}, an empty ClientID or UserID as null.
type HistoryEntry struct {
	// Seq is the entry's position in the history, which the History
	// gives as it stores the entry: greater than those of the record's
	// entries before. Zero until stored.
	Seq int64
	// HistoryKey names the record.
	HistoryKey
	// BranchID is the record's branch; "" for an organization-wide record.
	BranchID string
	// ID is the id of the write's event (Change.EventID).
	ID string
	// Type is the event type of the write: "<record>.created", ".updated"
	// or ".deleted".
	Type string
	// Time is when the write happened, in UTC, to the microsecond.
	Time time.Time
	// ClientID is the token's client; "" for none.
	ClientID string
	// UserID is the user the token acts for; "" for none (a
	// client-credentials token).
	UserID string
	// Changed names the fields the write changed.
	Changed []string
	// Before and After are JSON objects of the values of the fields of
	// Changed before and after the write.
	Before json.RawMessage
	After  json.RawMessage
}

// HistoryEntry returns the entry of the record's history that c makes (see
// Registry.History), or nil when c is not of a registry's write.
func (c *Change) HistoryEntry() (*HistoryEntry, error) {
	h := c.h
	if h == nil {
		return nil, nil
	}
	e := &HistoryEntry{
		HistoryKey: HistoryKey{OrganizationID: c.Tenant.OrganizationID, Resource: c.Resource.Name, RecordID: c.ID},
		BranchID:   c.BranchID, ID: c.EventID, Type: Singular(c.Resource.Name) + "." + c.Operation.String(),
		Time: c.Time.UTC().Truncate(time.Microsecond), Changed: c.Changed,
	}
	if claims := c.Tenant.Claims; claims != nil {
		e.ClientID = claims.ClientID
		if !claims.ClientCredentials() {
			e.UserID = claims.Subject
		}
	}
	only := make([]bool, len(h.cols))
	if c.Operation == Deleted {
		e.Changed = nil
		for i, col := range h.cols {
			if h.resource.Field(col.name) != nil && !isCommon(col.name) {
				only[i] = true
				e.Changed = append(e.Changed, col.name)
			}
		}
	} else {
		for _, name := range c.Changed {
			only[h.colIndex[name]] = true
		}
	}
	if e.Changed == nil {
		e.Changed = []string{}
	}
	var err error
	e.Before, e.After = json.RawMessage("{}"), json.RawMessage("{}")
	if c.before != nil && len(e.Changed) > 0 {
		if e.Before, err = h.appendFields(nil, c.before, only); err != nil {
			return nil, err
		}
	}
	if c.after != nil && len(e.Changed) > 0 {
		if e.After, err = h.appendFields(nil, c.after, only); err != nil {
			return nil, err
		}
	}
	return e, nil
}

// appendHistory stores the entries of changes in the registry's History,
// if any.
func (h *handlers) appendHistory(ctx context.Context, tx *sql.Tx, changes []*Change) error {
	hist := h.registry.History
	if hist == nil {
		return nil
	}
	entries := make([]*HistoryEntry, len(changes))
	for i, c := range changes {
		e, err := c.HistoryEntry()
		if err != nil {
			return apierrors.Internal(err)
		}
		entries[i] = e
	}
	return hist.AppendHistory(ctx, tx, entries)
}

// historyWith returns the statement that stores the history entry of c for
// a HistoryOutbox to run with its own, when the registry's History is a
// *SQLHistory on PostgreSQL; nil otherwise (the entry is then stored on its
// own, or there is no History).
func (h *handlers) historyWith(c *Change) (func(first int) (string, []any), error) {
	hist, ok := h.registry.History.(*SQLHistory)
	if !ok || hist.Dialect != query.Postgres {
		return nil, nil
	}
	e, err := c.HistoryEntry()
	if err != nil {
		return nil, apierrors.Internal(err)
	}
	return func(first int) (string, []any) {
		return historyInsertFrom(query.Postgres, 1, first), hist.historyArgs(nil, e)
	}, nil
}

// history is GET {prefix}/{scopeId}/{resource}/{id}/history.
func (h *handlers) history(w http.ResponseWriter, r *http.Request) error {
	t := tenant(r)
	id, ok := query.CanonicalUUID(r.PathValue("id"))
	if !ok {
		return h.notFound()
	}
	after, limit, err := h.historyParams(r, id)
	if err != nil {
		return err
	}
	ctx := r.Context()
	key := HistoryKey{OrganizationID: t.OrganizationID, Resource: h.resource.Name, RecordID: id}
	entries, err := h.registry.History.ReadHistory(ctx, h.db(), key, after, limit+1)
	if err != nil {
		return apierrors.Internal(err)
	}
	switch {
	case len(entries) > 0:
		// Every entry of a record has its branch, which never changes.
		if !h.seesBranch(t, entries[0].BranchID) {
			return h.notFound()
		}
	case after == 0:
		// No history: a record that exists in the tenant has an empty
		// one, any other id is unknown.
		if _, err := h.find(ctx, h.db(), t, id, false); err != nil {
			return err
		}
	}
	next := ""
	if len(entries) > limit {
		entries = entries[:limit]
		next = h.historyCursor(id, entries[limit-1].Seq)
	}
	buf := append(make([]byte, 0, 256+512*len(entries)), `{"data":[`...)
	for i, e := range entries {
		if i > 0 {
			buf = append(buf, ',')
		}
		buf = appendHistoryEntry(buf, e)
	}
	buf = append(buf, `],"next_cursor":`...)
	if next != "" {
		buf = appendString(buf, next)
		values := url.Values{"after": {next}}
		if limit != DefaultHistoryLimit {
			values.Set("limit", strconv.Itoa(limit))
		}
		w.Header().Set("Link", "<"+r.URL.Path+"?"+values.Encode()+`>; rel="next"`)
	} else {
		buf = append(buf, "null"...)
	}
	buf = append(buf, `,"version":"`+Version+`"}`...)
	writeJSON(w, http.StatusOK, buf)
	return nil
}

// seesBranch reports whether the tenant sees the records of branch ("":
// organization-wide), as a GET by id does.
func (h *handlers) seesBranch(t tenancy.Tenant, branch string) bool {
	switch h.resource.ScopeType {
	case tenancy.Branch:
		return branch == t.BranchID
	case tenancy.BranchOrNull:
		return branch == "" || branch == t.BranchID
	}
	return true
}

// appendHistoryEntry appends e as the API shows it.
func appendHistoryEntry(b []byte, e *HistoryEntry) []byte {
	b = append(b, `{"id":`...)
	b = appendString(b, e.ID)
	b = append(b, `,"type":`...)
	b = appendString(b, e.Type)
	b = append(b, `,"time":"`...)
	b = append(appendTimestamp(b, e.Time), '"')
	b = append(b, `,"clientid":`...)
	b = appendNullable(b, e.ClientID)
	b = append(b, `,"userid":`...)
	b = appendNullable(b, e.UserID)
	b = append(b, `,"changed":[`...)
	for i, f := range e.Changed {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, f)
	}
	b = append(b, `],"before":`...)
	b = append(b, e.Before...)
	b = append(b, `,"after":`...)
	b = append(b, e.After...)
	return append(b, '}')
}

// appendNullable appends s as a JSON string, or null when it is "".
func appendNullable(b []byte, s string) []byte {
	if s == "" {
		return append(b, "null"...)
	}
	return appendString(b, s)
}

// historyParams reads after (0 when absent) and limit of a history request
// of the record id; any other parameter, or one given twice, is 400.
func (h *handlers) historyParams(r *http.Request, id string) (after int64, limit int, err error) {
	values, perr := url.ParseQuery(r.URL.RawQuery)
	if perr != nil {
		return 0, 0, apierrors.InvalidRequest("the query string does not decode: %v", perr)
	}
	limit = DefaultHistoryLimit
	for name, vs := range values {
		if len(vs) != 1 {
			return 0, 0, apierrors.InvalidRequest("%s: given %d times; give it once", name, len(vs))
		}
		v := vs[0]
		switch name {
		case "limit":
			n, err := strconv.Atoi(v)
			if err != nil || n < 1 || n > MaxHistoryLimit {
				return 0, 0, apierrors.InvalidRequest("limit: must be an integer from 1 to %d", MaxHistoryLimit)
			}
			limit = n
		case "after":
			seq, ok := h.decodeHistoryCursor(id, v)
			if !ok {
				return 0, 0, apierrors.InvalidRequest("after: not a cursor of this record's history; give the next_cursor of the page before")
			}
			after = seq
		default:
			return 0, 0, apierrors.InvalidRequest("%s: unknown parameter; a history takes after and limit", name)
		}
	}
	return after, limit, nil
}

// historyCursorPurpose separates the MACs of history cursors from those of
// any other use of the cursor key.
const historyCursorPurpose = "resource/history\x00"

// historyCursor returns the cursor of the history of the record id after
// the entry seq: seq and a MAC that binds it to the resource and the
// record, in base64url.
func (h *handlers) historyCursor(id string, seq int64) string {
	b := binary.BigEndian.AppendUint64(make([]byte, 0, 8+16), uint64(seq))
	b = append(b, h.historyMAC(id, b)...)
	return base64.RawURLEncoding.EncodeToString(b)
}

// historyMAC returns the MAC of a history cursor's position pos of the
// record id, 16 bytes.
func (h *handlers) historyMAC(id string, pos []byte) []byte {
	m := hmac.New(sha256.New, h.historyKey)
	m.Write([]byte(historyCursorPurpose + h.resource.Name + "\x00" + strings.ToLower(id) + "\x00"))
	m.Write(pos)
	return m.Sum(nil)[:16]
}

// decodeHistoryCursor returns the position of a cursor that historyCursor
// gave for the record id, and false for any other text.
func (h *handlers) decodeHistoryCursor(id, text string) (int64, bool) {
	b, err := base64.RawURLEncoding.DecodeString(text)
	if err != nil || len(b) != 8+16 || len(h.historyKey) == 0 {
		return 0, false
	}
	if !hmac.Equal(b[8:], h.historyMAC(id, b[:8])) {
		return 0, false
	}
	seq := int64(binary.BigEndian.Uint64(b[:8]))
	return seq, seq > 0
}

// SQLHistory keeps the history of records in the registry's database, in
// the table waybill_record_history that Registry.Migrate creates: set it as
// the registry's History. Purge removes the entries older than a
// retention, which is the operator's to choose (and independent of how long
// the change feed keeps its events).
type SQLHistory struct {
	// Dialect is the database's dialect.
	Dialect query.Dialect
}

// historyChunk is the most entries one insert statement stores.
const historyChunk = 500

// historyColumns are the columns AppendHistory writes, in the order of
// historyArgs.
const historyColumns = "organization_id, branch_id, resource, record_id, id, type, time, client_id, user_id, changed, before_values, after_values"

// historyWidth is the number of historyColumns.
const historyWidth = 12

// AppendHistory stores entries in tx, in their order, in one statement per
// 500 entries. It implements History.
func (s *SQLHistory) AppendHistory(ctx context.Context, tx *sql.Tx, entries []*HistoryEntry) error {
	for start := 0; start < len(entries); start += historyChunk {
		part := entries[start:min(start+historyChunk, len(entries))]
		args := make([]any, 0, historyWidth*len(part))
		for _, e := range part {
			args = s.historyArgs(args, e)
		}
		if _, err := tx.ExecContext(ctx, s.insertText(len(part)), args...); err != nil {
			return fmt.Errorf("resource: append history: %w", err)
		}
	}
	return nil
}

// insertText returns the INSERT of n entries in the dialect: the text of
// one entry, which every write of one record uses, is made once.
func (s *SQLHistory) insertText(n int) string {
	if n == 1 {
		if s.Dialect == query.Postgres {
			return postgresInsertOne
		}
		return sqliteInsertOne
	}
	return historyInsert(s.Dialect, n)
}

var (
	postgresInsertOne = historyInsert(query.Postgres, 1)
	sqliteInsertOne   = historyInsert(query.SQLite, 1)
)

// historyInsert returns the INSERT of n entries in the dialect d.
func historyInsert(d query.Dialect, n int) string { return historyInsertFrom(d, n, 1) }

// historyInsertFrom returns the INSERT of n entries in the dialect d, whose
// placeholders begin at $first on PostgreSQL.
func historyInsertFrom(d query.Dialect, n, first int) string {
	var b strings.Builder
	b.WriteString("INSERT INTO " + HistoryTable + " (" + historyColumns + ") VALUES ")
	p := first - 1
	for i := range n {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteByte('(')
		for j := range historyWidth {
			if j > 0 {
				b.WriteString(", ")
			}
			p++
			if d == query.Postgres {
				b.WriteString("$" + strconv.Itoa(p))
			} else {
				b.WriteByte('?')
			}
		}
		b.WriteByte(')')
	}
	return b.String()
}

// historyArgs appends the values of historyColumns of e to args.
func (s *SQLHistory) historyArgs(args []any, e *HistoryEntry) []any {
	changed := make([]byte, 0, 16*len(e.Changed)+2)
	changed = append(changed, '[')
	for i, f := range e.Changed {
		if i > 0 {
			changed = append(changed, ',')
		}
		changed = appendString(changed, f)
	}
	changed = append(changed, ']')
	return append(args, e.OrganizationID, nullable(e.BranchID), e.Resource, e.RecordID, e.ID, e.Type, s.Dialect.Timestamp(e.Time),
		nullable(e.ClientID), nullable(e.UserID), string(changed), string(e.Before), string(e.After))
}

// ReadHistory returns the first limit entries of the record of key after
// the entry after. It implements History.
func (s *SQLHistory) ReadHistory(ctx context.Context, db *sql.DB, key HistoryKey, after int64, limit int) ([]*HistoryEntry, error) {
	b := sq.Select("seq", "branch_id", "id", "type", "time", "client_id", "user_id", "changed", "before_values", "after_values").
		From(HistoryTable).
		Where("record_id = ? AND organization_id = ? AND resource = ? AND seq > ?", key.RecordID, key.OrganizationID, key.Resource, after).
		OrderBy("seq").Limit(uint64(limit))
	text, args, err := sqlbuild.SQL(s.Dialect, b)
	if err != nil {
		return nil, err
	}
	rows, err := db.QueryContext(ctx, text, args...)
	if err != nil {
		return nil, fmt.Errorf("resource: read history: %w", err)
	}
	defer rows.Close()
	var out []*HistoryEntry
	for rows.Next() {
		e := &HistoryEntry{HistoryKey: key}
		var branch, client, user sql.NullString
		var at any
		var changed, before, afterValues string
		if err := rows.Scan(&e.Seq, &branch, &e.ID, &e.Type, &at, &client, &user, &changed, &before, &afterValues); err != nil {
			return nil, fmt.Errorf("resource: read history: %w", err)
		}
		if e.Time, err = query.ScanTimestamp(at); err != nil {
			return nil, fmt.Errorf("resource: read history: %w", err)
		}
		if err := json.Unmarshal([]byte(changed), &e.Changed); err != nil {
			return nil, fmt.Errorf("resource: read history: %w", err)
		}
		e.BranchID, e.ClientID, e.UserID = branch.String, client.String, user.String
		e.Before, e.After = json.RawMessage(before), json.RawMessage(afterValues)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("resource: read history: %w", err)
	}
	return out, nil
}

// Purge deletes, from db, the entries of every record's history that are
// older than before, and returns how many it deleted.
func (s *SQLHistory) Purge(ctx context.Context, db *sql.DB, before time.Time) (int64, error) {
	text, args, err := sqlbuild.SQL(s.Dialect, sq.Delete(HistoryTable).Where("time < ?", s.Dialect.Timestamp(before)))
	if err != nil {
		return 0, err
	}
	res, err := db.ExecContext(ctx, text, args...)
	if err != nil {
		return 0, fmt.Errorf("resource: purge history: %w", err)
	}
	return res.RowsAffected()
}

// nullable returns s, or nil (NULL) when it is "".
func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}
