package events

import (
	"context"
	"time"

	"github.com/waybillhq/waybill/internal/eventstore"
)

// Migrate creates the tables of the events in the Registry's database (it
// records its versions in the table waybill_events_migrations). Call it at
// start-up, before the first write through a registry whose Outbox is an
// Outbox.
func (f *Feed) Migrate(ctx context.Context) error {
	return eventstore.Migrate(ctx, f.Registry.DB, f.Registry.Dialect)
}

// Purge removes the events that happened before before, of every
// organization, and returns how many it removed. A server runs it now and
// then with its retention; a feed cursor from before what Purge removed is
// answered 410 cursor_expired.
func (f *Feed) Purge(ctx context.Context, before time.Time) (int64, error) {
	return eventstore.Purge(ctx, f.Registry.DB, f.Registry.Dialect, before)
}
