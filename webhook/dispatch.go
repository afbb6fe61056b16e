package webhook

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"
	"unicode/utf8"

	sq "github.com/Masterminds/squirrel"
	"github.com/google/uuid"

	"github.com/waybillhq/waybill/events"
	"github.com/waybillhq/waybill/query"
)

// The defaults of a Dispatcher's zero fields.
const (
	defaultTimeout      = 10 * time.Second
	defaultLease        = 60 * time.Second
	defaultWorkers      = 8
	defaultPollInterval = time.Second
	defaultMaxAttempts  = 10
	// wakeSpacing is the least time between two fan-outs that Wake
	// starts: under thousands of writes a second, the wakes of the writes
	// in it share one pass, which bounds the dispatcher's work on the
	// database to 500 passes a second; at hundreds of writes a second
	// they are further apart and wait for nothing.
	wakeSpacing = 2 * time.Millisecond
)

// Limits of the work done at once.
const (
	// fanOutBatch is how many events of one organization one fan-out
	// transaction turns into deliveries.
	fanOutBatch = 1000
	// insertBatch is how many deliveries one INSERT statement adds.
	insertBatch = 100
	// maxAnswer is how much of a receiver's answer is read.
	maxAnswer = 64 << 10
	// maxErrorBody is how much of a failed answer's body an attempt keeps.
	maxErrorBody = 200
	// secretRetry is when a delivery whose secret could not be opened is
	// tried again; that is the operator's problem, not the endpoint's, so
	// it costs no attempt.
	secretRetry = time.Minute
)

// The texts of attempts that did not reach the receiver.
const (
	errEventRemoved = "the event was removed by retention"
)

// UserAgent is the User-Agent header of deliveries.
const UserAgent = "Waybill-Webhooks/1"

// ContentType is the Content-Type header of deliveries: the body is one
// CloudEvent in the structured mode of the CloudEvents HTTP binding, which
// the CloudEvents SDKs read as such.
const ContentType = "application/cloudevents+json"

// Outcome is what became of one attempt of a delivery, or of its endpoint.
type Outcome int

// The outcomes a Dispatcher reports to its Observe function.
const (
	// Delivered: the receiver answered 2xx.
	Delivered Outcome = iota + 1
	// Retried: the attempt failed and the delivery will be tried again.
	Retried
	// Failed: the attempt failed and it was the last; the delivery failed
	// for good.
	Failed
	// Disabled: the endpoint was disabled because every attempt of a
	// delivery failed while no other delivery to it succeeded.
	Disabled
)

// String returns "delivered", "retried", "failed" or "disabled".
func (o Outcome) String() string {
	switch o {
	case Delivered:
		return "delivered"
	case Retried:
		return "retried"
	case Failed:
		return "failed"
	case Disabled:
		return "disabled"
	}
	return "Outcome(" + strconv.Itoa(int(o)) + ")"
}

// Stats are the figures of the deliveries, for metrics.
type Stats struct {
	// Pending is how many deliveries wait for their (next) attempt.
	Pending int64
	// Failed is how many deliveries failed for good.
	Failed int64
	// OldestPending is the age of the oldest pending delivery, 0 when
	// none is pending.
	OldestPending time.Duration
	// FeedLag is the age of the oldest committed event of an organization
	// with an enabled endpoint that the fan-out has not yet turned into
	// deliveries, 0 when it is caught up.
	FeedLag time.Duration
}

