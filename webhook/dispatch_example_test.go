package webhook_test

import (
	"context"
	"database/sql"
	"log/slog"
	"time"

	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/webhook"
)

// A server runs one Dispatcher per replica on the shared database, wakes it
// after each write that commits, and reads its figures for metrics.
func ExampleDispatcher() {
	run := func(ctx context.Context, db *sql.DB, sealer webhook.Sealer) error {
		d := &webhook.Dispatcher{
			DB:      db,
			Dialect: query.Postgres,
			Sealer:  sealer,
			Logger:  slog.Default(),
			Observe: func(o webhook.Outcome) {
				// Count deliveries by outcome, e.g. in a metrics counter.
				_ = o.String()
			},
		}
		go func() {
			// After a write commits: d.Wake(). For /metrics:
			for range time.Tick(15 * time.Second) {
				if st, err := d.Stats(ctx); err == nil {
					_ = st.Pending
				}
			}
		}()
		return d.Run(ctx) // until ctx is done
	}
	_ = run
}
