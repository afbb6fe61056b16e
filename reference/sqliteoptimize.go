package main

import (
	"context"
	"database/sql"
	"log/slog"
	"time"
)

// The planner statistics of a SQLite database. SQLite chooses the index
// of a statement from the statistics that ANALYZE stores (sqlite_stat1);
// without them it guesses, and for a list of one status sorted by date it
// guessed the index on status and validity, then sorted every matching
// row, instead of walking quotations_by_status_date and stopping after the
// page. As SQLite's documentation asks of connections that stay open, a
// connection runs PRAGMA optimize=0x10002 when it opens (sqlitePragmas),
// serve runs PRAGMA optimize every sqliteOptimizeInterval
// (startSQLiteOptimize), and openAndMigrate runs it once more after
// migrations that created tables or indexes. PostgreSQL keeps its own
// statistics (autovacuum's ANALYZE).
const (
	// sqliteOptimizeInterval is how often serve runs PRAGMA optimize on a
	// SQLite database.
	sqliteOptimizeInterval = time.Hour
	// sqliteOptimizeTimeout bounds one run; PRAGMA optimize limits the
	// rows each ANALYZE reads, so a run takes milliseconds.
	sqliteOptimizeTimeout = time.Minute
)

// sqliteOptimize runs PRAGMA optimize on db, a SQLite database:
// ANALYZE, within a small analysis limit, of the tables that the planner
// used since the connection opened and whose indexes have no statistics
// yet or whose size changed a lot since their last ANALYZE. With
// allTables (the flag 0x10000) it considers every table, used or not, as
// a connection does when it opens.
func sqliteOptimize(ctx context.Context, db *sql.DB, allTables bool) error {
	stmt := "PRAGMA optimize"
	if allTables {
		stmt = "PRAGMA optimize=0x10002"
	}
	_, err := db.ExecContext(ctx, stmt)
	return err
}

// startSQLiteOptimize runs sqliteOptimize on db, a SQLite database, in the
// background every interval (jittered as the purges are), until ctx is
// done or stop is called, a run in progress at once; stop returns once it
// stopped. A run waits for the database's connection as a request does.
// A failed run is logged as a warning and the next one tries again: it
// never stops the server. Call stop before closing the database.
func startSQLiteOptimize(ctx context.Context, db *sql.DB, interval time.Duration, logger *slog.Logger) (stop func()) {
	return startPeriodic(ctx, interval, interval, func(ctx context.Context) {
		runCtx, cancel := context.WithTimeout(ctx, sqliteOptimizeTimeout)
		defer cancel()
		start := time.Now()
		err := sqliteOptimize(runCtx, db, false)
		switch {
		case err != nil && ctx.Err() != nil:
			logger.Debug("PRAGMA optimize stopped by the shutdown")
		case err != nil:
			logger.Warn("PRAGMA optimize failed; the next one tries again", "error", err.Error(), "duration", time.Since(start).String())
		default:
			logger.Debug("PRAGMA optimize", "duration", time.Since(start).String())
		}
	})
}
