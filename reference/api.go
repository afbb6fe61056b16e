package main

import (
	"database/sql"

	"github.com/waybillhq/waybill/oauth/bearer"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/resource"
)

// newAPI returns the registry of the fifteen resources of the transport
// management API over db. Access tokens are checked by verifier, which
// also refuses the tokens of revoked refresh families.
func newAPI(db *sql.DB, d query.Dialect, verifier *bearer.Verifier) (*resource.Registry, error) {
	api := &resource.Registry{
		DB:       db,
		Dialect:  d,
		Verifier: verifier,
		Branches: newBranches(db),
	}
	if err := api.Register(resources()...); err != nil {
		return nil, err
	}
	return api, nil
}
