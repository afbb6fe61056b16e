package resourcetest_test

import (
	"database/sql"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/oauth/bearer"
	"github.com/waybillhq/waybill/resource"
	"github.com/waybillhq/waybill/resource/resourcetest"
)

// A service proves its resources from its own tests: it hands TestResource
// its registry, the key set its verifier accepts, two organizations with
// their branches, and a function that makes a record of a tenant — here
// an INSERT into the resource's table.
func ExampleTestResource() {
	var (
		reg  *resource.Registry // the service's registry, its resources registered
		keys *bearer.KeySet     // the keys reg.Verifier accepts
		db   *sql.DB            // reg.DB, migrated, with the branches below
	)
	testResources := func(t *testing.T) { // func TestResources(t *testing.T) in a _test.go file
		c := resourcetest.Config{
			Registry: reg, Keys: keys, Issuer: "https://tokens.example.com",
			Organization:      "0a000000-0000-4000-8000-00000000000a",
			Branch:            "0a000000-0000-4000-8000-0000000000a1",
			SiblingBranch:     "0a000000-0000-4000-8000-0000000000a2",
			OtherOrganization: "0b000000-0000-4000-8000-00000000000b",
			OtherBranch:       "0b000000-0000-4000-8000-0000000000b1",
			Record: func(t testing.TB, r *resource.Resource, in resourcetest.Tenant) string {
				id := "6f0c0000-0000-4000-8000-000000000001" // a new id each call
				_, err := db.Exec(`INSERT INTO inspections (id, organization_id, branch_id, created_at, updated_at, vehicle_plate)
					VALUES ($1, $2, $3, now(), now(), 'HH-AB 123')`, id, in.OrganizationID, in.BranchID)
				require.NoError(t, err)
				return id
			},
		}
		for _, r := range reg.Resources() {
			t.Run(r.Name, func(t *testing.T) { resourcetest.TestResource(t, c, r) })
		}
	}
	_ = testResources
}