// Dispatcher delivers events to the webhook endpoints of every
// organization. Every replica of a server may run one on the same
// database: they share the work, and each event reaches each endpoint
// that wants it once (a receiver may still see a delivery twice when a
// replica dies after sending it and before recording it; the webhook-id
// header tells the copies apart).
//
// The work has three steps. The fan-out turns each new event into one
// delivery per enabled endpoint of its organization that wants it (by
// event type, branch and the grant of the endpoint). A replica then claims
// due deliveries under a lease, posts them, and records the attempt. A
// failed attempt is retried after Backoff; after MaxAttempts attempts the
// delivery fails for good, and its endpoint is disabled unless another
// delivery to it succeeded meanwhile. The deliveries of one record reach
// an endpoint in the order of its events: a delivery waits while an
// earlier delivery of the same record to the same endpoint is pending.
// The deliveries of a disabled endpoint wait, pending, until it is enabled
// again; it gets no new ones meanwhile. No organization has more than half
// of a replica's Workers at once, so one whose endpoints hang until the
// Timeout delays its own deliveries, not those of the others.
//
// The zero values of the optional fields are the documented defaults. A
// Dispatcher must not be copied after its first use.
type Dispatcher struct {
	// DB holds the tables of package events and of this package.
	DB *sql.DB
	// Dialect is DB's dialect.
	Dialect query.Dialect
	// Sealer opens the sealed secrets of endpoints. It may be nil when
	// every secret is stored in clear.
	Sealer Sealer
	// Client posts the deliveries. nil: Guard{AllowPrivate:
	// AllowPrivate}.Client(Timeout), which follows no redirects and
	// refuses private addresses.
	Client *http.Client
	// AllowPrivate lets the default Client reach loopback, private and
	// link-local addresses.
	AllowPrivate bool
	// Timeout bounds each attempt; 0 is 10 seconds.
	Timeout time.Duration
	// Now returns the current time; nil is time.Now.
	Now func() time.Time
	// Backoff returns the delay after the attempt-th failed attempt of a
	// delivery (from 1); nil is DefaultBackoff.
	Backoff func(attempt int) time.Duration
	// MaxAttempts is how many attempts a delivery gets before it fails for
	// good; 0 is 10, which spans about a day with DefaultBackoff.
	MaxAttempts int
	// Lease is how long a replica holds a delivery it claimed; another
	// replica takes the delivery over after it. 0 is 60 seconds. It must
	// exceed Timeout.
	Lease time.Duration
	// Workers is how many deliveries are posted at once; 0 is 8.
	Workers int
	// PollInterval is how long Run waits for new work between passes,
	// unless Wake is called; 0 is 1 second.
	PollInterval time.Duration
	// Logger receives the failures of attempts and of the database; nil
	// means slog.Default, as for the module's other parts. Secrets and
	// signatures are never logged.
	Logger *slog.Logger
	// Observe, when not nil, is called with the outcome of every attempt
	// and with Disabled when an endpoint is disabled, for metrics. It must
	// be safe for concurrent use.
	Observe func(Outcome)

	once   sync.Once
	wake   chan struct{}
	client *http.Client
}

// init sets up the wake channel and the client.
func (d *Dispatcher) init() {
	d.once.Do(func() {
		d.wake = make(chan struct{}, 1)
		d.client = d.Client
		if d.client == nil {
			d.client = Guard{AllowPrivate: d.AllowPrivate}.Client(d.timeout())
		}
	})
}

func (d *Dispatcher) timeout() time.Duration { return orDefault(d.Timeout, defaultTimeout) }
func (d *Dispatcher) lease() time.Duration   { return orDefault(d.Lease, defaultLease) }
func (d *Dispatcher) poll() time.Duration    { return orDefault(d.PollInterval, defaultPollInterval) }
func (d *Dispatcher) workers() int           { return orDefault(d.Workers, defaultWorkers) }
func (d *Dispatcher) maxAttempts() int       { return orDefault(d.MaxAttempts, defaultMaxAttempts) }

// orDefault returns v, or def when v is not positive.
func orDefault[T int | time.Duration](v, def T) T {
	if v <= 0 {
		return def
	}
	return v
}

// now returns the current time, UTC, to the microsecond: what both
// databases store, so that a lease read back compares equal.
func (d *Dispatcher) now() time.Time {
	t := time.Now()
	if d.Now != nil {
		t = d.Now()
	}
	return t.UTC().Truncate(time.Microsecond)
}

func (d *Dispatcher) backoff(attempt int) time.Duration {
	if d.Backoff != nil {
		return d.Backoff(attempt)
	}
	return DefaultBackoff(attempt)
}

