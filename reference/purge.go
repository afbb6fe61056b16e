package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"time"

	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/resource"
)

// The purge of the token service's expired state (oauth.Server.Purge): serve
// runs it every --purge-interval, "waybill admin purge" once.
const (
	// defaultPurgeInterval is the default of --purge-interval.
	defaultPurgeInterval = time.Hour
	// purgeFirstDelay is how long after the start the first purge runs,
	// or after one interval when that is shorter.
	purgeFirstDelay = time.Minute
	// purgeJitter is the most by which a wait between purges is lengthened
	// or shortened at random, as a fraction of it, so that replicas
	// started together do not purge together.
	purgeJitter = 0.1
	// purgeTimeout bounds one purge; what it leaves goes at the next.
	purgeTimeout = 10 * time.Minute
)

// apiPurger deletes what the API keeps for a while: the expired
// idempotency keys, the events and ended webhook deliveries older than
// the feed's retention, and the history of records older than the audit
// retention (see apiPurge).
type apiPurger interface {
	PurgeIdempotencyKeys(ctx context.Context) (int64, error)
	PurgeEvents(ctx context.Context) (int64, error)
	PurgeDeliveries(ctx context.Context) (int64, error)
	PurgeHistory(ctx context.Context) (int64, error)
}

// purged is what one purge deleted: the expired state of the token
// service, the expired idempotency keys of the API and its old events.
type purged struct {
	oauth.PurgeResult
	IdempotencyKeys   int64 `json:"idempotency_keys"`
	Events            int64 `json:"events"`
	WebhookDeliveries int64 `json:"webhook_deliveries"`
	HistoryEntries    int64 `json:"history_entries"`
}

// purge runs one purge of tokens and, when not nil, of keys.
func purge(ctx context.Context, tokens *oauth.Server, keys apiPurger) (purged, error) {
	res, err := tokens.Purge(ctx, 0)
	out := purged{PurgeResult: res}
	if err != nil || keys == nil {
		return out, err
	}
	if out.IdempotencyKeys, err = keys.PurgeIdempotencyKeys(ctx); err != nil {
		return out, err
	}
	if out.Events, err = keys.PurgeEvents(ctx); err != nil {
		return out, err
	}
	if out.WebhookDeliveries, err = keys.PurgeDeliveries(ctx); err != nil {
		return out, err
	}
	out.HistoryEntries, err = keys.PurgeHistory(ctx)
	return out, err
}

// startPurges starts the periodic purge of the expired state of tokens and
// of the expired idempotency keys of keys (when not nil), in the
// background: the first purge purgeFirstDelay after the start (or
// after interval, when shorter), then one every interval, each wait
// jittered by purgeJitter. An interval of 0 starts nothing. Every purge is
// logged at info level with what it deleted; a failed one is logged as a
// warning and the next one tries again: a purge never stops the server. The
// purges stop when ctx is done or stop is called, a purge in progress at
// once (what it deleted stays deleted); stop returns once they have
// stopped. Call it before closing the database.
func startPurges(ctx context.Context, tokens *oauth.Server, keys apiPurger, interval time.Duration, logger *slog.Logger) (stop func()) {
	if interval <= 0 {
		logger.Info("periodic purge of expired tokens disabled", "purge_interval", "0s")
		return func() {}
	}
	logger.Info("periodic purge of expired tokens", "purge_interval", interval.String())
	return startPeriodic(ctx, min(interval, purgeFirstDelay), interval, func(ctx context.Context) {
		purgeOnce(ctx, tokens, keys, logger)
	})
}

// startPeriodic runs job in the background, first after first, then every
// interval (both positive), each wait jittered by purgeJitter, one run at
// a time, until ctx is done or stop is called, which cancels the context
// of a run in progress; stop returns once job has returned. serve's
// periodic jobs (the purges, the planner statistics of SQLite) run
// through it.
func startPeriodic(ctx context.Context, first, interval time.Duration, job func(ctx context.Context)) (stop func()) {
	ctx, cancel := context.WithCancel(ctx)
	done := make(chan struct{})
	go func() {
		defer close(done)
		delay := first
		for {
			timer := time.NewTimer(jitter(delay))
			select {
			case <-ctx.Done():
				timer.Stop()
				return
			case <-timer.C:
			}
			job(ctx)
			delay = interval
		}
	}()
	return func() {
		cancel()
		<-done
	}
}

