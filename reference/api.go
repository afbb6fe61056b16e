package main

import (
	"database/sql"
	"log/slog"

	"github.com/waybillhq/waybill/events"
	"github.com/waybillhq/waybill/oauth/bearer"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/resource"
	"github.com/waybillhq/waybill/resource/pgxrows"
	"github.com/waybillhq/waybill/tenancy"
)

// newAPI returns the registry of the fifteen resources of the transport
// management API over db. Access tokens are checked by verifier, which
// also refuses the tokens of revoked refresh families. The requests it
// fails to serve are logged to logger.
func newAPI(db *sql.DB, d query.Dialect, verifier *bearer.Verifier, logger *slog.Logger) (*resource.Registry, error) {
	api := &resource.Registry{
		DB:       db,
		Dialect:  d,
		Verifier: verifier,
		// A branch never moves to another organization: the branch of a
		// path is looked up once, not at every request.
		Branches: tenancy.CachedBranches(newBranches(db), 0),
		Logger:   logger,
		Realm:    realm,
		// Every write appends its events in its transaction: the change
		// feed and the webhooks read them.
		Outbox: &events.Outbox{Dialect: d},
		// ... and the entry of the record's history, kept for
		// --audit-retention and served at .../{id}/history.
		History: &resource.SQLHistory{Dialect: d},
		// Exports read PostgreSQL through pgx's own protocol; on SQLite
		// the reader steps aside for database/sql.
		RowReader: pgxrows.Reader{},
	}
	if verifier != nil {
		api.ResourceMetadata = resourceMetadataURL(verifier.Issuer)
	}
	// Without a CursorKey the registry authenticates cursors with a key
	// derived from the verifier's signing key, so every replica accepts the
	// cursors of the others; a new signing key voids those handed out before.
	if err := api.Register(resources()...); err != nil {
		return nil, err
	}
	return api, nil
}
