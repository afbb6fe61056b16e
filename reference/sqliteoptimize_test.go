package main

import (
	"database/sql"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sqlitePagePlan returns the EXPLAIN QUERY PLAN of the page statement of
// benchQuery on d's SQLite database db, as one line per step.
func sqlitePagePlan(t *testing.T, d benchData, db *sql.DB) string {
	t.Helper()
	d.db = db
	_, _, page, args := d.statementsOf(t, benchQuery, nil)
	rows, err := db.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+page, args...)
	require.NoError(t, err)
	defer func() { _ = rows.Close() }()
	var steps []string
	for rows.Next() {
		var id, parent, unused int
		var detail string
		require.NoError(t, rows.Scan(&id, &parent, &unused, &detail))
		steps = append(steps, detail)
	}
	require.NoError(t, rows.Err())
	return strings.Join(steps, "\n")
}

// walksStatusDate reports whether plan, of the page of benchQuery, walks
// quotations_by_status_date in the list's order: the page's rows come
// first and the scan stops after them, with no sort of every match.
func walksStatusDate(plan string) bool {
	return strings.Contains(plan, "USING INDEX quotations_by_status_date") && !strings.Contains(plan, "TEMP B-TREE")
}

// A server that opens a SQLite file loaded without statistics gathers
// them (PRAGMA optimize=0x10002 in sqlitePragmas): the list of drafts
// newest first then walks quotations_by_status_date and stops after its
// page, where without them SQLite searched the index on status and
// validity and sorted every matching draft.
func TestSQLiteStatisticsOnOpen(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "waybill.db")
	d := loadSQLiteQuotations(t, path, 30_000)

	// Without statistics (a connection that runs no optimize), the plan is
	// the slow one.
	raw, err := sql.Open("sqlite", path)
	require.NoError(t, err)
	plan := sqlitePagePlan(t, d, raw)
	require.NoError(t, raw.Close())
	require.False(t, walksStatusDate(plan), "the file already had statistics:\n%s", plan)

	db, _, err := openDB(t.Context(), d.url, sqliteMaxConns)
	require.NoError(t, err)
	defer func() { _ = db.Close() }()
	plan = sqlitePagePlan(t, d, db)
	assert.True(t, walksStatusDate(plan), "the plan of the page after the server opened the file:\n%s", plan)
}

// The statistics follow the data that a running server's connection
// sees grow: the connection opened on an empty database, and the periodic
// PRAGMA optimize of serve (startSQLiteOptimize) analyzes the quotations
// loaded since.
func TestSQLiteStatisticsPeriodic(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "waybill.db")
	db, _, _, err := openAndMigrate(t.Context(), "sqlite://"+path, sqliteMaxConns)
	require.NoError(t, err)
	defer func() { _ = db.Close() }()
	d := insertSQLiteQuotations(t, db, 30_000)
	d.url = "sqlite://" + path
	plan := sqlitePagePlan(t, d, db)
	require.False(t, walksStatusDate(plan), "statistics before the periodic run:\n%s", plan)

	stop := startSQLiteOptimize(t.Context(), db, 20*time.Millisecond, testLogger(t))
	defer stop()
	require.Eventually(t, func() bool {
		plan = sqlitePagePlan(t, d, db)
		return walksStatusDate(plan)
	}, 10*time.Second, 20*time.Millisecond, "the plan of the page after the periodic runs:\n%s", plan)
}

// A failed periodic PRAGMA optimize is logged as a warning and the next
// one runs all the same; stop ends the loop.
func TestSQLiteOptimizeFailureLogged(t *testing.T) {
	t.Parallel()
	db, _, err := openDB(t.Context(), "sqlite://"+filepath.Join(t.TempDir(), "waybill.db"), sqliteMaxConns)
	require.NoError(t, err)
	require.NoError(t, db.Close()) // every run fails: sql: database is closed
	logs := &syncBuffer{}
	stop := startSQLiteOptimize(t.Context(), db, 10*time.Millisecond, slog.New(slog.NewJSONHandler(logs, nil)))
	require.Eventually(t, func() bool {
		return strings.Count(logs.String(), "PRAGMA optimize failed; the next one tries again") >= 2
	}, 10*time.Second, 10*time.Millisecond)
	stop()
	assert.Contains(t, logs.String(), `"level":"WARN"`)
	assert.Contains(t, logs.String(), "database is closed")
}
