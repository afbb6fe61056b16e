package webhook

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	sq "github.com/Masterminds/squirrel"
	"github.com/google/uuid"

	"github.com/waybillhq/waybill/events"
	"github.com/waybillhq/waybill/internal/eventstore"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/query/sqlbuild"
	"github.com/waybillhq/waybill/tenancy"
)

// fanOut turns the new events of every organization into deliveries.
func (d *Dispatcher) fanOut(ctx context.Context) error {
	// Without an enabled endpoint there is nothing to hand out: the
	// dispatcher then costs the writes nothing. An endpoint made later
	// starts at the head of its organization's events.
	var any bool
	if err := d.DB.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM waybill_webhook_endpoints WHERE status = 'enabled')`).Scan(&any); err != nil {
		return fmt.Errorf("webhook: fan-out: %w", err)
	}
	if !any {
		return nil
	}
	// Number every event that waits: the dispatcher runs in the
	// background, so it takes the whole backlog that requests leave.
	for {
		n, err := eventstore.Sequence(ctx, d.DB, d.Dialect)
		if err != nil {
			return fmt.Errorf("webhook: fan-out: %w", err)
		}
		if n < eventstore.SequenceBatch {
			break
		}
	}
	rows, err := d.DB.QueryContext(ctx, `SELECT h.organization_id, f.seq IS NULL
FROM waybill_event_heads h LEFT JOIN waybill_webhook_fanout f ON f.organization_id = h.organization_id
WHERE h.seq > coalesce(f.seq, 0)`)
	if err != nil {
		return fmt.Errorf("webhook: fan-out: %w", err)
	}
	type org struct {
		id      string
		missing bool
	}
	var orgs []org
	for rows.Next() {
		var o org
		if err := rows.Scan(&o.id, &o.missing); err != nil {
			rows.Close()
			return fmt.Errorf("webhook: fan-out: %w", err)
		}
		orgs = append(orgs, o)
	}
	if err := rows.Close(); err != nil {
		return fmt.Errorf("webhook: fan-out: %w", err)
	}
	if err := rows.Err(); err != nil {
		return fmt.Errorf("webhook: fan-out: %w", err)
	}
	var errs []error
	for _, o := range orgs {
		for more, missing := true, o.missing; more && ctx.Err() == nil; missing = false {
			if more, err = d.fanOutOrg(ctx, o.id, missing); err != nil {
				errs = append(errs, fmt.Errorf("webhook: fan-out of organization %s: %w", o.id, err))
				break
			}
		}
	}
	return errors.Join(errs...)
}

// subscription is what the fan-out needs of an endpoint.
type subscription struct {
	id             string
	patterns       []events.Pattern
	branches       []string // nil: every branch
	grantResources []string
	grantBranches  []string // nil: every branch
	afterSeq       int64
	filter         eventFilter // nil: every event
	// everyBranch: the grant reaches every branch of the organization
	// (see coverBranches), so that the endpoint may get the events about
	// endpoints of every branch.
	everyBranch bool
}

// coverBranches sets everyBranch of each of eps: a grant of every branch
// (NULL grant_branches, an authorization-code token's), or one whose
// branches hold every branch of all, the organization's branches now (nil
// when unknown: then only the first counts).
func coverBranches(all []string, eps []subscription) {
	for i := range eps {
		eps[i].everyBranch = eps[i].grantBranches == nil ||
			all != nil && !slices.ContainsFunc(all, func(b string) bool { return !slices.Contains(eps[i].grantBranches, b) })
	}
}

// orgBranches returns the branches of org that branches lists, nil when
// branches is nil. It runs before a transaction of the fan-out: on SQLite
// that transaction holds the one connection, which the lookup needs.
func orgBranches(ctx context.Context, branches tenancy.Branches, org string) ([]string, error) {
	if branches == nil {
		return nil, nil
	}
	all, err := branches.List(ctx, org)
	return nonNil(all), err
}

// fanEvent is an event as the fan-out decides on it: the stored event and,
// once a filter asked for it, what filters read of its body, decoded once
// for every endpoint.
type fanEvent struct {
	*eventstore.Stored
	data    *eventData
	decoded bool
}

// body returns what filters read of the event's body, decoding it the
// first time; nil when it does not decode.
func (e *fanEvent) body() *eventData {
	if !e.decoded {
		e.decoded = true
		e.data, _ = decodeEvent(e.Body)
	}
	return e.data
}

// wants reports whether the endpoint gets a delivery of e: after its
// creation (afterSeq), of its grant's resources and branches, of its event
// types and branches, and passing its filter. It is the one place where
// that is decided, for the fan-out of new events and for a recovery (API
// recover) alike: a new condition of an endpoint on its events belongs
// here.
func (ep *subscription) wants(e *fanEvent) bool {
	if e.Seq <= ep.afterSeq || !slices.Contains(ep.grantResources, e.Resource) {
		return false
	}
	if e.Resource == endpointsResource && e.BranchID == "" && !ep.everyBranch {
		// An event about an endpoint of several branches, or of every
		// branch: for a grant of every branch alone (see EventKinds).
		return false
	}
	if !slices.ContainsFunc(ep.patterns, func(p events.Pattern) bool { return p.Matches(e.Type) }) {
		return false
	}
	if e.BranchID != "" && !((ep.branches == nil || slices.Contains(ep.branches, e.BranchID)) &&
		(ep.grantBranches == nil || slices.Contains(ep.grantBranches, e.BranchID))) {
		return false
	}
	if ep.filter == nil {
		return true
	}
	data := e.body()
	return data != nil && ep.filter.matches(data)
}

// fanOutOrg turns up to fanOutBatch new events of org into deliveries in
// one transaction and reports whether more are left. missing says that org
// had no fan-out row a moment ago.
func (d *Dispatcher) fanOutOrg(ctx context.Context, org string, missing bool) (more bool, err error) {
	all, err := orgBranches(ctx, d.Branches, org)
	if err != nil {
		return false, err
	}
	tx, err := d.DB.BeginTx(ctx, nil)
	if err != nil {
		return false, err
	}
	defer func() { _ = tx.Rollback() }()
	// On SQLite the first statement must write, so that the transaction
	// takes the write lock at once (waiting for it) instead of failing to
	// upgrade a read later. On PostgreSQL a plain insert would wait for a
	// replica that holds the row; only a missing row is inserted.
	if missing || d.Dialect == query.SQLite {
		if _, err := tx.ExecContext(ctx, d.sql(`INSERT INTO waybill_webhook_fanout (organization_id, seq) VALUES (?, 0)
