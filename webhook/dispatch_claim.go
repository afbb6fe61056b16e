package webhook

import (
	"cmp"
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/waybillhq/waybill/query"
)

// job is a claimed delivery.
type job struct {
	id, endpointID, org, eventID string
	seq                          int64
	attempts                     int
	lease                        time.Time // the lease_until this replica set
}

// inflight counts the attempts a replica has in flight per organization,
// for the fair share of its workers (share).
type inflight struct {
	mu sync.Mutex
	n  map[string]int
}

func newInflight() *inflight { return &inflight{n: map[string]int{}} }

func (f *inflight) add(org string, n int) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if f.n[org] += n; f.n[org] <= 0 {
		delete(f.n, org)
	}
}

// counts returns a copy of the counts.
func (f *inflight) counts() map[string]int {
	f.mu.Lock()
	defer f.mu.Unlock()
	out := make(map[string]int, len(f.n))
	for org, n := range f.n {
		out[org] = n
	}
	return out
}

// dueOrg is an organization with due deliveries and when the oldest of
// them became due.
type dueOrg struct {
	id  string
	due time.Time
}

// share divides free workers of a replica of workers among the
// organizations with due deliveries, orgs, given how many attempts each
// organization has running: it returns how many more each may start.
//
// The organizations that are busy (with due deliveries or attempts
// running) share the workers: none has more than workers/busy of them,
// nor more than half of them, and each may have one. The free workers go
// one at a time to the organization with the fewest running, the one
// whose delivery has waited longest first, and the last free worker only
// to an organization that has none running: organizations whose receivers
// hang until the Timeout, with backlogs of any size, hold up their own
// deliveries, never those of an organization that is not yet in flight.
func share(workers, free int, orgs []dueOrg, running map[string]int) map[string]int {
	busy := len(orgs)
	for org := range running {
		if !slices.ContainsFunc(orgs, func(o dueOrg) bool { return o.id == org }) {
			busy++
		}
	}
	limit := max(1, min(workers/2, workers/max(busy, 1)))
	room := map[string]int{}
	for free > 0 {
		best := -1
		for i, o := range orgs {
			n := running[o.id] + room[o.id]
			if n >= limit || n > 0 && free == 1 && workers > 1 {
				continue
			}
			if best < 0 {
				best = i
				continue
			}
			b := orgs[best]
			if c := cmp.Compare(n, running[b.id]+room[b.id]); c < 0 || c == 0 && o.due.Before(b.due) {
				best = i
			}
		}
		if best < 0 {
			break
		}
		room[orgs[best].id]++
		free--
	}
	return room
}

// claimRounds is how many times a claim divides the free workers: an
// organization whose due deliveries are fewer than its share (the others
// wait for an earlier delivery of their record) leaves its room to the
// others in the next round.
const claimRounds = 3

// claim leases up to n due deliveries to this replica, counts them in fl
// and returns them. It finds the organizations with due deliveries, gives
// each its share of the n free workers of the replica's workers (share),
// and leases the due deliveries of each up to its share, in the order they
// are due (leaseDue). So an organization with a backlog of thousands of
// deliveries takes no more than its share, and the delivery of an idle
// organization behind it is found at once.
func (d *Dispatcher) claim(ctx context.Context, n, workers int, fl *inflight) ([]job, error) {
	now := d.now()
	orgs, err := d.dueOrgs(ctx, now)
	if err != nil || len(orgs) == 0 {
		return nil, err
	}
	var jobs []job
	for range claimRounds {
		room := share(workers, n-len(jobs), orgs, fl.counts())
		leased, got, err := d.leaseDue(ctx, now, orgs, room, fl)
		jobs = append(jobs, leased...)
		if err != nil {
			return jobs, err
		}
		// An organization with fewer due deliveries than its room has no
		// more; the others may take what it left.
		orgs = slices.DeleteFunc(orgs, func(o dueOrg) bool { return got[o.id] < room[o.id] })
		if len(leased) == 0 || len(jobs) >= n || len(orgs) == 0 {
			break
		}
	}
	return jobs, nil
}

