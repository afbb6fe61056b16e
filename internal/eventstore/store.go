// Package eventstore keeps the events of the transactional outbox: their
// tables and migrations, the numbering of committed events without holes
// (Sequence), and the reads of an organization's events by number (Head,
// Read) that the change feed (package events) and the webhook dispatcher
// share, and the purge of old events.
package eventstore

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"
	"time"

	sq "github.com/Masterminds/squirrel"

	"github.com/waybillhq/waybill/internal/migrate"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/query/sqlbuild"
)

//go:embed migrations
var migrations embed.FS

// The tables of the outbox.
const (
	// Table keeps the events.
	Table = "waybill_events"
	// HeadsTable keeps each organization's last number.
	HeadsTable = "waybill_event_heads"
)

// Migrate creates the tables of the events in db (it records its versions
// in the table waybill_events_migrations). Call it at start-up, before the
// first write through a registry whose Outbox is an Outbox.
func Migrate(ctx context.Context, db *sql.DB, d query.Dialect) error {
	if _, err := migrate.Apply(ctx, db, d, migrations, "migrations/"+d.String(), "waybill_events_migrations"); err != nil {
		return fmt.Errorf("events: migrate: %w", err)
	}
	return nil
}

// Querier runs statements: a *sql.DB, a *sql.Tx or a *sql.Conn.
type Querier interface {
	QueryContext(ctx context.Context, query string, args ...any) (*sql.Rows, error)
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Stored is an event as the outbox keeps it.
type Stored struct {
	// Seq is the event's place in its organization's sequence: 1, 2, 3,
	// ... in commit order, without holes.
	Seq int64
	// ID is the CloudEvent id, a UUID.
	ID string
	// Type is the event type ("quotation.created").
	Type string
	// Resource is the name of the record's resource ("quotations").
	Resource string
	// BranchID is the record's branch, "" for an organization-wide record.
	BranchID string
	// RecordID is the record's id.
	RecordID string
	// Time is when the write happened.
	Time time.Time
	// Body is the CloudEvent JSON.
	Body []byte
}

// Head returns the seq of the last event of the organization that has
// committed and what retention removed: every event with seq up to seq has
// committed (or is being committed by a transaction that will have when
// Head's statement sees it), and those up to purgedThrough are gone. An
// organization without events has 0, 0.
func Head(ctx context.Context, q Querier, d query.Dialect, org string) (seq, purgedThrough int64, err error) {
	text, args, err := sqlbuild.SQL(d, sq.Select("seq", "purged_through").From(HeadsTable).Where("organization_id = ?", org))
	if err != nil {
		return 0, 0, err
	}
	err = q.QueryRowContext(ctx, text, args...).Scan(&seq, &purgedThrough)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0, nil
	}
	if err != nil {
		return 0, 0, fmt.Errorf("events: head: %w", err)
	}
	return seq, purgedThrough, nil
}

// Read returns up to limit events of the organization with after < seq <=
// through, in seq order. Read after Head with through at most the head, it
// sees every such event (see Head).
func Read(ctx context.Context, q Querier, d query.Dialect, org string, after, through int64, limit int) ([]Stored, error) {
	b := sq.Select("seq", "id", "type", "resource", "branch_id", "record_id", "time", "body").From(Table).
		Where("organization_id = ? AND seq > ? AND seq <= ?", org, after, through).OrderBy("seq").Limit(uint64(limit))
	text, args, err := sqlbuild.SQL(d, b)
	if err != nil {
		return nil, err
	}
	rows, err := q.QueryContext(ctx, text, args...)
	if err != nil {
		return nil, fmt.Errorf("events: read: %w", err)
	}
	defer rows.Close()
	var out []Stored
	for rows.Next() {
		var (
			e      Stored
			branch sql.NullString
			at     any
			body   string
		)
		if err := rows.Scan(&e.Seq, &e.ID, &e.Type, &e.Resource, &branch, &e.RecordID, &at, &body); err != nil {
			return nil, fmt.Errorf("events: read: %w", err)
		}
		if e.Time, err = query.ScanTimestamp(at); err != nil {
			return nil, fmt.Errorf("events: read: %w", err)
		}
		e.BranchID, e.Body = branch.String, []byte(body)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("events: read: %w", err)
	}
	return out, nil
}

