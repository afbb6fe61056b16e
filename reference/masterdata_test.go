package main

import (
	"maps"
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestMasterData checks that "admin org create" seeds the reference lists
// of the new organization, on both databases, and that seeding again
// changes nothing.
func TestMasterData(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			url := b.url(t)
			org := createID(t, "admin", "org", "create", "--name", "Acme Freight", "--database-url", url)
			other := createID(t, "admin", "org", "create", "--name", "Zeta", "--database-url", url)

			db, _, err := openDB(t.Context(), url, defaultDBMaxConns)
			require.NoError(t, err)
			t.Cleanup(func() { _ = db.Close() })
			for _, id := range []string{org, other} {
				assert.Equal(t, len(masterData), count(t, db, "SELECT count(*) FROM master_data WHERE organization_id = $1", id))
			}

			got := map[string][]string{}
			rows, err := db.QueryContext(t.Context(), "SELECT category, code FROM master_data WHERE organization_id = $1", org)
			require.NoError(t, err)
			for rows.Next() {
				var category, code string
				require.NoError(t, rows.Scan(&category, &code))
				got[category] = append(got[category], code)
			}
			require.NoError(t, rows.Err())
			assert.ElementsMatch(t, masterDataCategories, slices.Collect(maps.Keys(got)))
			assert.ElementsMatch(t, vehicleTypes, got["vehicle_type"], "the vehicle types are those of vehicles.vehicle_type")
			assert.Contains(t, got["currency"], "EUR", "the default currency of invoices and tariffs")
			assert.Contains(t, got["unit"], "pcs", "the default unit of items")

			require.NoError(t, seedMasterData(t.Context(), db, org))
			assert.Equal(t, len(masterData), count(t, db, "SELECT count(*) FROM master_data WHERE organization_id = $1", org), "seeding again adds nothing")
		})
	}
}

func TestMasterDataTable(t *testing.T) {
	t.Parallel()
	seen := map[string]bool{}
	for _, e := range masterData {
		key := e.category + "/" + e.code
		assert.False(t, seen[key], "%s twice", key)
		seen[key] = true
		assert.Contains(t, masterDataCategories, e.category)
		assert.NotEmpty(t, e.label, key)
		switch e.category {
		case "currency":
			assert.Regexp(t, currencyPattern, e.code)
		case "country":
			assert.Regexp(t, countryPattern, e.code)
		}
	}
}