// dueOrgs returns the organizations that have due, unleased deliveries to
// enabled endpoints whose rate limit's turn has come (see takeSlot),
// oldest first. It looks up the first such delivery of
// each enabled endpoint in the index of the pending deliveries by endpoint
// and time: its cost grows with the endpoints, not with the backlogs.
func (d *Dispatcher) dueOrgs(ctx context.Context, now time.Time) ([]dueOrg, error) {
	ts := d.Dialect.Timestamp(now)
	rows, err := d.DB.QueryContext(ctx, d.sql(`SELECT organization_id, due FROM (SELECT e.organization_id,
	(SELECT d.next_attempt_at FROM waybill_webhook_deliveries d
		WHERE d.endpoint_id = e.id AND d.status = 'pending' AND d.next_attempt_at <= ? AND (d.lease_until IS NULL OR d.lease_until < ?)
		ORDER BY d.next_attempt_at LIMIT 1) AS due
	FROM waybill_webhook_endpoints e WHERE e.status = 'enabled' AND (e.rate_next IS NULL OR e.rate_next <= ?)) x
WHERE due IS NOT NULL`), ts, ts, ts)
	if err != nil {
		return nil, fmt.Errorf("webhook: claim: %w", err)
	}
	defer rows.Close()
	oldest := map[string]time.Time{}
	for rows.Next() {
		var (
			org string
			due any
		)
		if err := rows.Scan(&org, &due); err != nil {
			return nil, fmt.Errorf("webhook: claim: %w", err)
		}
		t, err := query.ScanTimestamp(due)
		if err != nil {
			return nil, fmt.Errorf("webhook: claim: %w", err)
		}
		if o, ok := oldest[org]; !ok || t.Before(o) {
			oldest[org] = t
		}
	}
	if err := rows.Err(); err != nil {
		return nil, fmt.Errorf("webhook: claim: %w", err)
	}
	orgs := make([]dueOrg, 0, len(oldest))
	for id, due := range oldest {
		orgs = append(orgs, dueOrg{id: id, due: due})
	}
	slices.SortFunc(orgs, func(a, b dueOrg) int { return cmp.Or(a.due.Compare(b.due), cmp.Compare(a.id, b.id)) })
	return orgs, nil
}

// leaseDue leases to this replica the oldest due deliveries of each
// organization in room, up to its room, counts them in fl and returns
// them, with how many it leased of each organization. It is one
// statement: the picks, materialized once, and an UPDATE of those still
// due and unleased when it runs, so that of two replicas that pick the
// same delivery, one gets it.
func (d *Dispatcher) leaseDue(ctx context.Context, now time.Time, orgs []dueOrg, room map[string]int, fl *inflight) ([]job, map[string]int, error) {
	ts := d.Dialect.Timestamp(now)
	until := now.Add(d.lease())
	var (
		parts []string
		args  []any
	)
	for _, o := range orgs {
		if room[o.id] <= 0 {
			continue
		}
		parts = append(parts, fmt.Sprintf(`SELECT id FROM (SELECT d.id FROM waybill_webhook_deliveries d
	JOIN waybill_webhook_endpoints e ON e.id = d.endpoint_id
	WHERE d.organization_id = ? AND d.status = 'pending' AND d.next_attempt_at <= ? AND (d.lease_until IS NULL OR d.lease_until < ?)
	AND e.status = 'enabled' AND (e.rate_next IS NULL OR e.rate_next <= ?)
	AND NOT EXISTS (SELECT 1 FROM waybill_webhook_deliveries p
		WHERE p.endpoint_id = d.endpoint_id AND p.record_id = d.record_id AND p.event_seq < d.event_seq AND p.status = 'pending')
	ORDER BY d.next_attempt_at, d.event_seq LIMIT %d) o%d`, room[o.id], len(parts)))
		args = append(args, o.id, ts, ts, ts)
	}
	if len(parts) == 0 {
		return nil, nil, nil
	}
	args = append(args, d.Dialect.Timestamp(until), ts, ts)
	rows, err := d.DB.QueryContext(ctx, d.sql(`WITH picked AS MATERIALIZED (`+strings.Join(parts, "\nUNION ALL\n")+`)
UPDATE waybill_webhook_deliveries SET lease_until = ? FROM picked
WHERE waybill_webhook_deliveries.id = picked.id AND status = 'pending' AND next_attempt_at <= ? AND (lease_until IS NULL OR lease_until < ?)
RETURNING waybill_webhook_deliveries.id, endpoint_id, organization_id, event_id, event_seq, attempts`), args...)
	if err != nil {
		return nil, nil, fmt.Errorf("webhook: claim: %w", err)
	}
	defer rows.Close()
	var jobs []job
	got := map[string]int{}
	for rows.Next() {
		j := job{lease: until}
		if err := rows.Scan(&j.id, &j.endpointID, &j.org, &j.eventID, &j.seq, &j.attempts); err != nil {
			return jobs, got, fmt.Errorf("webhook: claim: %w", err)
		}
		fl.add(j.org, 1)
		got[j.org]++
		jobs = append(jobs, j)
	}
	if err := rows.Err(); err != nil {
		return jobs, got, fmt.Errorf("webhook: claim: %w", err)
	}
	return jobs, got, nil
}