func (d *Dispatcher) logger() *slog.Logger {
	if d.Logger != nil {
		return d.Logger
	}
	return slog.Default()
}

func (d *Dispatcher) observe(o Outcome) {
	if d.Observe != nil {
		d.Observe(o)
	}
}

// check reports settings that cannot work.
func (d *Dispatcher) check() error {
	if d.DB == nil {
		return errors.New("webhook: a Dispatcher needs a DB")
	}
	if d.lease() <= d.timeout() {
		return fmt.Errorf("webhook: the Lease (%s) must exceed the Timeout (%s)", d.lease(), d.timeout())
	}
	return nil
}

// sql returns text, written with ? placeholders, in the placeholders of
// d's dialect.
func (d *Dispatcher) sql(text string) string {
	if d.Dialect == query.Postgres {
		text, _ = sq.Dollar.ReplacePlaceholders(text) // fails only on a malformed literal text
	}
	return text
}

// Wake makes Run start its next pass now instead of after PollInterval.
// It never blocks; a server calls it after a write commits so that its
// webhooks leave within milliseconds.
func (d *Dispatcher) Wake() {
	d.init()
	select {
	case d.wake <- struct{}{}:
	default:
	}
}

// Run delivers until ctx is done: it fans out new events, claims the due
// deliveries and posts up to Workers of them at once, and waits for
// PollInterval, Wake or a free worker before the next pass. Failures of the
// database are logged and retried at the next pass. When ctx is done Run
// claims nothing more, waits for the attempts in flight (each bounded by
// Timeout) to finish and be recorded, and returns nil. It returns an error
// only for settings that cannot work.
func (d *Dispatcher) Run(ctx context.Context) error {
	if err := d.check(); err != nil {
		return err
	}
	d.init()
	var wg sync.WaitGroup
	defer wg.Wait()
	slots := make(chan struct{}, d.workers())
	fl := newInflight(d.workers())
	finished := make(chan struct{}, 1)
	// Attempts in flight finish and are recorded after ctx is done.
	work := context.WithoutCancel(ctx)
	// A pass that starts because a worker became free only claims: the
	// events are fanned out after Wake and every PollInterval.
	fanOut := true
	var lastFanOut time.Time
	for ctx.Err() == nil {
		if fanOut {
			lastFanOut = time.Now()
			if err := d.fanOut(ctx); err != nil && ctx.Err() == nil {
				d.logger().Error("webhook: fan-out", "error", err)
			}
		}
		free := cap(slots) - len(slots)
		full := true
		// After a worker became free, claim once half of them are: fewer,
		// larger claims.
		if free > 0 && (fanOut || free >= (cap(slots)+1)/2) && ctx.Err() == nil {
			jobs, err := d.claim(ctx, free, fl)
			if err != nil && ctx.Err() == nil {
				d.logger().Error("webhook: claim deliveries", "error", err)
			}
			for _, j := range jobs {
				slots <- struct{}{}
				wg.Go(func() {
					defer func() {
						fl.add(j.org, -1)
						<-slots
						select {
						case finished <- struct{}{}:
						default:
						}
					}()
					if _, err := d.deliver(work, j); err != nil {
						d.logger().Error("webhook: record an attempt", "delivery", j.id, "error", err)
					}
				})
			}
			// More may be due: all that fit, or an organization's share.
			full = len(jobs) > 0
		}
		// When the pass claimed deliveries more may be due: go on as soon
		// as a worker is free.
		var freed <-chan struct{}
		if full {
			freed = finished
		}
		timer := time.NewTimer(d.poll())
		fanOut = true
		select {
		case <-ctx.Done():
		case <-d.wake:
			// Passes started by writes come at most every wakeSpacing: the
			// writes of the meantime share the next one.
			if wait := wakeSpacing - time.Since(lastFanOut); wait > 0 {
				spacing := time.NewTimer(wait)
				select {
				case <-ctx.Done():
				case <-spacing.C:
				}
				spacing.Stop()
			}
		case <-freed:
			fanOut = false
		case <-timer.C:
		}
		timer.Stop()
	}
	return nil
}

