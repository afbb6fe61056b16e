package main

import (
	"database/sql"
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/resource"
	"github.com/waybillhq/waybill/resource/numbering"
	"github.com/waybillhq/waybill/tenancy"
)

// createNumbered runs the create hook of numbering.Hooks in a transaction of its
// own, stores a quotation with the number, and returns the number.
func createNumbered(t *testing.T, db *sql.DB, d query.Dialect, hooks resource.Hooks, tenant tenancy.Tenant, account string) (string, error) {
	w := &resource.Write{Tenant: tenant, Changes: resource.Record{}, Dialect: d, Time: time.Now()}
	err := inTx(t.Context(), db, func(tx *sql.Tx) error {
		if err := hooks.BeforeCreate(t.Context(), tx, w); err != nil {
			return err
		}
		_, err := insertRow(t.Context(), tx, d, "quotations", tenant, true, resource.Record{
			"quotation_number": w.Changes["quotation_number"], "account_id": account,
			"quotation_date": "2026-01-01", "valid_until": "2026-01-31",
		})
		return err
	})
	number, _ := w.Changes["quotation_number"].(string)
	return number, err
}

func TestNumbered(t *testing.T) {
	t.Parallel()
	year := time.Now().UTC().Year()
	want := func(prefix string, n ...int) []string {
		var out []string
		for _, i := range n {
			out = append(out, fmt.Sprintf("%s-%d-%06d", prefix, year, i))
		}
		return out
	}
	quotations := numbering.Hooks("quotation_number", "Q", "quotation")
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			db := openTestDB(t, b)
			f := newTenantFixture(t, db)
			north := tenancy.Tenant{OrganizationID: f.org, BranchID: f.north}
			south := tenancy.Tenant{OrganizationID: f.org, BranchID: f.south}
			northAccount, southAccount := newAccount(t, db, b.dialect, north), newAccount(t, db, b.dialect, south)

			var got []string
			for _, tc := range []struct {
				tenant  tenancy.Tenant
				account string
			}{{north, northAccount}, {north, northAccount}, {south, southAccount}, {north, northAccount}, {south, southAccount}} {
				n, err := createNumbered(t, db, b.dialect, quotations, tc.tenant, tc.account)
				require.NoError(t, err)
				got = append(got, n)
			}
			assert.Equal(t, want("Q", 1, 2, 1, 3, 2), got, "1, 2, 3 per branch")

			// A write that fails gives its number back.
			_, err := createNumbered(t, db, b.dialect, quotations, north, southAccount)
			require.Error(t, err, "an account of another branch")
			n, err := createNumbered(t, db, b.dialect, quotations, north, northAccount)
			require.NoError(t, err)
			assert.Equal(t, want("Q", 4), []string{n})

			// Kinds count apart.
			w := &resource.Write{Tenant: north, Changes: resource.Record{}, Time: time.Now()}
			require.NoError(t, inTx(t.Context(), db, func(tx *sql.Tx) error {
				return numbering.Hooks("order_number", "O", "order").BeforeCreate(t.Context(), tx, w)
			}))
			assert.Equal(t, want("O", 1)[0], w.Changes["order_number"])

			// Years count apart, and next_value is the number to come.
			next, err := numbering.Next(t.Context(), db, f.north, "quotation", year-1)
			require.NoError(t, err)
			assert.EqualValues(t, 1, next)
			var stored int64
			require.NoError(t, db.QueryRowContext(t.Context(),
				"SELECT next_value FROM number_sequences WHERE branch_id = $1 AND kind = 'quotation' AND year = $2", f.north, year).Scan(&stored))
			assert.EqualValues(t, 5, stored)

			// An organization-scoped write has no branch to number in.
			err = inTx(t.Context(), db, func(tx *sql.Tx) error {
				return quotations.BeforeCreate(t.Context(), tx, &resource.Write{Tenant: tenancy.Tenant{OrganizationID: f.org}, Changes: resource.Record{}, Time: time.Now()})
			})
			assert.Error(t, err)
		})
	}
}

// TestNumberedConcurrently takes numbers in 20 concurrent transactions per
// branch on PostgreSQL, where writers do run concurrently: each branch gets
// 1 to 20, each once.
func TestNumberedConcurrently(t *testing.T) {
	t.Parallel()
	const perBranch = 20
	b := backends()[1]
	require.Equal(t, query.Postgres, b.dialect)
	db := openTestDB(t, b)
	f := newTenantFixture(t, db)
	tenants := []tenancy.Tenant{{OrganizationID: f.org, BranchID: f.north}, {OrganizationID: f.org, BranchID: f.south}}
	accounts := []string{newAccount(t, db, b.dialect, tenants[0]), newAccount(t, db, b.dialect, tenants[1])}
	hooks := numbering.Hooks("quotation_number", "Q", "quotation")

	got := make([][]string, len(tenants))
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range tenants {
		for range perBranch {
			wg.Go(func() {
				<-start
				n, err := createNumbered(t, db, b.dialect, hooks, tenants[i], accounts[i])
				assert.NoError(t, err)
				mu.Lock()
				got[i] = append(got[i], n)
				mu.Unlock()
			})
		}
	}
	close(start)
	wg.Wait()

	year := time.Now().UTC().Year()
	var want []string
	for n := 1; n <= perBranch; n++ {
		want = append(want, numbering.Format("Q", year, int64(n)))
	}
	for i := range tenants {
		slices.Sort(got[i])
		assert.Equal(t, want, got[i], "branch %d: every number once", i)
	}
}
