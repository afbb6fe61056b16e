package numbering_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/internal/testdb"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/resource"
	"github.com/waybillhq/waybill/resource/numbering"
	"github.com/waybillhq/waybill/tenancy"
)

func TestMain(m *testing.M) { testdb.Main(m) }

type backend struct {
	name    string
	dialect query.Dialect
	open    func(testing.TB) *sql.DB
}

func backends() []backend {
	return []backend{
		{"sqlite", query.SQLite, testdb.SQLite},
		{"postgres", query.Postgres, testdb.Postgres},
	}
}

// openDB returns a database of b with the counters' table and a table of
// numbered records, whose number must be unique in its branch and whose
// note must not be empty (so that a write can be made to fail after it took its number).
func openDB(t *testing.T, b backend) *sql.DB {
	t.Helper()
	db := b.open(t)
	require.NoError(t, numbering.Migrate(t.Context(), db, b.dialect))
	require.NoError(t, numbering.Migrate(t.Context(), db, b.dialect), "a second Migrate changes nothing")
	_, err := db.ExecContext(t.Context(), `CREATE TABLE records (branch text NOT NULL, number text NOT NULL, note text NOT NULL CHECK (note <> ''), UNIQUE (branch, number))`)
	require.NoError(t, err)
	return db
}

// create runs the create hook of hooks in a transaction of its own, stores
// a record with the number and note, and returns the number.
func create(ctx context.Context, db *sql.DB, hooks resource.Hooks, tenant tenancy.Tenant, note string) (string, error) {
	w := &resource.Write{Tenant: tenant, Changes: resource.Record{}, Time: time.Now()}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return "", err
	}
	defer func() { _ = tx.Rollback() }()
	if err := hooks.BeforeCreate(ctx, tx, w); err != nil {
		return "", err
	}
	number, _ := w.Changes["number"].(string)
	if _, err := tx.ExecContext(ctx, "INSERT INTO records (branch, number, note) VALUES ($1, $2, $3)", tenant.BranchID, number, note); err != nil {
		return number, err
	}
	return number, tx.Commit()
}

func TestHooks(t *testing.T) {
	t.Parallel()
	year := time.Now().UTC().Year()
	want := func(prefix string, n ...int) []string {
		var out []string
		for _, i := range n {
			out = append(out, fmt.Sprintf("%s-%d-%06d", prefix, year, i))
		}
		return out
	}
	const north, south = "0b9a3c1e-0000-4000-8000-000000000001", "0b9a3c1e-0000-4000-8000-000000000002"
	quotations := numbering.Hooks("number", "Q", "quotation")
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			db := openDB(t, b)
			northT := tenancy.Tenant{OrganizationID: "org", BranchID: north}
			southT := tenancy.Tenant{OrganizationID: "org", BranchID: south}

			var got []string
			for _, tenant := range []tenancy.Tenant{northT, northT, southT, northT, southT} {
				n, err := create(t.Context(), db, quotations, tenant, "ok")
				require.NoError(t, err)
				got = append(got, n)
			}
			assert.Equal(t, want("Q", 1, 2, 1, 3, 2), got, "1, 2, 3 per branch")

			// A write that fails gives its number back.
			n, err := create(t.Context(), db, quotations, northT, "")
			require.Error(t, err, "an empty note")
			assert.Equal(t, want("Q", 4)[0], n, "the failed write had taken 4")
			n, err = create(t.Context(), db, quotations, northT, "ok")
			require.NoError(t, err)
			assert.Equal(t, want("Q", 4)[0], n, "and gave it back")

			// Kinds count apart.
			orders := numbering.Hooks("number", "O", "order")
			n, err = create(t.Context(), db, orders, northT, "ok")
			require.NoError(t, err)
			assert.Equal(t, want("O", 1)[0], n)

			// Years count apart, and next_value is the number to come.
			next, err := numbering.Next(t.Context(), db, north, "quotation", year-1)
			require.NoError(t, err)
			assert.EqualValues(t, 1, next)
			var stored int64
			require.NoError(t, db.QueryRowContext(t.Context(),
				"SELECT next_value FROM number_sequences WHERE branch_id = $1 AND kind = 'quotation' AND year = $2", north, year).Scan(&stored))
			assert.EqualValues(t, 5, stored)

			// An organization-scoped write has no branch to number in.
			_, err = create(t.Context(), db, quotations, tenancy.Tenant{OrganizationID: "org"}, "ok")
			require.Error(t, err)
			assert.Equal(t, http.StatusInternalServerError, apierrors.From(err).Status)
			assert.Contains(t, errors.Unwrap(err).Error(), "needs a branch-scoped write")
		})
	}
}