// RunOnce fans out the new events, claims up to Workers due deliveries and
// posts them, and returns when their attempts are recorded, with how many
// were delivered. Run is RunOnce in a loop; tests and tools call RunOnce
// directly.
func (d *Dispatcher) RunOnce(ctx context.Context) (delivered int, err error) {
	if err := d.check(); err != nil {
		return 0, err
	}
	d.init()
	if err := d.fanOut(ctx); err != nil {
		return 0, err
	}
	jobs, err := d.claim(ctx, d.workers(), newInflight(d.workers()))
	if err != nil {
		return 0, err
	}
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs []error
	)
	for _, j := range jobs {
		wg.Go(func() {
			o, err := d.deliver(ctx, j)
			mu.Lock()
			defer mu.Unlock()
			if err != nil {
				errs = append(errs, err)
			}
			if o == Delivered {
				delivered++
			}
		})
	}
	wg.Wait()
	return delivered, errors.Join(errs...)
}

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
		n, err := events.Sequence(ctx, d.DB, d.Dialect)
		if err != nil {
			return fmt.Errorf("webhook: fan-out: %w", err)
		}
		if n < events.SequenceBatch {
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
}

// wants reports whether the endpoint gets a delivery of e.
func (ep *subscription) wants(e *events.Stored) bool {
	if e.Seq <= ep.afterSeq || !slices.Contains(ep.grantResources, e.Resource) {
		return false
	}
	if !slices.ContainsFunc(ep.patterns, func(p events.Pattern) bool { return p.Matches(e.Type) }) {
		return false
	}
	if e.BranchID == "" {
		return true
	}
	return (ep.branches == nil || slices.Contains(ep.branches, e.BranchID)) &&
		(ep.grantBranches == nil || slices.Contains(ep.grantBranches, e.BranchID))
}

