package main

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/oauth/bearer"
	"github.com/waybillhq/waybill/resource"
	"github.com/waybillhq/waybill/resource/resourcetest"
	"github.com/waybillhq/waybill/tenancy"
)

// TestResourcesConform runs the conformance suite of package resourcetest
// over every resource of the API, on each database.
func TestResourcesConform(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			c := rtConfig(t, b)
			for _, r := range c.Registry.Resources() {
				t.Run(r.Name, func(t *testing.T) { resourcetest.TestResource(t, c, r) })
			}
		})
	}
}

// rtConfig returns the suite's configuration over a new database of the
// backend, seeded with two organizations of two branches each and the demo
// records of every resource.
func rtConfig(t *testing.T, b backend) resourcetest.Config {
	t.Helper()
	ctx := context.Background()
	db, dialect, _, err := openAndMigrate(ctx, b.url(t), defaultDBMaxConns)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	seed := uint64(time.Now().UnixNano())
	alpha, beta := seedTenant(t, db, dialect, "Alpha", seed), seedTenant(t, db, dialect, "Beta", seed+1)

	store := newOAuthStore(db, dialect)
	key, err := store.SigningKey(ctx)
	require.NoError(t, err)
	keys, err := bearer.NewKeySet(key)
	require.NoError(t, err)
	const issuer = "https://rt.test"
	api, err := newAPI(db, dialect, &bearer.Verifier{Keys: keys, Issuer: issuer}, testLogger(t))
	require.NoError(t, err)
	srv := newHandler(db, newOAuthServer(db, store, keys, issuer, testLogger(t)), api)
	return resourcetest.Config{
		Registry: api, Handler: srv, Keys: keys, Issuer: issuer,
		Organization: alpha.org, Branch: alpha.branches[0], SiblingBranch: alpha.branches[1],
		OtherOrganization: beta.org, OtherBranch: beta.branches[0],
		Record: func(t testing.TB, r *resource.Resource, in resourcetest.Tenant) string {
			return rtRecord(t, db, r, in)
		},
	}
}

// rtRecord returns the id of a seeded record of the resource in the
// tenant: for branch and branch-or-null resources, one of the branch.
func rtRecord(t testing.TB, db *sql.DB, r *resource.Resource, in resourcetest.Tenant) string {
	t.Helper()
	table := r.Table
	if table == "" {
		table = r.Name
	}
	branch := "NULL"
	if r.ScopeType != tenancy.Organization {
		branch = "branch_id"
	}
	rows, err := db.Query("SELECT id, organization_id, " + branch + " FROM " + table + " ORDER BY id")
	require.NoError(t, err)
	defer rows.Close()
	for rows.Next() {
		var id, org string
		var br sql.NullString
		require.NoError(t, rows.Scan(&id, &org, &br))
		if org == in.OrganizationID && br.String == in.BranchID {
			return id
		}
	}
	require.NoError(t, rows.Err())
	t.Fatalf("the seed has no record of %s in %+v", r.Name, in)
	return ""
}
