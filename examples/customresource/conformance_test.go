package main

import (
	"context"
	"testing"
	"time"

	"github.com/google/uuid"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/oauth/bearer"
	"github.com/waybillhq/waybill/resource"
	"github.com/waybillhq/waybill/resource/resourcetest"
)

// The branches the conformance suite works in, besides the seeded
// development branch: another branch of the development organization, and
// an organization of its own with one branch.
const (
	siblingBranch     = "5eed0000-0000-4000-8000-0000000000b2"
	otherOrganization = "0be00000-0000-4000-8000-0000000000a1"
	otherBranch       = "0be00000-0000-4000-8000-0000000000b1"
)

// TestConformance runs the conformance suite of package resourcetest over
// the inspections resource, on each database.
func TestConformance(t *testing.T) {
	for name, dbs := range backends {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			dsn, _ := dbs(t)
			db, dialect, err := openDB(context.Background(), dsn)
			require.NoError(t, err)
			t.Cleanup(func() { db.Close() })
			for _, b := range [][2]string{{siblingBranch, devOrganization}, {otherBranch, otherOrganization}} {
				_, err := db.Exec("INSERT INTO branches (id, organization_id, name) VALUES ($1, $2, 'Depot')", b[0], b[1])
				require.NoError(t, err)
			}
			keys, err := keySet(testSecret)
			require.NoError(t, err)
			reg, err := newRegistry(db, dialect, &bearer.Verifier{Keys: keys, Issuer: testIssuer})
			require.NoError(t, err)
			c := resourcetest.Config{
				Registry: reg, Keys: keys, Issuer: testIssuer,
				Organization: devOrganization, Branch: devBranch, SiblingBranch: siblingBranch,
				OtherOrganization: otherOrganization, OtherBranch: otherBranch,
				Record: func(t testing.TB, _ *resource.Resource, in resourcetest.Tenant) string {
					id, now := uuid.NewString(), dialect.Timestamp(time.Now())
					_, err := db.Exec(`INSERT INTO inspections (id, organization_id, branch_id, created_at, updated_at, vehicle_plate, inspected_on, result, status)
						VALUES ($1, $2, $3, $4, $5, 'HH-AB 123', '2026-03-14', 'pending', 'scheduled')`, id, in.OrganizationID, in.BranchID, now, now)
					require.NoError(t, err)
					return id
				},
			}
			resourcetest.TestResource(t, c, reg.Resource("inspections"))
		})
	}
}