// fanOutOrg turns up to fanOutBatch new events of org into deliveries in
// one transaction and reports whether more are left. missing says that org
// had no fan-out row a moment ago.
func (d *Dispatcher) fanOutOrg(ctx context.Context, org string, missing bool) (more bool, err error) {
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
	head, _, err := events.Head(ctx, tx, d.Dialect, org)
	if err != nil {
		return false, err
	}
	if head <= seq {
		return false, tx.Commit()
	}
	through := min(head, seq+fanOutBatch)
	eps, err := d.endpoints(ctx, tx, org)
	if err != nil {
		return false, err
	}
	if len(eps) > 0 {
		evs, err := events.Read(ctx, tx, d.Dialect, org, seq, through, fanOutBatch)
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
func (d *Dispatcher) endpoints(ctx context.Context, tx *sql.Tx, org string) ([]subscription, error) {
	rows, err := tx.QueryContext(ctx, d.sql(`SELECT id, event_types, branch_ids, grant_resources, grant_branches, after_seq
FROM waybill_webhook_endpoints WHERE organization_id = ? AND status = 'enabled'`), org)
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
		)
		if err := rows.Scan(&ep.id, &types, &branches, &resources, &grantBranches, &ep.afterSeq); err != nil {
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
		if err := errors.Join(typesErr, resErr, brErr, grBrErr); err != nil {
			// It gets nothing rather than too much.
			d.logger().Error("webhook: an endpoint's settings cannot be read; it gets no events", "endpoint", ep.id, "error", err)
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
func (d *Dispatcher) insertDeliveries(ctx context.Context, tx *sql.Tx, org string, eps []subscription, evs []events.Stored) error {
	now := d.Dialect.Timestamp(d.now())
	var b sq.InsertBuilder
	n := 0
	flush := func() error {
		if n == 0 {
			return nil
		}
		text, args, err := d.Dialect.SQL(b.Suffix("ON CONFLICT (endpoint_id, event_seq) DO NOTHING"))
		if err != nil {
			return err
		}
		n = 0
		_, err = tx.ExecContext(ctx, text, args...)
		return err
	}
	for i := range evs {
		e := &evs[i]
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

// result is the result of an attempt.
type result struct {
	at       time.Time
	code     int // 0: no HTTP answer
	err      string
	duration time.Duration
	// final: the delivery cannot succeed, whatever the endpoint does; it
	// fails now and does not count against the endpoint.
	final bool
}

// deliver makes one attempt of j and records it. The outcome is 0 when
// nothing was recorded.
func (d *Dispatcher) deliver(ctx context.Context, j job) (Outcome, error) {
	var body string
	err := d.DB.QueryRowContext(ctx, d.sql(`SELECT body FROM waybill_events WHERE organization_id = ? AND seq = ?`), j.org, j.seq).Scan(&body)
	if errors.Is(err, sql.ErrNoRows) {
		return d.record(ctx, j, result{at: d.now(), err: errEventRemoved, final: true})
	}
	if err != nil {
		return 0, fmt.Errorf("webhook: read the event: %w", err)
	}
	var (
		rawURL, keyID string
		sealed        []byte
	)
	err = d.DB.QueryRowContext(ctx, d.sql(`SELECT url, secret, secret_key_id FROM waybill_webhook_endpoints WHERE id = ?`), j.endpointID).
		Scan(&rawURL, &sealed, &keyID)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil // deleted, with its deliveries
	}
	if err != nil {
		return 0, fmt.Errorf("webhook: read the endpoint: %w", err)
	}
	secret, err := openSecret(d.Sealer, j.endpointID, sealed, keyID)
	var h http.Header
	if err == nil {
		h, err = Sign(secret, j.eventID, d.now(), []byte(body))
	}
	if err != nil {
		d.logger().Error("webhook: the signing secret of an endpoint cannot be used", "endpoint", j.endpointID, "error", err)
		return 0, d.release(ctx, j)
	}
	return d.record(ctx, j, d.post(ctx, rawURL, h, []byte(body)))
}

// openSecret returns the signing secret of an endpoint, stored sealed by
// sealer under keyID (in clear when keyID is "").
func openSecret(sealer Sealer, endpointID string, sealed []byte, keyID string) (string, error) {
	if keyID == "" {
		return string(sealed), nil
	}
	if sealer == nil {
		return "", fmt.Errorf("webhook: the secret is sealed under key %q and there is no Sealer", keyID)
	}
	secret, err := sealer.Open(sealed, []byte(endpointID), keyID)
	if err != nil {
		return "", fmt.Errorf("webhook: open the secret: %w", err)
	}
	return string(secret), nil
}

// post makes one attempt: it posts body with the signed headers h.
func (d *Dispatcher) post(ctx context.Context, rawURL string, h http.Header, body []byte) result {
	res := result{at: d.now()}
	start := time.Now()
	defer func() { res.duration = time.Since(start) }()
	ctx, cancel := context.WithTimeout(ctx, d.timeout())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rawURL, bytes.NewReader(body))
	if err != nil {
		res.err = "the URL cannot be used: " + unwrapURLError(err)
		res.duration = time.Since(start)
		return res
	}
	req.Header = h
	req.Header.Set("Content-Type", ContentType)
	req.Header.Set("User-Agent", UserAgent)
	resp, err := d.client.Do(req)
	if err != nil {
		var timeout interface{ Timeout() bool }
		if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &timeout) && timeout.Timeout() {
			res.err = "no answer within " + d.timeout().String()
		} else {
			res.err = unwrapURLError(err)
		}
		res.duration = time.Since(start)
		return res
	}
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	_ = resp.Body.Close()
	res.code, res.duration = resp.StatusCode, time.Since(start)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		res.err = "HTTP " + strconv.Itoa(resp.StatusCode)
		if text := printable(answer, maxErrorBody); text != "" {
			res.err += ": " + text
		}
	}
	return res
}

// unwrapURLError returns the text of err without the method and URL that
// *url.Error adds: the URL is the endpoint's, shown elsewhere.
func unwrapURLError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return err.Error()
}

// printable returns up to limit bytes of b as printable text: invalid
// UTF-8 and control characters become spaces, runs of spaces one.
func printable(b []byte, limit int) string {
	var sb strings.Builder
	space := false
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		b = b[size:]
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			r = ' '
		}
		if r == ' ' {
			if space {
				continue
			}
			space = true
		} else {
			space = false
		}
		if sb.Len()+utf8.RuneLen(r) > limit {
			break
		}
		sb.WriteRune(r)
	}
	return strings.TrimSpace(sb.String())
}

