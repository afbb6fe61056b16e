// Package auditdb keeps the audit log of package audit in PostgreSQL or
// SQLite: Append records an entry in the transaction of its action, Log
// reads an organization's entries a page at a time, and Migrate creates the
// table (audit_log).
package auditdb

import (
	"context"
	"database/sql"
	"embed"
	"encoding/json"
	"errors"
	"fmt"
	"strconv"
	"time"

	"github.com/google/uuid"

	"github.com/waybillhq/waybill/audit"
	"github.com/waybillhq/waybill/internal/migrate"
	"github.com/waybillhq/waybill/query"
)

// Execer runs a statement: a *sql.Tx (the action's transaction), a
// *sql.Conn or a *sql.DB.
type Execer interface {
	ExecContext(ctx context.Context, query string, args ...any) (sql.Result, error)
}

// Append records e with ex, the transaction of the action, on a database
// of dialect d. It sets e.ID and e.Time when they are empty. It refuses an
// entry without an action or an actor kind.
func Append(ctx context.Context, ex Execer, d query.Dialect, e *audit.Entry) error {
	switch {
	case e.Action == "":
		return errors.New("auditdb: an entry needs an action")
	case e.Actor.Kind == "":
		return errors.New("auditdb: an entry needs an actor")
	}
	if e.ID == "" {
		id, err := uuid.NewV7()
		if err != nil {
			return fmt.Errorf("auditdb: %w", err)
		}
		e.ID = id.String()
	}
	if e.Time.IsZero() {
		e.Time = time.Now()
	}
	e.Time = e.Time.UTC().Truncate(time.Microsecond)
	details := []byte("{}")
	if len(e.Details) > 0 {
		var err error
		if details, err = json.Marshal(e.Details); err != nil {
			return fmt.Errorf("auditdb: details: %w", err)
		}
	}
	var org any
	if e.OrganizationID != "" {
		org = e.OrganizationID
	}
	_, err := ex.ExecContext(ctx, `
		INSERT INTO audit_log (id, organization_id, at, action, actor_kind, actor_id, target_kind, target_id, remote_addr, details)
		VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		e.ID, org, d.Timestamp(e.Time), e.Action, e.Actor.Kind, e.Actor.ID, e.Target.Kind, e.Target.ID, e.RemoteAddr, string(details))
	if err != nil {
		return fmt.Errorf("auditdb: append: %w", err)
	}
	return nil
}

//go:embed migrations
var migrations embed.FS

// Migrate creates the audit log's table in db (it records its versions in
// the table waybill_audit_migrations). It is safe to call at every start
// and from several processes at once.
func Migrate(ctx context.Context, db *sql.DB, d query.Dialect) error {
	if _, err := migrate.Apply(ctx, db, d, migrations, "migrations/"+d.String(), "waybill_audit_migrations"); err != nil {
		return fmt.Errorf("auditdb: migrate: %w", err)
	}
	return nil
}

// Log reads the audit log.
type Log struct {
	DB      *sql.DB
	Dialect query.Dialect
}

// List returns the entries of the organization, and those of the whole
// installation, oldest first: at most limit (audit.DefaultPageSize when 0,
// at most audit.MaxPageSize), after the cursor (from the start when "";
// audit.ErrBadCursor for one List did not make). next is the cursor of the
// page after this one, "" when this page is the last (it holds fewer than
// limit entries).
//
// An entry takes its place in the log when it is inserted, in its
// action's transaction, and on PostgreSQL transactions commit in any
// order: a page read while an action commits may miss an entry placed
// before the page's end, which the next page does not show either. The log
// is for people to read; a program that keeps a copy of it reads again a
// little before its last cursor (the entries' ids tell the ones it has).
func (l *Log) List(ctx context.Context, organizationID, after string, limit int) (entries []audit.Entry, next string, err error) {
	switch {
	case limit == 0:
		limit = audit.DefaultPageSize
	case limit < 0 || limit > audit.MaxPageSize:
		return nil, "", fmt.Errorf("auditdb: limit %d is not between 1 and %d", limit, audit.MaxPageSize)
	}
	var from int64
	if after != "" {
		if from, err = strconv.ParseInt(after, 10, 64); err != nil || from < 1 {
			return nil, "", audit.ErrBadCursor
		}
	}
	rows, err := l.DB.QueryContext(ctx, `
		SELECT seq, id, at, action, actor_kind, actor_id, target_kind, target_id, remote_addr, details, organization_id
		FROM audit_log WHERE (organization_id = $1 OR organization_id IS NULL) AND seq > $2
		ORDER BY seq LIMIT $3`, organizationID, from, limit)
	if err != nil {
		return nil, "", fmt.Errorf("auditdb: list: %w", err)
	}
	defer rows.Close()
	entries = []audit.Entry{}
	var last int64
	for rows.Next() {
		var e audit.Entry
		var at any
		var details string
		var org sql.NullString
		if err := rows.Scan(&last, &e.ID, &at, &e.Action, &e.Actor.Kind, &e.Actor.ID, &e.Target.Kind, &e.Target.ID, &e.RemoteAddr, &details, &org); err != nil {
			return nil, "", fmt.Errorf("auditdb: list: %w", err)
		}
		if e.Time, err = scanTime(at); err != nil {
			return nil, "", err
		}
		if err := json.Unmarshal([]byte(details), &e.Details); err != nil {
			return nil, "", fmt.Errorf("auditdb: details of %s: %w", e.ID, err)
		}
		e.OrganizationID = org.String
		entries = append(entries, e)
	}
	if err := rows.Err(); err != nil {
		return nil, "", fmt.Errorf("auditdb: list: %w", err)
	}
	if len(entries) == limit {
		next = strconv.FormatInt(last, 10)
	}
	return entries, next, nil
}

// scanTime reads a timestamp of either dialect.
func scanTime(v any) (time.Time, error) {
	switch v := v.(type) {
	case time.Time:
		return v.UTC(), nil
	case string:
		return parseTime(v)
	case []byte:
		return parseTime(string(v))
	}
	return time.Time{}, fmt.Errorf("auditdb: cannot read %T as a time", v)
}

func parseTime(s string) (time.Time, error) {
	t, err := time.Parse(query.SQLiteTimestampLayout, s)
	if err != nil {
		return time.Time{}, fmt.Errorf("auditdb: bad time %q: %w", s, err)
	}
	return t.UTC(), nil
}
