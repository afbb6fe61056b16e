package webhook

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"strconv"
	"sync"
	"time"

	sq "github.com/Masterminds/squirrel"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/tenancy"
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
// failed attempt is retried after Backoff (ExponentialBackoff(RetryDelay)
// unless set); after MaxAttempts attempts the delivery fails for good, and
// its endpoint is disabled unless another delivery to it succeeded
// meanwhile, with a webhook_endpoint.disabled event appended to its
// organization's feed in the same transaction (see EventKinds). A
// delivery that carries its own event (a webhook.test) gets one attempt,
// which never disables the endpoint. Every delivery is signed with the
// endpoint's secret and, during the grace of a rotation, with the
// previous one too. The deliveries of one record reach
// an endpoint in the order of its events: a delivery waits while an
// earlier delivery of the same record to the same endpoint is pending.
// The deliveries of a disabled endpoint wait, pending, until it is enabled
// again; it gets no new ones meanwhile. An endpoint with a rate_limit gets
// at most that many deliveries a second whatever the number of replicas:
// they take its turns in its row, and a delivery whose turn has not come
// is given back, pending and due at the next turn, without an attempt.
// An endpoint with a filter gets only the events that meet it. The organizations with due
// deliveries share a replica's Workers: none has more than half of them,
// those that are busy at once split them evenly, keeping one free for an
// organization that has nothing in flight, and a free worker goes to the
// organization with the fewest in flight. So one whose endpoints hang
// until the Timeout, with any backlog, delays its own deliveries, not
// those of the others.
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
	// Client posts the deliveries. nil: Guard.Client(Timeout), which
	// follows no redirects and connects only to the addresses the Guard
	// allows.
	Client *http.Client
	// Guard decides which addresses the default Client may connect to;
	// its zero value refuses every address that is not globally
	// reachable. Give the API's Guard, so that the addresses it accepts at
	// registration are the ones deliveries reach.
	Guard Guard
	// Branches lists the branches of an organization (the API's
	// Registry.Branches): an endpoint whose grant holds every branch gets
	// the events about endpoints of every branch (webhook_endpoint.disabled;
	// see EventKinds). nil: only the grant of an authorization-code token,
	// which names no branches, counts as every branch.
	Branches tenancy.Branches
	// Audit records in the organization's audit log (package audit) each
	// endpoint the dispatcher disables, in the transaction that disables
	// it, as done by the system ("webhook dispatcher").
	Audit bool
	// Timeout bounds each attempt; 0 is 10 seconds.
	Timeout time.Duration
	// Now returns the current time; nil is time.Now.
	Now func() time.Time
	// Backoff returns the delay after the attempt-th failed attempt of a
	// delivery (from 1); nil is ExponentialBackoff(RetryDelay).
	Backoff func(attempt int) time.Duration
	// RetryDelay is the delay before the first retry when Backoff is nil;
	// each next one is 4 times longer, capped at 10 hours (see
	// ExponentialBackoff). 0 is 5 seconds (DefaultBackoff).
	RetryDelay time.Duration
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
	// PathPrefix is the first prefix of the API's paths (the endpoints
	// API's), which starts the source of the webhook_endpoint.disabled
	// events the dispatcher appends; "" is /v1.
	PathPrefix string
	// Observe, when not nil, is called with the outcome of every attempt
	// and with Disabled when an endpoint is disabled, for metrics. It must
	// be safe for concurrent use.
	Observe func(Outcome)

	once   sync.Once
	wake   chan struct{}
	client *http.Client

	mu      sync.Mutex
	soonest time.Time // when a delivery postponed by an endpoint's rate limit comes due; zero: none
}

// init sets up the wake channel and the client.
func (d *Dispatcher) init() {
	d.once.Do(func() {
		d.wake = make(chan struct{}, 1)
		d.client = d.Client
		if d.client == nil {
			d.client = d.Guard.Client(d.timeout())
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
	return ExponentialBackoff(d.RetryDelay)(attempt)
}

func (d *Dispatcher) logger() *slog.Logger {
	if d.Logger != nil {
		return d.Logger
	}
	return slog.Default()
}

// logFailure logs a step of the dispatcher that failed with err: at the
// warning level when the database could not be reached or timed out (an
// outage, which the API answers with 503 and which the next pass retries),
// at the error level otherwise.
func (d *Dispatcher) logFailure(msg string, err error, args ...any) {
	level := apierrors.LogLevel(apierrors.From(err).Status)
	d.logger().Log(context.Background(), level, msg, append(args, "error", err)...)
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
// PollInterval, Wake, the end of an attempt or the turn of a delivery its
// endpoint's rate limit postponed before the next pass.
// Failures of the database are logged and retried at the next pass. When
// ctx is done Run claims nothing more, waits for the attempts in flight
// (each bounded by Timeout) to finish and be recorded, and returns nil. It
// returns an error only for settings that cannot work.
func (d *Dispatcher) Run(ctx context.Context) error {
	if err := d.check(); err != nil {
		return err
	}
	d.init()
	var wg sync.WaitGroup
	defer wg.Wait()
	slots := make(chan struct{}, d.workers())
	fl := newInflight()
	// finished holds a signal when an attempt ended since the last claim
	// began: its worker is free, and an organization that was at its share
	// may have room again.
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
				d.logFailure("webhook: fan-out", err)
			}
		}
		if free := cap(slots) - len(slots); free > 0 && ctx.Err() == nil {
			jobs, err := d.claim(ctx, free, cap(slots), fl)
			if err != nil && ctx.Err() == nil {
				d.logFailure("webhook: claim deliveries", err)
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
						d.logFailure("webhook: record an attempt", err, "delivery", j.id)
					}
				})
			}
		}
		// The end of an attempt may let more be claimed: a worker is free,
		// its organization may have room again, and a delivery that waited
		// for it (an earlier one of its record) becomes due. A signal left
		// by an attempt that ended before the claim above costs one claim
		// that finds nothing new, never a wait for the PollInterval.
		timer := time.NewTimer(d.nextWait())
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
		case <-finished:
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
	// A claim that failed in a later round still returns the deliveries
	// it leased: they are posted, not left to their lease.
	jobs, err := d.claim(ctx, d.workers(), d.workers(), newInflight())
	var (
		wg   sync.WaitGroup
		mu   sync.Mutex
		errs = []error{err}
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
