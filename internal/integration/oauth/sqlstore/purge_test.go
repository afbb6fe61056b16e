package sqlstore_test

import (
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/oauth/oauthtest"
	"github.com/waybillhq/waybill/oauth/sqlstore"
)

func TestPurgerConformance(t *testing.T) {
	for _, dc := range dialects {
		t.Run(dc.name, func(t *testing.T) {
			t.Parallel()
			oauthtest.TestPurger(t, func(t *testing.T) oauthtest.PurgeStore {
				return newStore(t, dc.open(t), dc.dialect)
			})
		})
	}
}

// puNow is the time the purge tests of this file run at.
var puNow = time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)

// puBefore purges what expired before puNow.
var puBefore = oauth.PurgeBefore{Expired: puNow, Authorized: puNow.Add(-90 * 24 * time.Hour)}

// puBacklog saves n expired codes, n expired refresh tokens (each of a
// family of its own) and n revoked families without tokens in s.
func puBacklog(t *testing.T, s *sqlstore.Store, n int) {
	t.Helper()
	for i := range n {
		id := puID(t, "backlog", i)
		require.NoError(t, s.SaveCode(t.Context(), &oauth.Code{
			Hash: []byte("code-" + id), ClientID: "c", UserID: "u", OrganizationID: "o",
			ExpiresAt: puNow.Add(-time.Hour),
		}))
		require.NoError(t, s.SaveRefreshToken(t.Context(), &oauth.RefreshToken{
			Hash: []byte("token-" + id), FamilyID: "family-" + id, ClientID: "c", UserID: "u", OrganizationID: "o",
			ExpiresAt: puNow.Add(-time.Hour), AuthorizedAt: puNow.Add(-48 * time.Hour),
		}))
		require.NoError(t, s.RevokeFamily(t.Context(), "revoked-"+id, puNow.Add(-time.Hour)))
	}
}

// puID returns an id unique to the test, the prefix and i.
func puID(t *testing.T, prefix string, i int) string {
	return t.Name() + "/" + prefix + "/" + strconv.Itoa(i)
}

// A backlog larger than a batch goes in several statements, each counted.
func TestPurgeBatches(t *testing.T) {
	for _, dc := range dialects {
		t.Run(dc.name, func(t *testing.T) {
			t.Parallel()
			for _, batch := range []int{1, 4, 7, 100} {
				s := newStore(t, dc.open(t), dc.dialect)
				puBacklog(t, s, 7)
				res, err := s.WithPurgeBatch(batch).Purge(t.Context(), puBefore)
				require.NoError(t, err)
				assert.Equal(t, oauth.PurgeResult{Codes: 7, RefreshTokens: 7, Families: 7}, res, "batch %d", batch)
				res, err = s.Purge(t.Context(), puBefore)
				require.NoError(t, err)
				assert.Equal(t, oauth.PurgeResult{}, res, "batch %d", batch)
			}
		})
	}
}

// Replicas, each with a pool of its own on one database, purge at once in
// small batches: each record is deleted, and counted, once.
func TestPurgeReplicas(t *testing.T) {
	const replicas, n = 4, 60
	for _, dc := range dialects {
		t.Run(dc.name, func(t *testing.T) {
			t.Parallel()
			dbs := dc.shared(t, replicas)
			stores := make([]*sqlstore.Store, replicas)
			for i, db := range dbs {
				stores[i] = newStore(t, db, dc.dialect)
			}
			puBacklog(t, stores[0], n)
			results := make([]oauth.PurgeResult, replicas)
			var wg sync.WaitGroup
			for i, s := range stores {
				wg.Go(func() {
					var err error
					results[i], err = s.WithPurgeBatch(5).Purge(t.Context(), puBefore)
					assert.NoError(t, err)
				})
			}
			wg.Wait()
			var got oauth.PurgeResult
			for _, r := range results {
				got.Codes += r.Codes
				got.RefreshTokens += r.RefreshTokens
				got.Families += r.Families
				got.Grants += r.Grants
			}
			// A replica stops at its first short batch, which a row locked
			// by another may cause: what is left goes at the next purge.
			rest, err := stores[0].Purge(t.Context(), puBefore)
			require.NoError(t, err)
			got.Codes += rest.Codes
			got.RefreshTokens += rest.RefreshTokens
			got.Families += rest.Families
			assert.Equal(t, oauth.PurgeResult{Codes: n, RefreshTokens: n, Families: n}, got)
		})
	}
}
