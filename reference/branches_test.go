package main

import (
	"slices"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/tenancy"
)

func TestBranches(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			db := openTestDB(t, b)
			f := newTenantFixture(t, db)
			br := newBranches(db)

			org, err := br.Organization(t.Context(), f.north)
			require.NoError(t, err)
			assert.Equal(t, f.org, org)
			org, err = br.Organization(t.Context(), f.other)
			require.NoError(t, err)
			assert.Equal(t, f.otherOrg, org)
			for _, id := range []string{newID(), f.org, "not-a-uuid", ""} {
				_, err := br.Organization(t.Context(), id)
				assert.ErrorIs(t, err, tenancy.ErrNoBranch, id)
			}

			got, err := br.List(t.Context(), f.org)
			require.NoError(t, err)
			want := []string{f.north, f.south}
			slices.Sort(want)
			assert.Equal(t, want, got)

			// No cache: a new branch is known at once.
			late := newID()
			mustExec(t, db, "INSERT INTO branches (id, organization_id, name) VALUES ($1, $2, 'Late')", late, f.org)
			org, err = br.Organization(t.Context(), late)
			require.NoError(t, err)
			assert.Equal(t, f.org, org)
			got, err = br.List(t.Context(), f.org)
			require.NoError(t, err)
			assert.Len(t, got, 3)
		})
	}
}