// release gives j back without an attempt, to be tried after secretRetry.
func (d *Dispatcher) release(ctx context.Context, j job) error {
	_, err := d.DB.ExecContext(ctx, d.sql(`UPDATE waybill_webhook_deliveries SET lease_until = NULL, next_attempt_at = ?
WHERE id = ? AND lease_until = ?`), d.Dialect.Timestamp(d.now().Add(secretRetry)), j.id, d.Dialect.Timestamp(j.lease))
	if err != nil {
		return fmt.Errorf("webhook: release a delivery: %w", err)
	}
	return nil
}

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
	// transaction's to take.
	var n int
	if err := tx.QueryRowContext(ctx, d.sql(`SELECT coalesce(max(n), 0) + 1 FROM waybill_webhook_attempts WHERE delivery_id = ?`), j.id).Scan(&n); err != nil {
		return 0, fmt.Errorf("webhook: record an attempt: %w", err)
	}
	if _, err := tx.ExecContext(ctx, d.sql(`INSERT INTO waybill_webhook_attempts (delivery_id, n, at, status_code, error, duration_ms)
VALUES (?, ?, ?, ?, ?, ?)`), j.id, n, d.Dialect.Timestamp(res.at), code, res.err, res.duration.Milliseconds()); err != nil {
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
	}
	return outcome, nil
}

// disableIfFailing disables the endpoint of j, whose delivery has just
// failed for good after attempts attempts, unless a delivery to it
// succeeded since the first of them.
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
	r, err := tx.ExecContext(ctx, d.sql(`UPDATE waybill_webhook_endpoints SET status = 'disabled', disabled_reason = ?, updated_at = ?
WHERE id = ? AND status = 'enabled'`), reason, d.Dialect.Timestamp(d.now()), j.endpointID)
	if err != nil {
		return false, err
	}
	n, err := r.RowsAffected()
	return n > 0, err
}

// Stats returns the figures of the deliveries and of the fan-out.
func (d *Dispatcher) Stats(ctx context.Context) (Stats, error) {
	var (
		s                Stats
		oldest, unfanned any
	)
	err := d.DB.QueryRowContext(ctx, `SELECT
	(SELECT count(*) FROM waybill_webhook_deliveries WHERE status = 'pending'),
	(SELECT count(*) FROM waybill_webhook_deliveries WHERE status = 'failed'),
	(SELECT min(created_at) FROM waybill_webhook_deliveries WHERE status = 'pending'),
	(SELECT min(e.time) FROM waybill_events e LEFT JOIN waybill_webhook_fanout f ON f.organization_id = e.organization_id
		WHERE e.seq > coalesce(f.seq, 0) AND EXISTS (SELECT 1 FROM waybill_webhook_endpoints p
			WHERE p.organization_id = e.organization_id AND p.status = 'enabled'))`).Scan(&s.Pending, &s.Failed, &oldest, &unfanned)
	if err != nil {
		return Stats{}, fmt.Errorf("webhook: stats: %w", err)
	}
	now := d.now()
	for _, v := range []struct {
		value any
		age   *time.Duration
	}{{oldest, &s.OldestPending}, {unfanned, &s.FeedLag}} {
		if v.value == nil {
			continue
		}
		t, err := query.ScanTimestamp(v.value)
		if err != nil {
			return Stats{}, fmt.Errorf("webhook: stats: %w", err)
		}
		*v.age = max(now.Sub(t), 0)
	}
	return s, nil
}
