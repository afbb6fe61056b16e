package webhook

import (
	"context"
	"fmt"
	"time"

	"github.com/waybillhq/waybill/query"
)

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
