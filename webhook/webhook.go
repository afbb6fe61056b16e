package webhook

import (
	"context"
	"database/sql"
	"embed"
	"fmt"
	"time"

	sq "github.com/Masterminds/squirrel"

	"github.com/waybillhq/waybill/internal/migrate"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/resource"
)

//go:embed migrations
var migrations embed.FS

// Migrate creates the tables of endpoints and deliveries in db (it records
// its versions in the table waybill_webhook_migrations), and the table of
// idempotency keys that the API shares with the resources
// (resource.Registry.Migrate). The events tables (events.Migrate) must
// exist too.
func Migrate(ctx context.Context, db *sql.DB, d query.Dialect) error {
	if _, err := migrate.Apply(ctx, db, d, migrations, "migrations/"+d.String(), "waybill_webhook_migrations"); err != nil {
		return fmt.Errorf("webhook: migrate: %w", err)
	}
	return (&resource.Registry{DB: db, Dialect: d}).Migrate(ctx)
}

// Sealer encrypts the signing secrets of endpoints at rest. An
// *oauth.Sealer is one. additionalData binds a sealed secret to its
// endpoint; keyID names the key that sealed it.
type Sealer interface {
	Seal(plaintext, additionalData []byte) (sealed []byte, keyID string)
	Open(sealed, additionalData []byte, keyID string) ([]byte, error)
}

// PurgeDeliveries deletes the deliveries that ended (delivered, or failed
// for good) before before, with their attempts, and returns how many it
// deleted. A server runs it with the events' retention, so that the
// history of deliveries lasts as long as the events it delivered; pending
// deliveries stay, whatever their age.
func PurgeDeliveries(ctx context.Context, db *sql.DB, d query.Dialect, before time.Time) (int64, error) {
	text, args, err := d.SQL(sq.Delete("waybill_webhook_deliveries").
		Where("status IN ('delivered', 'failed') AND updated_at < ?", d.Timestamp(before)))
	if err != nil {
		return 0, err
	}
	res, err := db.ExecContext(ctx, text, args...)
	if err != nil {
		return 0, fmt.Errorf("webhook: purge deliveries: %w", err)
	}
	return res.RowsAffected()
}
