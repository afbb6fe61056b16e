package events

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/waybillhq/waybill/internal/eventstore"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/resource"
)

// Outbox keeps every write of a resource registry as CloudEvents in the
// events table, in the write's transaction: set it as the registry's
// Outbox (resource.Registry.Outbox). A write gives one event, of type
// "<record>.created", "<record>.updated" or "<record>.deleted"; an update
// that moves the resource's status field (resource.StatusFlow) gives a
// second, "<record>.status_changed", right after the first. An event's time
// is the write's, to the microsecond, as the record's updated_at is stored.
// The first event of a write has the change's id (resource.Change.EventID),
// which the entry of the record's history carries too (see
// resource.History); a status_changed event has an id of its own.
//
// On PostgreSQL an event is inserted unnumbered, one statement at the end
// of the write's transaction, and writers never wait for each other:
// Sequence numbers the committed events afterwards (the feed and the
// webhook dispatcher call it before they read). On SQLite, which has one
// writer, the event takes its number as it is inserted.
type Outbox struct {
	// Dialect is the database's dialect.
	Dialect query.Dialect
}

// changeEvents returns the events of the write c, and the change of each
// (c every time): the write's own event and, when it moved the status,
// the status_changed event after it.
func changeEvents(c *resource.Change) ([]*resource.Change, []*event) {
	evs := []*event{newEvent(c, c.Operation.String())}
	of := []*resource.Change{c}
	if c.Status != nil {
		evs = append(evs, newEvent(c, StatusChanged))
		of = append(of, c)
	}
	return of, evs
}

// Append records c in tx. It implements resource.Outbox.
func (o *Outbox) Append(ctx context.Context, tx *sql.Tx, c *resource.Change) error {
	of, evs := changeEvents(c)
	if err := o.insert(ctx, tx, of, evs); err != nil {
		return fmt.Errorf("events: append: %w", err)
	}
	return nil
}

// AppendWith records c as Append does and, on PostgreSQL, runs the
// statement with returns (placeholders from $9) as a data-modifying WITH
// clause of the INSERT of the events: one statement, one round trip, for
// the events and, say, the write's history entry. On SQLite it runs the
// statement on its own after the events. It implements
// resource.HistoryOutbox.
func (o *Outbox) AppendWith(ctx context.Context, tx *sql.Tx, c *resource.Change, with func(first int) (string, []any)) error {
	if o.Dialect != query.Postgres {
		if err := o.Append(ctx, tx, c); err != nil {
			return err
		}
		text, args := with(1)
		if _, err := tx.ExecContext(ctx, text, args...); err != nil {
			return fmt.Errorf("events: append: %w", err)
		}
		return nil
	}
	of, evs := changeEvents(c)
	text, withArgs := with(postgresInsertParams + 1)
	args := append(postgresArgs(of, evs), withArgs...)
	if _, err := tx.ExecContext(ctx, "WITH written AS ("+text+") "+postgresInsert, args...); err != nil {
		return fmt.Errorf("events: append: %w", err)
	}
	return nil
}

// BeginSnapshot begins a read-only transaction on one consistent snapshot
// of db, on a connection of db that it returns too, with the organization's feed cursor after that
// snapshot: the feed after the cursor gives exactly the writes the
// snapshot does not hold. It implements resource.Snapshotter, through
// which a registry's exports (NDJSON, CSV) read, so that a client that
// resynchronizes from an export goes on with the feed from the cursor
// the export answers with, missing nothing and seeing nothing twice.
func (o *Outbox) BeginSnapshot(ctx context.Context, db *sql.DB, organizationID string) (*sql.Conn, *sql.Tx, string, error) {
	conn, tx, head, err := eventstore.BeginSnapshot(ctx, db, o.Dialect, organizationID)
	if err != nil {
		return nil, nil, "", err
	}
	return conn, tx, strconv.FormatInt(head, 10), nil
}

// AppendAll records the changes of a batch write in tx, in their order, as
// Append would one by one, in one statement per 500 changes (and, on
// SQLite, one raise of the organization's head). It implements
// resource.BatchOutbox.
func (o *Outbox) AppendAll(ctx context.Context, tx *sql.Tx, cs []*resource.Change) error {
	const chunk = 500
	for start := 0; start < len(cs); start += chunk {
		part := cs[start:min(start+chunk, len(cs))]
		var evs []*event
		var of []*resource.Change // the change of each event
		for _, c := range part {
			cof, cevs := changeEvents(c)
			of, evs = append(of, cof...), append(evs, cevs...)
		}
		if err := o.insert(ctx, tx, of, evs); err != nil {
			return fmt.Errorf("events: append: %w", err)
		}
	}
	return nil
}

// postgresInsert inserts events from one array a column, in their order
// (WITH ORDINALITY keeps it, and so the order of pos).
const postgresInsert = `INSERT INTO ` + eventstore.Table + ` (organization_id, id, type, resource, branch_id, record_id, time, body)
SELECT $1, e.id, e.type, e.resource, e.branch_id, e.record_id, e.time, e.body
FROM unnest($2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::timestamptz[], $8::text[]) WITH ORDINALITY
	AS e (id, type, resource, branch_id, record_id, time, body, n)
ORDER BY e.n`

// postgresInsertParams is the number of placeholders of postgresInsert.
const postgresInsertParams = 8