// jitter returns d lengthened or shortened at random by up to purgeJitter
// of it.
func jitter(d time.Duration) time.Duration {
	return d + time.Duration((rand.Float64()*2-1)*purgeJitter*float64(d))
}

// purgeOnce runs one purge and logs its outcome; a purge cut short by the
// end of ctx (a shutdown) is not an error.
func purgeOnce(ctx context.Context, tokens *oauth.Server, keys apiPurger, logger *slog.Logger) {
	runCtx, cancel := context.WithTimeout(ctx, purgeTimeout)
	defer cancel()
	start := time.Now()
	res, err := purge(runCtx, tokens, keys)
	attrs := []any{"codes", res.Codes, "refresh_tokens", res.RefreshTokens, "families", res.Families, "grants", res.Grants,
		"idempotency_keys", res.IdempotencyKeys, "events", res.Events, "webhook_deliveries", res.WebhookDeliveries, "history_entries", res.HistoryEntries, "duration", time.Since(start).String()}
	switch {
	case err != nil && ctx.Err() != nil:
		logger.Info("purge of expired tokens stopped by the shutdown", attrs...)
	case err != nil:
		// A warning, as every outage of the database is: it is the usual
		// cause, and requests report it already.
		logger.Warn("purge of expired tokens failed; the next one tries again", append(attrs, "error", err.Error())...)
	default:
		logger.Info("purged expired tokens", attrs...)
	}
}

// purgeCmd is "waybill admin purge [--refresh-max-age D]
// [--event-retention D] [--audit-retention D]": one purge, as serve runs it
// every --purge-interval.
type purgeCmd struct {
	refreshMaxAge  time.Duration
	eventRetention time.Duration
	auditRetention time.Duration
}

// flags declares --refresh-max-age, --event-retention and
// --audit-retention, as serve has them.
func (c *purgeCmd) flags(fs *flag.FlagSet) {
	fs.DurationVar(&c.refreshMaxAge, "refresh-max-age", oauth.DefaultRefreshMaxAge, "serve's --refresh-max-age: authorizations older than this and the retention are purged")
	fs.DurationVar(&c.eventRetention, "event-retention", defaultEventRetention, "serve's --event-retention: events older than this are purged")
	fs.DurationVar(&c.auditRetention, "audit-retention", defaultAuditRetention, "serve's --audit-retention: entries of the records' history older than this are purged")
}

// check requires a positive --refresh-max-age, --event-retention and
// --audit-retention.
func (c *purgeCmd) check() error {
	if c.refreshMaxAge <= 0 {
		return fmt.Errorf("--refresh-max-age must be positive, not %v", c.refreshMaxAge)
	}
	if c.eventRetention <= 0 {
		return fmt.Errorf("--event-retention must be positive, not %v", c.eventRetention)
	}
	if c.auditRetention <= 0 {
		return fmt.Errorf("--audit-retention must be positive, not %v", c.auditRetention)
	}
	return nil
}

// exec purges once and returns the counts of what it deleted (purged).
func (c *purgeCmd) exec(ctx context.Context, db *sql.DB, d query.Dialect) (any, error) {
	srv := adminOAuthServer(db, d)
	srv.RefreshMaxAge = c.refreshMaxAge
	res, err := purge(ctx, srv, apiPurge{&resource.Registry{DB: db, Dialect: d}, c.eventRetention, c.auditRetention})
	if err != nil {
		return nil, err
	}
	return res, nil
}

// checkPurgeInterval returns an error for a negative --purge-interval.
func checkPurgeInterval(d time.Duration) error {
	if d < 0 {
		return errors.New("--purge-interval must not be negative (0 disables the purge)")
	}
	return nil
}
