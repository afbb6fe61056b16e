package main

import (
	"encoding/json"
	"io/fs"
	"testing"
	"testing/fstest"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/internal/migrate"
	"github.com/waybillhq/waybill/internal/testdb"
	"github.com/waybillhq/waybill/query"
)

// planScan is what TestQuotationsByStatusDate reads of a scan of the
// quotations table in a plan.
type planScan struct {
	index string
	read  float64 // rows the scan returned or dropped by its filter, all loops
}

// scansOf returns the scans of the quotations table in the JSON plan of
// EXPLAIN (ANALYZE, FORMAT JSON).
func scansOf(t *testing.T, plan []byte) []planScan {
	t.Helper()
	type node struct {
		Relation string  `json:"Relation Name"`
		Index    string  `json:"Index Name"`
		Rows     float64 `json:"Actual Rows"`
		Loops    float64 `json:"Actual Loops"`
		Removed  float64 `json:"Rows Removed by Filter"`
		Plans    []json.RawMessage
	}
	var out []planScan
	var walk func(raw json.RawMessage)
	walk = func(raw json.RawMessage) {
		var n node
		require.NoError(t, json.Unmarshal(raw, &n))
		if n.Relation == "quotations" {
			out = append(out, planScan{index: n.Index, read: (n.Rows + n.Removed) * n.Loops})
		}
		for _, p := range n.Plans {
			walk(p)
		}
	}
	var top []struct{ Plan json.RawMessage }
	require.NoError(t, json.Unmarshal(plan, &top))
	require.Len(t, top, 1)
	walk(top[0].Plan)
	return out
}

// A list of one status sorted by date reads only quotations of that
// status, through quotations_by_status_date: its first page reads the
// page and the row after it, and its last page, whose scan goes on to the
// end, reads the status's older quotations, not every older quotation.
func TestQuotationsByStatusDate(t *testing.T) {
	t.Parallel()
	// 400 quotations a day back from 2026-11-22, each valid 30 days: the
	// drafts valid on 2026-11-27 are those of the last 26 days, and about 4
	// days of older ones follow them in date order.
	d := loadQuotations(t, 12_000)
	const list = "filter=status:eq:draft&filter=valid_until:gte:2026-11-27&sort=quotation_date:desc&limit=50"
	explain := func(after []any) []planScan {
		_, _, page, args := d.statementsOf(t, list, after)
		var plan []byte
		require.NoError(t, d.db.QueryRow("EXPLAIN (ANALYZE, FORMAT JSON) "+page, args...).Scan(&plan))
		return scansOf(t, plan)
	}

	first := explain(nil)
	require.Len(t, first, 1, "%+v", first)
	assert.Equal(t, "quotations_by_status_date", first[0].index)
	assert.Equal(t, 51.0, first[0].read, "the first page reads the page and the row after it")

	// The last page, of 40: after the 41st matching draft from the end.
	var matches, older int
	var date time.Time
	var id string
	require.NoError(t, d.db.QueryRow(`SELECT count(*) FROM quotations WHERE branch_id = $1 AND status = 'draft' AND valid_until >= '2026-11-27'`,
		d.branch).Scan(&matches))
	require.NoError(t, d.db.QueryRow(`SELECT quotation_date, id FROM quotations WHERE branch_id = $1 AND status = 'draft' AND valid_until >= '2026-11-27'
		ORDER BY quotation_date DESC, id DESC OFFSET $2 LIMIT 1`, d.branch, matches-41).Scan(&date, &id))
	require.NoError(t, d.db.QueryRow(`SELECT count(*) FROM quotations WHERE branch_id = $1 AND status = 'draft' AND (quotation_date, id) < ($2, $3)`,
		d.branch, date, id).Scan(&older))
	var all int
	require.NoError(t, d.db.QueryRow(`SELECT count(*) FROM quotations WHERE branch_id = $1 AND (quotation_date, id) < ($2, $3)`,
		d.branch, date, id).Scan(&all))
	require.Greater(t, all, 3*older, "the branch holds quotations of other statuses after the position")

	last := explain([]any{date, id})
	require.NotEmpty(t, last)
	var read float64
	for _, s := range last {
		read += s.read
	}
	assert.LessOrEqual(t, read, float64(older), "the last page reads at most the older drafts (%d), not every older quotation (%d): %+v", older, all, last)
}

// An operator may build quotations_by_status_date without blocking writes
// (CREATE INDEX CONCURRENTLY) before upgrading, as its migration says: the
// migration then keeps that index and applies.
func TestQuotationsByStatusDateBuiltBeforehand(t *testing.T) {
	t.Parallel()
	ctx := t.Context()
	db, dialect, err := openDB(ctx, testdb.PostgresURL(t), defaultDBMaxConns)
	require.NoError(t, err)
	t.Cleanup(func() { _ = db.Close() })
	require.Equal(t, query.Postgres, dialect)
	const dir = "migrations/postgres"
	entries, err := fs.ReadDir(migrations, dir)
	require.NoError(t, err)
	before := fstest.MapFS{}
	for _, e := range entries {
		if e.Name() < "0007" {
			data, err := fs.ReadFile(migrations, dir+"/"+e.Name())
			require.NoError(t, err)
			before[dir+"/"+e.Name()] = &fstest.MapFile{Data: data}
		}
	}
	applied, err := migrate.Apply(ctx, db, dialect, before, dir, migrationsTable)
	require.NoError(t, err)
	require.Equal(t, []int{1, 2, 3, 4, 5, 6}, applied)

	_, err = db.ExecContext(ctx, "CREATE INDEX CONCURRENTLY quotations_by_status_date ON quotations (branch_id, status, quotation_date, id)")
	require.NoError(t, err)
	applied, err = migrateDB(ctx, db, dialect)
	require.NoError(t, err)
	assert.Equal(t, []int{7}, applied)
	var n int
	require.NoError(t, db.QueryRowContext(ctx, "SELECT count(*) FROM pg_indexes WHERE schemaname = current_schema() AND tablename = 'quotations' AND indexname LIKE 'quotations_by_status_date%'").Scan(&n))
	assert.Equal(t, 1, n)
}
