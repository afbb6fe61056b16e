package webhook

import (
	"context"
	"fmt"
	"time"

	"github.com/waybillhq/waybill/query"
)

// This file holds the rate limit of an endpoint (rate_limit: deliveries a
// second). Every replica's dispatcher shares it through the endpoint's row:
// rate_next is the earliest time of the endpoint's next delivery, the
// theoretical arrival time of the generic cell rate algorithm with no
// burst beyond one delivery. A replica about to post a delivery takes the
// turn when rate_next has come, in one conditional UPDATE that moves
// rate_next one emission interval (1/rate_limit seconds) past now, so that
// of two replicas that try at once one takes it. The other, and any
// delivery whose turn has not come, gives its delivery back, pending, due
// at rate_next, without an attempt, and wakes its dispatcher then. The
// database is the one the dispatchers share already, so the limit holds
// across replicas with or without Redis, at one statement per delivery of
// a limited endpoint. Until its turn has come, the claim leaves an
// endpoint's deliveries alone (dueOrgs, leaseDue), so that a backlog
// behind a limit is not leased and given back over and over.

// interval returns the emission interval of rate deliveries a second.
func interval(rate int64) time.Duration {
	return max(time.Second/time.Duration(rate), time.Nanosecond)
}

// takeSlot takes the endpoint's turn for j when it has come: it reports
// true, or false with when the next turn comes. rateNext is the
// endpoint's rate_next as read with the delivery (nil: never taken).
func (d *Dispatcher) takeSlot(ctx context.Context, j job, rate int64, rateNext any) (time.Time, bool, error) {
	now := d.now()
	if rateNext != nil {
		next, err := query.ScanTimestamp(rateNext)
		if err != nil {
			return time.Time{}, false, fmt.Errorf("webhook: read the rate of an endpoint: %w", err)
		}
		if next.After(now) {
			return next, false, nil
		}
	}
	ts := d.Dialect.Timestamp(now)
	res, err := d.DB.ExecContext(ctx, d.sql(`UPDATE waybill_webhook_endpoints SET rate_next = ?
WHERE id = ? AND (rate_next IS NULL OR rate_next <= ?)`), d.Dialect.Timestamp(now.Add(interval(rate))), j.endpointID, ts)
	if err != nil {
		return time.Time{}, false, fmt.Errorf("webhook: take the turn of an endpoint: %w", err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return time.Time{}, false, fmt.Errorf("webhook: take the turn of an endpoint: %w", err)
	} else if n == 1 {
		// The claim leaves the endpoint's deliveries until its next turn:
		// Run looks again then.
		d.wakeAt(now.Add(interval(rate)))
		return now, true, nil
	}
	// Another replica took it a moment ago: the next turn is about one
	// interval on.
	return now.Add(interval(rate)), false, nil
}

// postpone gives j back, pending and due at at, without an attempt, and
// has Run wake then.
func (d *Dispatcher) postpone(ctx context.Context, j job, at time.Time) error {
	if err := d.releaseUntil(ctx, j, at); err != nil {
		return err
	}
	d.wakeAt(at)
	return nil
}

// wakeAt has Run start a pass at t, unless one is due earlier.
func (d *Dispatcher) wakeAt(t time.Time) {
	d.mu.Lock()
	defer d.mu.Unlock()
	// A time gone by is replaced: its pass has run or is running.
	if d.soonest.IsZero() || t.Before(d.soonest) || !d.soonest.After(time.Now()) {
		d.soonest = t
	}
}

// nextWait returns how long Run waits for its next pass: PollInterval, or
// less when a postponed delivery comes due sooner.
func (d *Dispatcher) nextWait() time.Duration {
	wait := d.poll()
	d.mu.Lock()
	defer d.mu.Unlock()
	if !d.soonest.IsZero() {
		until := time.Until(d.soonest)
		if until <= 0 {
			d.soonest = time.Time{}
			until = 0
		}
		wait = min(wait, until)
	}
	return wait
}