ON CONFLICT (organization_id) DO NOTHING`), org); err != nil {
			return false, err
		}
	}
	lock := `SELECT seq FROM waybill_webhook_fanout WHERE organization_id = ?`
	if d.Dialect == query.Postgres {
		lock += ` FOR UPDATE SKIP LOCKED`
	}
	var seq int64
	if err := tx.QueryRowContext(ctx, d.sql(lock), org).Scan(&seq); errors.Is(err, sql.ErrNoRows) {
		return false, nil // another replica is at it
	} else if err != nil {
		return false, err
	}
	head, _, err := eventstore.Head(ctx, tx, d.Dialect, org)
	if err != nil {
		return false, err
	}
	if head <= seq {
		return false, tx.Commit()
	}
	through := min(head, seq+fanOutBatch)
	eps, err := d.endpoints(ctx, tx, org, all)
	if err != nil {
		return false, err
	}
	if len(eps) > 0 {
		evs, err := eventstore.Read(ctx, tx, d.Dialect, org, seq, through, fanOutBatch)
		if err != nil {
			return false, err
		}
		if err := d.insertDeliveries(ctx, tx, org, eps, evs); err != nil {
			return false, err
		}
	}
	if _, err := tx.ExecContext(ctx, d.sql(`UPDATE waybill_webhook_fanout SET seq = ? WHERE organization_id = ?`), through, org); err != nil {
		return false, err
	}
	return through < head, tx.Commit()
}

// endpoints returns the enabled endpoints of org.
// The grants are judged against all, the organization's branches (see
// coverBranches).
func (d *Dispatcher) endpoints(ctx context.Context, tx *sql.Tx, org string, all []string) ([]subscription, error) {
	eps, err := readSubscriptions(ctx, tx, d.Dialect, d.logger(), sq.Eq{"organization_id": org, "status": statusEnabled})
	if err != nil {
		return nil, err
	}
	coverBranches(all, eps)
	return eps, nil
}

// readSubscriptions returns what the fan-out needs of the endpoints where
// selects. An endpoint whose settings cannot be read is left out and
// logged: it gets nothing rather than too much.
func readSubscriptions(ctx context.Context, q eventstore.Querier, dialect query.Dialect, logger *slog.Logger, where sq.Sqlizer) ([]subscription, error) {
	text, args, err := sqlbuild.SQL(dialect, sq.Select("id", "event_types", "branch_ids", "grant_resources", "grant_branches", "after_seq", "filter").
		From(endpointsTable).Where(where))
	if err != nil {
		return nil, err
	}
	rows, err := q.QueryContext(ctx, text, args...)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var eps []subscription
	for rows.Next() {
		var (
			ep                               subscription
			types, resources                 string
			branches, grantBranches          sql.NullString
			typesErr, resErr, brErr, grBrErr error
			typeList                         []string
			filter                           *string
			filterErr                        error
		)
		if err := rows.Scan(&ep.id, &types, &branches, &resources, &grantBranches, &ep.afterSeq, &filter); err != nil {
			return nil, err
		}
		typeList, typesErr = parseList(types)
		ep.grantResources, resErr = parseList(resources)
		if branches.Valid {
			ep.branches, brErr = parseList(branches.String)
			ep.branches = nonNil(ep.branches)
		}
		if grantBranches.Valid {
			ep.grantBranches, grBrErr = parseList(grantBranches.String)
			ep.grantBranches = nonNil(ep.grantBranches)
		}
		// The filter is compiled once a load: the events are matched in
		// memory.
		if stored, err := readStoredFilter(filter); err != nil {
			filterErr = err
		} else {
			ep.filter, filterErr = compileFilter(stored)
		}
		if err := errors.Join(typesErr, resErr, brErr, grBrErr, filterErr); err != nil {
			// It gets nothing rather than too much.
			logger.Error("webhook: an endpoint's settings cannot be read; it gets no events", "endpoint", ep.id, "error", err)
			continue
		}
		for _, t := range typeList {
			ep.patterns = append(ep.patterns, events.Pattern(t))
		}
		eps = append(eps, ep)
	}
	return eps, rows.Err()
}

// nonNil returns s, or an empty slice for nil: a list that is set but
// empty allows nothing.
func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// parseList reads a list column of the endpoints: a JSON array of strings.
// A text that is not JSON is read as names separated by commas.
func parseList(s string) ([]string, error) {
	s = strings.TrimSpace(s)
	if strings.HasPrefix(s, "[") {
		var list []string
		if err := json.Unmarshal([]byte(s), &list); err != nil {
			return nil, err
		}
		return list, nil
	}
	var list []string
	for part := range strings.SplitSeq(s, ",") {
		if part = strings.TrimSpace(part); part != "" {
			list = append(list, part)
		}
	}
	return list, nil
}

// insertDeliveries adds a pending delivery of each event to each endpoint
// that wants it, unless it exists.
func (d *Dispatcher) insertDeliveries(ctx context.Context, tx *sql.Tx, org string, eps []subscription, evs []eventstore.Stored) error {
	now := d.Dialect.Timestamp(d.now())
	var b sq.InsertBuilder
	n := 0
	flush := func() error {
		if n == 0 {
			return nil
		}
		text, args, err := sqlbuild.SQL(d.Dialect, b.Suffix("ON CONFLICT (endpoint_id, event_seq) DO NOTHING"))
		if err != nil {
			return err
		}
		n = 0
		_, err = tx.ExecContext(ctx, text, args...)
		return err
	}
	for i := range evs {
		e := &fanEvent{Stored: &evs[i]}
		for j := range eps {
			if !eps[j].wants(e) {
				continue
			}
			if n == 0 {
				b = sq.Insert("waybill_webhook_deliveries").Columns("id", "endpoint_id", "organization_id", "event_seq",
					"event_id", "record_id", "status", "attempts", "next_attempt_at", "created_at", "updated_at")
			}
			id, err := uuid.NewV7()
			if err != nil {
				return err
			}
			b = b.Values(id.String(), eps[j].id, org, e.Seq, e.ID, e.RecordID, "pending", 0, now, now, now)
			if n++; n == insertBatch {
				if err := flush(); err != nil {
					return err
				}
			}
		}
	}
	return flush()
}