// Purge removes the events that happened before before, of every
// organization, and returns how many it removed. A feed cursor from before
// what Purge removed gets 410 cursor_expired.
func Purge(ctx context.Context, db *sql.DB, d query.Dialect, before time.Time) (int64, error) {
	// Number what is waiting first, all of it: a number is the only way an
	// event goes.
	for {
		n, err := Sequence(ctx, db, d)
		if err != nil {
			return 0, err
		}
		if n < SequenceBatch {
			break
		}
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("events: purge: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	cutoff := d.Timestamp(before)
	// Record what goes before it goes: a head's purged_through only grows.
	last := sq.Select("max(seq)").From(Table + " e").Where("e.organization_id = " + HeadsTable + ".organization_id AND e.time < ?")
	lastSQL, _, err := last.ToSql()
	if err != nil {
		return 0, err
	}
	text, args, err := sqlbuild.SQL(d, sq.Update(HeadsTable).
		Set("purged_through", sq.Expr("coalesce(("+lastSQL+"), purged_through)", cutoff)).
		Where(sq.Expr("EXISTS (SELECT 1 FROM "+Table+" e WHERE e.organization_id = "+HeadsTable+".organization_id AND e.time < ?)", cutoff)))
	if err != nil {
		return 0, err
	}
	if _, err := tx.ExecContext(ctx, text, args...); err != nil {
		return 0, fmt.Errorf("events: purge: %w", err)
	}
	text, args, err = sqlbuild.SQL(d, sq.Delete(Table).Where("seq <= (SELECT purged_through FROM "+HeadsTable+" h WHERE h.organization_id = "+Table+".organization_id)"))
	if err != nil {
		return 0, err
	}
	res, err := tx.ExecContext(ctx, text, args...)
	if err != nil {
		return 0, fmt.Errorf("events: purge: %w", err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, err
	}
	return n, tx.Commit()
}

// Append adds the event e of the organization org in tx, as the outbox
// adds the events of writes: unnumbered on PostgreSQL (Sequence numbers it
// once tx has committed), numbered after the organization's head on
// SQLite. e.Seq is ignored; e.BranchID "" is no branch.
func Append(ctx context.Context, tx *sql.Tx, d query.Dialect, org string, e Stored) error {
	var branch any
	if e.BranchID != "" {
		branch = e.BranchID
	}
	if d == query.Postgres {
		_, err := tx.ExecContext(ctx, `INSERT INTO `+Table+` (organization_id, id, type, resource, branch_id, record_id, time, body)
VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`, org, e.ID, e.Type, e.Resource, branch, e.RecordID, e.Time.UTC(), string(e.Body))
		if err != nil {
			return fmt.Errorf("events: append: %w", err)
		}
		return nil
	}
	var seq int64
	if err := tx.QueryRowContext(ctx, `INSERT INTO `+HeadsTable+` (organization_id, seq) VALUES (?, 1)
ON CONFLICT (organization_id) DO UPDATE SET seq = seq + 1 RETURNING seq`, org).Scan(&seq); err != nil {
		return fmt.Errorf("events: append: %w", err)
	}
	_, err := tx.ExecContext(ctx, `INSERT INTO `+Table+` (organization_id, seq, id, type, resource, branch_id, record_id, time, body)
VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)`, org, seq, e.ID, e.Type, e.Resource, branch, e.RecordID, d.Timestamp(e.Time), string(e.Body))
	if err != nil {
		return fmt.Errorf("events: append: %w", err)
	}
	return nil
}