// TestHooksConcurrently takes numbers in 20 concurrent transactions per
// branch on PostgreSQL, where writers do run concurrently: each branch gets
// 1 to 20, each once.
func TestHooksConcurrently(t *testing.T) {
	t.Parallel()
	const perBranch = 20
	b := backends()[1]
	db := openDB(t, b)
	branches := []string{"branch-a", "branch-b"}
	hooks := numbering.Hooks("number", "Q", "quotation")

	got := make([][]string, len(branches))
	var mu sync.Mutex
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range branches {
		for range perBranch {
			wg.Go(func() {
				<-start
				n, err := create(t.Context(), db, hooks, tenancy.Tenant{OrganizationID: "org", BranchID: branches[i]}, "ok")
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
	for i := range branches {
		slices.Sort(got[i])
		assert.Equal(t, want, got[i], "branch %d: every number once", i)
	}
}

// A host whose own schema created number_sequences (with a foreign key to
// its branches, say) keeps its table: Migrate leaves it, and Next uses it.
func TestMigrateKeepsTheHostsTable(t *testing.T) {
	t.Parallel()
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			db := b.open(t)
			ctx := t.Context()
			_, err := db.ExecContext(ctx, `CREATE TABLE branches (id text PRIMARY KEY)`)
			require.NoError(t, err)
			_, err = db.ExecContext(ctx, `CREATE TABLE number_sequences (
				branch_id text NOT NULL REFERENCES branches (id), kind text NOT NULL,
				year integer NOT NULL, next_value bigint NOT NULL, PRIMARY KEY (branch_id, kind, year))`)
			require.NoError(t, err)
			_, err = db.ExecContext(ctx, `INSERT INTO branches (id) VALUES ('north')`)
			require.NoError(t, err)
			require.NoError(t, numbering.Migrate(ctx, db, b.dialect))

			n, err := numbering.Next(ctx, db, "north", "trip", 2026)
			require.NoError(t, err)
			assert.EqualValues(t, 1, n)
			if b.dialect == query.Postgres {
				// The host's foreign key still holds.
				_, err = numbering.Next(ctx, db, "nowhere", "trip", 2026)
				require.Error(t, err)
				assert.False(t, errors.Is(err, sql.ErrNoRows))
			}
		})
	}
}

// TestHooksBatch: a batch takes its numbers in one statement a branch and
// year, in the order of its records, after the numbers taken one by one,
// on both databases (NextN).
func TestHooksBatch(t *testing.T) {
	t.Parallel()
	year := time.Now().UTC().Year()
	const north, south = "0b9a3c1e-0000-4000-8000-000000000001", "0b9a3c1e-0000-4000-8000-000000000002"
	quotations := numbering.Hooks("number", "Q", "quotation")
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			db := openDB(t, b)
			northT := tenancy.Tenant{OrganizationID: "org", BranchID: north}
			southT := tenancy.Tenant{OrganizationID: "org", BranchID: south}
			_, err := create(t.Context(), db, quotations, northT, "ok")
			require.NoError(t, err)

			now := time.Now()
			var ws []*resource.Write
			for _, tenant := range []tenancy.Tenant{northT, southT, northT, northT, southT} {
				ws = append(ws, &resource.Write{Tenant: tenant, Changes: resource.Record{}, Time: now})
			}
			tx, err := db.BeginTx(t.Context(), nil)
			require.NoError(t, err)
			require.NoError(t, quotations.BeforeCreateBatch(t.Context(), tx, ws))
			require.NoError(t, tx.Commit())
			var got []string
			for _, w := range ws {
				got = append(got, w.Changes["number"].(string))
			}
			q := func(n int) string { return fmt.Sprintf("Q-%d-%06d", year, n) }
			assert.Equal(t, []string{q(2), q(1), q(3), q(4), q(2)}, got)
			n, err := create(t.Context(), db, quotations, northT, "ok")
			require.NoError(t, err)
			assert.Equal(t, q(5), n, "one by one again after the batch")
			first, err := numbering.NextN(t.Context(), db, south, "quotation", year, 3)
			require.NoError(t, err)
			assert.EqualValues(t, 3, first, "south's 3, 4, 5")
		})
	}
}
