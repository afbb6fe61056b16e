package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	"github.com/google/uuid"

	"github.com/waybillhq/waybill/tenancy"
)

// branches answers tenancy's questions about branches from the branches
// table, on every call: it keeps no cache, so a branch is known the moment
// it is created. The API wraps it in tenancy.CachedBranches, which keeps
// the branches found (a branch never moves) and asks again for the others.
type branches struct {
	db *sql.DB
}

var _ tenancy.Branches = (*branches)(nil)

// newBranches returns the branch lookup over db, which migrateDB has
// migrated.
func newBranches(db *sql.DB) *branches {
	return &branches{db: db}
}

// Organization returns the id of the organization that owns the branch
// with branchID, or an error wrapping tenancy.ErrNoBranch when there is no
// such branch (a branchID that is not a UUID names none).
func (b *branches) Organization(ctx context.Context, branchID string) (string, error) {
	id, err := uuid.Parse(branchID)
	if err != nil {
		return "", fmt.Errorf("branch %q: %w", branchID, tenancy.ErrNoBranch)
	}
	var org string
	err = b.db.QueryRowContext(ctx, "SELECT organization_id FROM branches WHERE id = $1", id.String()).Scan(&org)
	if errors.Is(err, sql.ErrNoRows) {
		return "", fmt.Errorf("branch %s: %w", id, tenancy.ErrNoBranch)
	}
	if err != nil {
		return "", fmt.Errorf("look up branch %s: %w", id, err)
	}
	return org, nil
}

// List returns the ids of the branches of the organization with
// organizationID, in ascending order; none for an unknown organization.
func (b *branches) List(ctx context.Context, organizationID string) ([]string, error) {
	return newDirectory(b.db).Branches(ctx, organizationID)
}
