package webhook

import (
	"context"
	"fmt"
	"sync"
	"time"

	sq "github.com/Masterminds/squirrel"
)

// job is a claimed delivery.
type job struct {
	id, endpointID, org, eventID string
	seq                          int64
	attempts                     int
	lease                        time.Time // the lease_until this replica set
}

// inflight counts the attempts a replica has in flight per organization,
// so that no organization takes more than half of its workers: a tenant
// whose endpoints hang until the timeout slows its own deliveries, never
// everyone's.
type inflight struct {
	mu  sync.Mutex
	n   map[string]int
	max int
}

func newInflight(workers int) *inflight {
	return &inflight{n: map[string]int{}, max: max(1, workers/2)}
}

// room returns how many more attempts org may start.
func (f *inflight) room(org string) int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.max - f.n[org]
}

func (f *inflight) add(org string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n[org] += n; f.n[org] <= 0 {
		delete(f.n, org)
	}
}

// full returns the organizations with no room left.
func (f *inflight) full() []string {
	f.mu.Lock()
	defer f.mu.Unlock()
	var out []string
	for org, n := range f.n {
		if n >= f.max {
			out = append(out, org)
		}
	}
	return out
}

// claimCandidates is how many due deliveries a claim looks at for each one
// it may take, and claimRounds how many times it looks: enough to fill the
// workers when some organizations have no room left.
const (
	claimCandidates = 4
	claimRounds     = 3
)

// claim leases up to n due deliveries to this replica, no more for one
// organization than fl gives room for, and counts them in fl. It picks
// among the due deliveries of the organizations with room, in the order
// they are due, then leases its picks with an UPDATE that takes only those
// still due and unleased: of two replicas that pick the same delivery, one
// gets it. When an organization runs out of room while others wait, it
// looks again without it.
func (d *Dispatcher) claim(ctx context.Context, n int, fl *inflight) ([]job, error) {
	var jobs []job
	for range claimRounds {
		got, more, err := d.claimRound(ctx, n-len(jobs), fl)
		if err != nil {
			return jobs, err
		}
		jobs = append(jobs, got...)
		if !more || len(jobs) == n {
			break
		}
	}
	return jobs, nil
}

// claimRound is one look of claim. more reports whether it passed over
// due deliveries of an organization that ran out of room.
func (d *Dispatcher) claimRound(ctx context.Context, n int, fl *inflight) (jobs []job, more bool, err error) {
	now := d.now()
	lease := now.Add(d.lease())
	ts := d.Dialect.Timestamp(now)
	due := sq.Select("d.id", "d.organization_id").From("waybill_webhook_deliveries d").
		Join("waybill_webhook_endpoints e ON e.id = d.endpoint_id").
		Where("d.status = 'pending' AND d.next_attempt_at <= ? AND (d.lease_until IS NULL OR d.lease_until < ?)", ts, ts).
		Where("e.status = 'enabled'").
		Where(`NOT EXISTS (SELECT 1 FROM waybill_webhook_deliveries p
		WHERE p.endpoint_id = d.endpoint_id AND p.record_id = d.record_id AND p.event_seq < d.event_seq AND p.status = 'pending')`).
		OrderBy("d.next_attempt_at", "d.event_seq").Limit(uint64(claimCandidates * n))
	if full := fl.full(); len(full) > 0 {
		due = due.Where(sq.NotEq{"d.organization_id": full})
	}
	text, args, err := d.Dialect.SQL(due)
	if err != nil {
		return nil, false, err
	}
	rows, err := d.DB.QueryContext(ctx, text, args...)
	if err != nil {
		return nil, false, fmt.Errorf("webhook: claim: %w", err)
	}
	var picked []any
	taken := map[string]int{}
	for rows.Next() && len(picked) < n {
		var id, org string
		if err := rows.Scan(&id, &org); err != nil {
			rows.Close()
			return nil, false, fmt.Errorf("webhook: claim: %w", err)
		}
		if taken[org] < fl.room(org) {
			taken[org]++
			picked = append(picked, id)
		} else {
			more = true
		}
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return nil, false, fmt.Errorf("webhook: claim: %w", err)
	}
	if len(picked) == 0 {
		return nil, more, nil
	}
	text, args, err = d.Dialect.SQL(sq.Update("waybill_webhook_deliveries").Set("lease_until", d.Dialect.Timestamp(lease)).
		Where(sq.Eq{"id": picked}).Where("status = 'pending' AND next_attempt_at <= ? AND (lease_until IS NULL OR lease_until < ?)", ts, ts).
		Suffix("RETURNING id, endpoint_id, organization_id, event_id, event_seq, attempts"))
	if err != nil {
		return nil, false, err
	}
	leased, err := d.DB.QueryContext(ctx, text, args...)
	if err != nil {
		return nil, false, fmt.Errorf("webhook: claim: %w", err)
	}
	defer leased.Close()
	for leased.Next() {
		j := job{lease: lease}
		if err := leased.Scan(&j.id, &j.endpointID, &j.org, &j.eventID, &j.seq, &j.attempts); err != nil {
			return nil, false, fmt.Errorf("webhook: claim: %w", err)
		}
		fl.add(j.org, 1)
		jobs = append(jobs, j)
	}
	if err := leased.Err(); err != nil {
		return nil, false, fmt.Errorf("webhook: claim: %w", err)
	}
	return jobs, more, nil
}
