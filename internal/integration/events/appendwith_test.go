package events_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/events"
	"github.com/waybillhq/waybill/internal/eventstore"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/resource"
	"github.com/waybillhq/waybill/tenancy"
)

// AppendWith stores a write's event and runs the other statement it is
// given in the same transaction, with its placeholders numbered from where
// it is told: one statement on PostgreSQL, two on SQLite. A rollback
// undoes both.
func TestAppendWith(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			ctx := context.Background()
			db := b.open(t)
			require.NoError(t, eventstore.Migrate(ctx, db, b.dialect))
			_, err := db.Exec(`CREATE TABLE marks (note TEXT NOT NULL, n INTEGER NOT NULL)`)
			require.NoError(t, err)
			out := &events.Outbox{Dialect: b.dialect}
			var _ resource.HistoryOutbox = out
			change := func(id string) *resource.Change {
				return &resource.Change{Resource: testResources()[0], Operation: resource.Created, ID: id, BranchID: a1,
					Tenant: tenancy.Tenant{OrganizationID: orgA}, Path: "/v1/" + a1 + "/accounts/" + id,
					Record: []byte(`{"id":"` + id + `","name":"Acme"}`), Changed: []string{"name"}, Time: time.Now()}
			}
			with := func(first int) (string, []any) {
				p := func(n int) string {
					if b.dialect == query.Postgres {
						return "$" + strconv.Itoa(n)
					}
					return "?"
				}
				return "INSERT INTO marks (note, n) VALUES (" + p(first) + ", " + p(first+1) + ")", []any{"written", 7}
			}
			for _, commit := range []bool{true, false} {
				tx, err := db.BeginTx(ctx, nil)
				require.NoError(t, err)
				require.NoError(t, out.AppendWith(ctx, tx, change("0a000000-0000-4000-8000-0000000000c"+strconv.FormatBool(commit)[:1]), with))
				if commit {
					require.NoError(t, tx.Commit())
				} else {
					require.NoError(t, tx.Rollback())
				}
			}
			var marks, evs int
			require.NoError(t, db.QueryRow(`SELECT count(*) FROM marks WHERE note = 'written' AND n = 7`).Scan(&marks))
			require.NoError(t, db.QueryRow(`SELECT count(*) FROM `+eventstore.Table).Scan(&evs))
			assert.Equal(t, 1, marks, "the statement ran with its arguments, once: the rolled back one is gone")
			assert.Equal(t, 1, evs, "the event of the committed write alone")
		})
	}
}
