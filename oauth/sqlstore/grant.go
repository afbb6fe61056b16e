package sqlstore

import (
	"context"
	"fmt"
	"time"

	"github.com/waybillhq/waybill/oauth"
)

// SaveGrant records a consent. Every call adds a record, since consent is
// asked at every authorization; none is a duplicate. A zero CreatedAt is
// set to the current time.
func (s *Store) SaveGrant(ctx context.Context, g *oauth.Grant) error {
	if g.CreatedAt.IsZero() {
		g.CreatedAt = time.Now().UTC().Truncate(time.Microsecond)
	}
	return s.audited(ctx, func(tx *tx) error { return insertGrant(ctx, tx, g) })
}

// insertGrant inserts the grant.
func insertGrant(ctx context.Context, tx *tx, g *oauth.Grant) error {
	_, err := tx.ExecContext(ctx, `
		INSERT INTO oauth_grants (client_id, user_id, organization_id, scopes, created_at)
		VALUES ($1, $2, $3, $4, $5)`,
		g.ClientID, g.UserID, g.OrganizationID, listArg(g.Scopes), tx.timeArg(g.CreatedAt),
	)
	if err != nil {
		return fmt.Errorf("sqlstore: save grant: %w", err)
	}
	return nil
}