// postgresArgs returns the arguments of postgresInsert for evs, the events
// of the changes of (of[i] is the change of evs[i]): one array a column, so
// that the statement's text is one whatever the number of events, and the
// driver prepares it once.
func postgresArgs(of []*resource.Change, evs []*event) []any {
	n := len(evs)
	ids, types, resources, records, bodies := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
	branches, times := make([]*string, n), make([]time.Time, n)
	for i, e := range evs {
		c := of[i]
		ids[i], types[i], resources[i], records[i], bodies[i] = e.id, e.typ, c.Resource.Name, c.ID, string(e.body)
		if c.BranchID != "" {
			branches[i] = &c.BranchID
		}
		times[i] = eventTime(c)
	}
	return []any{of[0].Tenant.OrganizationID, ids, types, resources, branches, records, times, bodies}
}

// insert inserts evs, the events of the changes of (of[i] is the change of
// evs[i]), which are all of one organization: unnumbered on PostgreSQL,
// numbered after the organization's head on SQLite.
func (o *Outbox) insert(ctx context.Context, tx *sql.Tx, of []*resource.Change, evs []*event) error {
	org := of[0].Tenant.OrganizationID
	var sb strings.Builder
	var args []any
	if o.Dialect == query.Postgres {
		_, err := tx.ExecContext(ctx, postgresInsert, postgresArgs(of, evs)...)
		return err
	}
	var last int64
	err := tx.QueryRowContext(ctx, `INSERT INTO `+eventstore.HeadsTable+` (organization_id, seq) VALUES (?, ?)
ON CONFLICT (organization_id) DO UPDATE SET seq = seq + excluded.seq RETURNING seq`, org, len(evs)).Scan(&last)
	if err != nil {
		return err
	}
	sb.WriteString(`INSERT INTO ` + eventstore.Table + ` (organization_id, seq, id, type, resource, branch_id, record_id, time, body) VALUES `)
	for i, e := range evs {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString("(?, ?, ?, ?, ?, ?, ?, ?, ?)")
		c := of[i]
		args = append(args, org, last-int64(len(evs)-1-i), e.id, e.typ, c.Resource.Name, branch(c), c.ID, o.Dialect.Timestamp(eventTime(c)), string(e.body))
	}
	_, err = tx.ExecContext(ctx, sb.String(), args...)
	return err
}

// event is one event to insert.
type event struct {
	id, typ string
	body    []byte
}

// newEvent returns the event of c with change as its type's change. The
// event of the write's operation has the id of the change (Change.EventID,
// which the record's history shows too); a status_changed event, and the
// event of a change that has no id, a new one.
func newEvent(c *resource.Change, change string) *event {
	id := c.EventID
	if id == "" || change == StatusChanged {
		id = uuid.Must(uuid.NewV7()).String()
	}
	e := &event{id: id, typ: Type(c.Resource.Name, change)}
	e.body = appendBody(make([]byte, 0, 512+len(c.Record)), e, c, change)
	return e
}

// appendBody appends the CloudEvent JSON of e.
func appendBody(b []byte, e *event, c *resource.Change, change string) []byte {
	b = append(b, `{"specversion":"1.0","id":`...)
	b = appendString(b, e.id)
	b = append(b, `,"source":`...)
	b = appendString(b, c.Path)
	b = append(b, `,"type":`...)
	b = appendString(b, e.typ)
	b = append(b, `,"subject":`...)
	b = appendString(b, c.ID)
	b = append(b, `,"time":"`...)
	b = eventTime(c).AppendFormat(b, query.SQLiteTimestampLayout)
	b = append(b, '"')
	b = append(b, `,"datacontenttype":"application/json","organizationid":`...)
	b = appendString(b, c.Tenant.OrganizationID)
	if c.BranchID != "" {
		b = append(b, `,"branchid":`...)
		b = appendString(b, c.BranchID)
	}
	if claims := c.Tenant.Claims; claims != nil {
		if claims.ClientID != "" {
			b = append(b, `,"clientid":`...)
			b = appendString(b, claims.ClientID)
		}
		if !claims.ClientCredentials() && claims.Subject != "" {
			b = append(b, `,"userid":`...)
			b = appendString(b, claims.Subject)
		}
	}
	b = append(b, `,"data":{"record":`...)
	if c.Operation == resource.Deleted {
		b = append(b, `{"id":`...)
		b = appendString(b, c.ID)
		b = append(b, '}')
	} else {
		b = append(b, c.Record...)
	}
	b = append(b, `,"changed":[`...)
	for i, f := range c.Changed {
		if i > 0 {
			b = append(b, ',')
		}
		b = appendString(b, f)
	}
	b = append(b, ']')
	if change == StatusChanged {
		b = append(b, `,"status":{"field":`...)
		b = appendString(b, c.Status.Field)
		b = append(b, `,"from":`...)
		b = appendString(b, c.Status.From)
		b = append(b, `,"to":`...)
		b = appendString(b, c.Status.To)
		b = append(b, '}')
	}
	return append(b, "}}"...)
}

// eventTime returns the time of the write c, UTC, to the microsecond: the
// precision of the databases, so that an event's time is the updated_at of
// the record it carries (for a delete, the time of the delete in the same
// precision), never a moment after it.
func eventTime(c *resource.Change) time.Time { return c.Time.UTC().Truncate(time.Microsecond) }

// appendString appends s as a JSON string. Ids, paths and names, which
// need no escape, are copied as they are; anything else goes through
// encoding/json.
func appendString(b []byte, s string) []byte {
	for i := 0; i < len(s); i++ {
		if c := s[i]; c < 0x20 || c >= 0x7f || c == '"' || c == '\\' || c == '<' || c == '>' || c == '&' {
			q, _ := json.Marshal(s) // a string always marshals
			return append(b, q...)
		}
	}
	b = append(b, '"')
	b = append(b, s...)
	return append(b, '"')
}

// branch returns the branch of c for the branch_id column.
func branch(c *resource.Change) any {
	if c.BranchID == "" {
		return nil
	}
	return c.BranchID
}
