// Package audit_test tests package audit/auditdb on PostgreSQL and SQLite.
package audit_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/audit"
	"github.com/waybillhq/waybill/audit/auditdb"
	"github.com/waybillhq/waybill/internal/testdb"
	"github.com/waybillhq/waybill/query"
)

func TestMain(m *testing.M) { testdb.Main(m) }

var backends = []struct {
	name    string
	dialect query.Dialect
	open    func(testing.TB) *sql.DB
}{
	{"postgres", query.Postgres, testdb.Postgres},
	{"sqlite", query.SQLite, testdb.SQLite},
}

const (
	orgA = "0a000000-0000-4000-8000-00000000000a"
	orgB = "0b000000-0000-4000-8000-00000000000b"
)

// An entry is appended in the caller's transaction: rolled back with it,
// kept with its commit, exactly as given; an organization reads its own
// entries and the installation's, oldest first, a page at a time.
func TestAppendAndList(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := b.open(t)
			require.NoError(t, auditdb.Migrate(ctx, db, b.dialect))
			require.NoError(t, auditdb.Migrate(ctx, db, b.dialect), "a second Migrate")
			at := time.Date(2026, 11, 27, 9, 30, 0, 123456789, time.FixedZone("CET", 3600))

			// A rolled-back action leaves no entry.
			tx, err := db.BeginTx(ctx, nil)
			require.NoError(t, err)
			require.NoError(t, auditdb.Append(ctx, tx, b.dialect, &audit.Entry{OrganizationID: orgA, Action: audit.AppCreated, Actor: audit.Actor{Kind: audit.ActorCLI}}))
			require.NoError(t, tx.Rollback())

			want := &audit.Entry{
				Time: at, OrganizationID: orgA, Action: audit.ConsentGranted,
				Actor: audit.Actor{Kind: audit.ActorUser, ID: "user-1"}, Target: audit.Target{Kind: "app", ID: "client-1"},
				RemoteAddr: "203.0.113.9", Details: map[string]any{"scopes": []any{"svc:orders:read"}, "n": float64(2)},
			}
			tx, err = db.BeginTx(ctx, nil)
			require.NoError(t, err)
			require.NoError(t, auditdb.Append(ctx, tx, b.dialect, want))
			require.NoError(t, tx.Commit())
			require.NotEmpty(t, want.ID, "Append sets the id")
			for i := range 5 {
				org := []string{orgA, orgB, ""}[i%3]
				require.NoError(t, auditdb.Append(ctx, db, b.dialect, &audit.Entry{OrganizationID: org, Action: audit.AppSecretRotated,
					Actor: audit.Actor{Kind: audit.ActorApp, ID: fmt.Sprint("app-", i)}}))
			}

			log := &auditdb.Log{DB: db, Dialect: b.dialect}
			got, next, err := log.List(ctx, orgA, "", 0)
			require.NoError(t, err)
			assert.Empty(t, next, "a short page is the last")
			require.Len(t, got, 4, "orgA's 3 entries and the installation's 1")
			first := got[0]
			assert.Equal(t, want.ID, first.ID)
			assert.True(t, at.Truncate(time.Microsecond).Equal(first.Time), "%v", first.Time)
			assert.Equal(t, time.UTC, first.Time.Location())
			assert.Equal(t, want.Actor, first.Actor)
			assert.Equal(t, want.Target, first.Target)
			assert.Equal(t, want.RemoteAddr, first.RemoteAddr)
			assert.Equal(t, want.Details, first.Details)
			var actors []string
			for _, e := range got[1:] {
				actors = append(actors, e.Actor.ID)
			}
			assert.Equal(t, []string{"app-0", "app-2", "app-3"}, actors, "oldest first, another organization's left out")
			assert.Equal(t, map[string]any{}, got[1].Details, "no details is {}")

			// Pages of two.
			var paged []string
			for after := ""; ; {
				page, next, err := log.List(ctx, orgA, after, 2)
				require.NoError(t, err)
				for _, e := range page {
					paged = append(paged, e.ID)
				}
				if next == "" {
					break
				}
				after = next
			}
			require.Len(t, paged, 4)
			assert.Equal(t, got[3].ID, paged[3])

			for _, bad := range []string{"x", "-3", "0", "1e3"} {
				_, _, err := log.List(ctx, orgA, bad, 0)
				assert.True(t, errors.Is(err, audit.ErrBadCursor), "%q: %v", bad, err)
			}
			for _, limit := range []int{-1, audit.MaxPageSize + 1} {
				_, _, err := log.List(ctx, orgA, "", limit)
				assert.Error(t, err, "limit %d", limit)
			}
			for _, bad := range []*audit.Entry{{Actor: audit.Actor{Kind: audit.ActorCLI}}, {Action: audit.AppCreated}} {
				assert.Error(t, auditdb.Append(ctx, db, b.dialect, bad))
			}
		})
	}
}
