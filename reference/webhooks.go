package main

import (
	"context"
	"log/slog"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"

	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/resource"
	"github.com/waybillhq/waybill/webhook"
)

// newWebhookAPI returns the webhook endpoints API of api's organizations,
// on api's database, behind its tokens and middleware. sealer (nil: none)
// encrypts the endpoints' signing secrets; allowPrivate lets endpoints be
// at private and loopback addresses.
func newWebhookAPI(api *resource.Registry, sealer *oauth.Sealer, allowPrivate bool) *webhook.API {
	a := &webhook.API{Registry: api, Guard: webhook.Guard{AllowPrivate: allowPrivate}, Audit: true}
	if sealer != nil { // a nil *oauth.Sealer in the interface would not read as none
		a.Sealer = sealer
	}
	return a
}

// defaultWebhookTimeout is the default of --webhook-timeout.
const defaultWebhookTimeout = 10 * time.Second

// leasesPerTimeout is how many attempt timeouts a replica's claim of a
// delivery lasts: when the replica dies mid-delivery, another takes the
// delivery after this long.
const leasesPerTimeout = 6

// The defaults of --webhook-max-attempts and --webhook-backoff.
const (
	defaultWebhookMaxAttempts = 10
	defaultWebhookBackoff     = webhook.DefaultRetryDelay
)

// retrySchedule is the retry schedule of webhook deliveries: how many
// attempts a delivery gets, and the delay before the first retry (each
// next one 4 times longer, capped at 10 hours).
type retrySchedule struct {
	maxAttempts int
	firstDelay  time.Duration
}

// newDispatcher returns the dispatcher of the webhooks of api's database,
// each attempt bounded by timeout, retried on schedule, reporting to m
// (when not nil).
func newDispatcher(api *resource.Registry, sealer *oauth.Sealer, allowPrivate bool, timeout time.Duration, schedule retrySchedule, m *metrics, logger *slog.Logger) *webhook.Dispatcher {
	d := &webhook.Dispatcher{DB: api.DB, Dialect: api.Dialect, Guard: webhook.Guard{AllowPrivate: allowPrivate}, Audit: true, Branches: api.Branches, Logger: logger,
		Timeout: timeout, Lease: leasesPerTimeout * timeout, MaxAttempts: schedule.maxAttempts, RetryDelay: schedule.firstDelay}
	if ps := api.PathPrefixes(); len(ps) > 0 {
		d.PathPrefix = ps[0]
	}
	if sealer != nil {
		d.Sealer = sealer
	}
	if m != nil {
		d.Observe = func(o webhook.Outcome) { m.webhookAttempts.WithLabelValues(o.String()).Inc() }
	}
	return d
}

// startDispatcher runs d in the background until stop is called, which
// waits for the attempts in flight (each bounded by the dispatcher's
// timeout). Every write through api wakes it, so that a webhook leaves
// within milliseconds of its commit. With m, it also keeps the figures of
// the deliveries for /metrics (see webhookCollector).
func startDispatcher(ctx context.Context, d *webhook.Dispatcher, api *resource.Registry, m *metrics, logger *slog.Logger) (stop func()) {
	api.AfterCommit = func(*resource.Change) { d.Wake() }
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		if err := d.Run(ctx); err != nil {
			logger.Error("webhook dispatcher stopped", "error", err.Error())
		}
	})
	if m != nil {
		c := &webhookCollector{d: d, logger: logger}
		m.registry.MustRegister(c)
		wg.Go(func() { c.refresh(ctx) })
	}
	return func() {
		cancel()
		wg.Wait()
	}
}

// webhookCollector reports the figures of the deliveries:
//
//	waybill_webhook_deliveries_pending          deliveries waiting for an attempt
//	waybill_webhook_deliveries_failed           deliveries that failed for good
//	waybill_webhook_oldest_pending_seconds      age of the oldest pending delivery
//	waybill_events_feed_lag_seconds             age of the oldest event not yet fanned out to endpoints
//
// It asks the database every statsInterval in the background, never while
// a scrape waits: /metrics answers at once however slow the database is.
// Until a first answer, and while the last one is older than three
// intervals (the database does not answer), it reports none of them
// rather than stale figures.
type webhookCollector struct {
	d      *webhook.Dispatcher
	logger *slog.Logger

	mu    sync.Mutex
	stats webhook.Stats
	at    time.Time // when stats were read; zero: never
}

var (
	descPending = prometheus.NewDesc("waybill_webhook_deliveries_pending", "Webhook deliveries waiting for their next attempt.", nil, nil)
	descFailed  = prometheus.NewDesc("waybill_webhook_deliveries_failed", "Webhook deliveries that failed every attempt (kept until the retention purges them).", nil, nil)
	descOldest  = prometheus.NewDesc("waybill_webhook_oldest_pending_seconds", "Age of the oldest webhook delivery waiting for an attempt; 0 when none waits.", nil, nil)
	descLag     = prometheus.NewDesc("waybill_events_feed_lag_seconds", "Age of the oldest committed event not yet turned into webhook deliveries; 0 when caught up.", nil, nil)
)

// How often the figures are read, and how long one reading may take.
const (
	statsInterval = 10 * time.Second
	statsTimeout  = 3 * time.Second
)

// refresh reads the figures now and every statsInterval until ctx is done.
func (c *webhookCollector) refresh(ctx context.Context) {
	tick := time.NewTicker(statsInterval)
	defer tick.Stop()
	for {
		readCtx, cancel := context.WithTimeout(ctx, statsTimeout)
		s, err := c.d.Stats(readCtx)
		cancel()
		switch {
		case err == nil:
			c.mu.Lock()
			c.stats, c.at = s, time.Now()
			c.mu.Unlock()
		case ctx.Err() == nil:
			c.logger.Warn("metrics: webhook figures", "error", err.Error())
		}
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
		}
	}
}

// Describe implements prometheus.Collector.
func (c *webhookCollector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descPending
	ch <- descFailed
	ch <- descOldest
	ch <- descLag
}

// Collect implements prometheus.Collector.
func (c *webhookCollector) Collect(ch chan<- prometheus.Metric) {
	c.mu.Lock()
	s, at := c.stats, c.at
	c.mu.Unlock()
	if at.IsZero() || time.Since(at) > 3*statsInterval {
		return
	}
	ch <- prometheus.MustNewConstMetric(descPending, prometheus.GaugeValue, float64(s.Pending))
	ch <- prometheus.MustNewConstMetric(descFailed, prometheus.GaugeValue, float64(s.Failed))
	ch <- prometheus.MustNewConstMetric(descOldest, prometheus.GaugeValue, s.OldestPending.Seconds())
	ch <- prometheus.MustNewConstMetric(descLag, prometheus.GaugeValue, s.FeedLag.Seconds())
}
