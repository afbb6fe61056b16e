package webhook

import (
	"context"
	"embed"
	"fmt"
	"time"

	sq "github.com/Masterminds/squirrel"

	"github.com/waybillhq/waybill/audit/auditdb"
	"github.com/waybillhq/waybill/internal/eventstore"
	"github.com/waybillhq/waybill/internal/migrate"
	"github.com/waybillhq/waybill/query/sqlbuild"
)

//go:embed migrations
var migrations embed.FS

// Migrate creates what the endpoints API and the dispatcher need in the
// Registry's database: the tables of endpoints and deliveries (it records
// their versions in the table waybill_webhook_migrations), those of the
// events they deliver, and the table of idempotency keys that the API
// shares with the resources (resource.Registry.Migrate).
func (a *API) Migrate(ctx context.Context) error {
	db, d := a.Registry.DB, a.Registry.Dialect
	if err := eventstore.Migrate(ctx, db, d); err != nil {
		return err
	}
	if _, err := migrate.Apply(ctx, db, d, migrations, "migrations/"+d.String(), "waybill_webhook_migrations"); err != nil {
		return fmt.Errorf("webhook: migrate: %w", err)
	}
	if err := auditdb.Migrate(ctx, db, d); err != nil {
		return fmt.Errorf("webhook: %w", err)
	}
	return a.Registry.Migrate(ctx)
}

// Sealer encrypts the signing secrets of endpoints at rest. An
// *oauth.Sealer is one. additionalData binds a sealed secret to its
// endpoint; keyID names the key that sealed it.
type Sealer interface {
	Seal(plaintext, additionalData []byte) (sealed []byte, keyID string)
	Open(sealed, additionalData []byte, keyID string) ([]byte, error)
}

// Purge deletes the deliveries that ended (delivered, or failed for good)
// before before, with their attempts, and returns how many it deleted. A
// server runs it with the events' retention, so that the history of
// deliveries lasts as long as the events it delivered; pending deliveries
// stay, whatever their age. It also erases the previous secrets of
// endpoints whose grace after a rotation is over (the dispatcher no longer
// uses them from the end of the grace on).
func (a *API) Purge(ctx context.Context, before time.Time) (int64, error) {
	d := a.Registry.Dialect
	text, args, err := sqlbuild.SQL(d, sq.Update(endpointsTable).
		SetMap(sq.Eq{"previous_secret": nil, "previous_secret_key_id": "", "previous_secret_until": nil}).
		Where("previous_secret_until IS NOT NULL AND previous_secret_until <= ?", d.Timestamp(a.now())))
	if err != nil {
		return 0, err
	}
	if _, err := a.Registry.DB.ExecContext(ctx, text, args...); err != nil {
		return 0, fmt.Errorf("webhook: purge previous secrets: %w", err)
	}
	text, args, err = sqlbuild.SQL(d, sq.Delete(deliveriesTable).
		Where("status IN ('delivered', 'failed') AND updated_at < ?", d.Timestamp(before)))
	if err != nil {
		return 0, err
	}
	res, err := a.Registry.DB.ExecContext(ctx, text, args...)
	if err != nil {
		return 0, fmt.Errorf("webhook: purge deliveries: %w", err)
	}
	return res.RowsAffected()
}
