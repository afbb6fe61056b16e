package webhook

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/waybillhq/waybill/audit"
	"github.com/waybillhq/waybill/audit/auditdb"
	"github.com/waybillhq/waybill/query"
)

// record stores the attempt res of j and the delivery's new state, and
// disables the endpoint when the delivery failed for good while no other
// delivery to it succeeded. Nothing is stored when this replica lost its
// lease of j to another.
func (d *Dispatcher) record(ctx context.Context, j job, res result) (Outcome, error) {
	now := d.now()
	attempts := j.attempts + 1
	var (
		outcome Outcome
		set     string
		args    []any
	)
	switch {
	case res.err == "":
		outcome, set = Delivered, `status = 'delivered'`
	case !res.final && attempts < d.maxAttempts():
		outcome, set = Retried, `next_attempt_at = ?`
		args = append(args, d.Dialect.Timestamp(now.Add(d.backoff(attempts))))
	default:
		outcome, set = Failed, `status = 'failed'`
	}
	tx, err := d.DB.BeginTx(ctx, nil)
	if err != nil {
		return 0, fmt.Errorf("webhook: record an attempt: %w", err)
	}
	defer func() { _ = tx.Rollback() }()
	// The first statement writes: on SQLite it takes the write lock.
	args = append(args, attempts, d.Dialect.Timestamp(now), j.id, d.Dialect.Timestamp(j.lease))
	r, err := tx.ExecContext(ctx, d.sql(`UPDATE waybill_webhook_deliveries SET `+set+`, attempts = ?, lease_until = NULL, updated_at = ?
WHERE id = ? AND lease_until = ?`), args...)
	if err != nil {
		return 0, fmt.Errorf("webhook: record an attempt: %w", err)
	}
	if n, err := r.RowsAffected(); err != nil {
		return 0, fmt.Errorf("webhook: record an attempt: %w", err)
	} else if n == 0 {
		d.logger().Warn("webhook: the lease of a delivery expired during its attempt; another replica has it",
			"delivery", j.id, "endpoint", j.endpointID)
		return 0, nil
	}
	var code any
	if res.code != 0 {
		code = res.code
	}
	// The delivery's row, updated above, stays locked: n is this
	// transaction's to take. The casts give PostgreSQL the types of the
	// values that are not compared with a column.
	at := "CAST(? AS text)"
	if d.Dialect == query.Postgres {
		at = "CAST(? AS timestamptz)"
	}
	if _, err := tx.ExecContext(ctx, d.sql(`INSERT INTO waybill_webhook_attempts (delivery_id, n, at, status_code, error, duration_ms)
SELECT CAST(? AS text), coalesce(max(n), 0) + 1, `+at+`, CAST(? AS integer), CAST(? AS text), CAST(? AS integer)
FROM waybill_webhook_attempts WHERE delivery_id = ?`), j.id, d.Dialect.Timestamp(res.at), code, res.err, res.duration.Milliseconds(), j.id); err != nil {
		return 0, fmt.Errorf("webhook: record an attempt: %w", err)
	}
	disabled := false
	if outcome == Failed && !res.final {
		if disabled, err = d.disableIfFailing(ctx, tx, j, attempts, res); err != nil {
			return 0, fmt.Errorf("webhook: record an attempt: %w", err)
		}
	}
	if err := tx.Commit(); err != nil {
		return 0, fmt.Errorf("webhook: record an attempt: %w", err)
	}
	if res.err != "" {
		d.logger().Warn("webhook: an attempt failed", "delivery", j.id, "endpoint", j.endpointID,
			"event", j.eventID, "attempt", attempts, "outcome", outcome.String(), "error", res.err)
	}
	d.observe(outcome)
	if disabled {
		d.logger().Warn("webhook: endpoint disabled", "endpoint", j.endpointID, "delivery", j.id)
		d.observe(Disabled)
		d.Wake() // its event leaves at once for the endpoints that subscribe to it
	}
	return outcome, nil
}

// disableIfFailing disables the endpoint of j, whose delivery has just
// failed for good after attempts attempts, unless a delivery to it
// succeeded since the first of them, and appends the
// webhook_endpoint.disabled event of the endpoint to its organization's
// feed.
func (d *Dispatcher) disableIfFailing(ctx context.Context, tx *sql.Tx, j job, attempts int, last result) (bool, error) {
	var at any
	err := tx.QueryRowContext(ctx, d.sql(`SELECT at FROM waybill_webhook_attempts WHERE delivery_id = ? ORDER BY n DESC LIMIT 1 OFFSET ?`),
		j.id, attempts-1).Scan(&at)
	if err != nil && !errors.Is(err, sql.ErrNoRows) {
		return false, err
	}
	first := last.at
	if err == nil {
		if first, err = query.ScanTimestamp(at); err != nil {
			return false, err
		}
	}
	var succeeded bool
	if err := tx.QueryRowContext(ctx, d.sql(`SELECT EXISTS (SELECT 1 FROM waybill_webhook_attempts a
JOIN waybill_webhook_deliveries x ON x.id = a.delivery_id
WHERE x.endpoint_id = ? AND a.error = '' AND a.at >= ?)`), j.endpointID, d.Dialect.Timestamp(first)).Scan(&succeeded); err != nil {
		return false, err
	}
	if succeeded {
		return false, nil
	}
	reason := fmt.Sprintf("every attempt of delivery %s (event %s) failed from %s to %s; the last: %s",
		j.id, j.eventID, first.UTC().Format(time.RFC3339), last.at.UTC().Format(time.RFC3339), last.err)
	now := d.now()
	r, err := tx.ExecContext(ctx, d.sql(`UPDATE waybill_webhook_endpoints SET status = 'disabled', disabled_reason = ?, updated_at = ?
WHERE id = ? AND status = 'enabled'`), reason, d.Dialect.Timestamp(now), j.endpointID)
	if err != nil {
		return false, err
	}
	if n, err := r.RowsAffected(); err != nil || n == 0 {
		return false, err
	}
	if d.Audit {
		if err := auditdb.Append(ctx, tx, d.Dialect, &audit.Entry{
			OrganizationID: j.org, Action: audit.WebhookEndpointDisabled, Actor: audit.Actor{Kind: audit.ActorSystem, ID: "webhook dispatcher"},
			Target: audit.Target{Kind: "webhook_endpoint", ID: j.endpointID}, Details: map[string]any{"reason": reason},
		}); err != nil {
			return false, err
		}
	}
	// The organization's feed says so, in the same transaction.
	return true, d.appendDisabled(ctx, tx, j.org, j.endpointID, now)
}
