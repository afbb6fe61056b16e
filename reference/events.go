package main

import (
	"context"
	"time"

	"github.com/waybillhq/waybill/events"
	"github.com/waybillhq/waybill/resource"
	"github.com/waybillhq/waybill/webhook"
)

// defaultEventRetention is the default of --event-retention: how long the
// change feed keeps events.
const defaultEventRetention = 7 * 24 * time.Hour

// defaultAuditRetention is the default of --audit-retention: how long the
// history of records is kept, independently of the change feed's events.
const defaultAuditRetention = 400 * 24 * time.Hour

// newFeed returns the change feed of api's resources, and of the events
// the webhooks append (webhook_endpoint.disabled), on api's database,
// behind its tokens and middleware.
func newFeed(api *resource.Registry) *events.Feed {
	return &events.Feed{Registry: api, Kinds: webhook.EventKinds()}
}

// apiPurge is what the purge deletes of the API: the expired idempotency
// keys of api, the events and ended webhook deliveries older than
// retention, and the entries of the records' history older than
// auditRetention.
type apiPurge struct {
	api            *resource.Registry
	retention      time.Duration
	auditRetention time.Duration
}

// PurgeHistory deletes the entries of the records' history older than the
// audit retention.
func (p apiPurge) PurgeHistory(ctx context.Context) (int64, error) {
	return (&resource.SQLHistory{Dialect: p.api.Dialect}).Purge(ctx, p.api.DB, time.Now().Add(-p.auditRetention))
}

// PurgeIdempotencyKeys deletes the expired idempotency keys.
func (p apiPurge) PurgeIdempotencyKeys(ctx context.Context) (int64, error) {
	return p.api.PurgeIdempotencyKeys(ctx)
}

// PurgeEvents deletes the events older than the retention.
func (p apiPurge) PurgeEvents(ctx context.Context) (int64, error) {
	return newFeed(p.api).Purge(ctx, time.Now().Add(-p.retention))
}

// PurgeDeliveries deletes the webhook deliveries that ended before the
// retention, with their attempts.
func (p apiPurge) PurgeDeliveries(ctx context.Context) (int64, error) {
	return (&webhook.API{Registry: p.api}).Purge(ctx, time.Now().Add(-p.retention))
}
