package eventstore

import (
	"context"
	"database/sql"
	"fmt"
	"regexp"

	"github.com/waybillhq/waybill/query"
)

// snapshotSetup serializes the beginnings of snapshots on PostgreSQL,
// each of which holds a connection while it waits for a second one: one
// at a time, none waits for a connection that another one holds.
var snapshotSetup = make(chan struct{}, 1)

// snapshotID is the shape of the names pg_export_snapshot gives
// (00000003-0000001B-1); it is checked before it is put in a statement.
var snapshotID = regexp.MustCompile(`^[0-9A-F]+-[0-9A-F]+(-[0-9]+)?$`)

// exportSQL, run under the sequencer's lock, exports its statement's
// snapshot and numbers every event of the organization ($1) that the
// snapshot holds and that has no number yet, raising the head as Sequence
// does: the snapshot then holds exactly the organization's events up to
// the head it returns, and every event it does not hold is numbered after
// that head by a later Sequence. It returns the snapshot's name and the
// head.
const exportSQL = `WITH snap AS (SELECT pg_export_snapshot() AS id),
pending AS (
	SELECT pos, row_number() OVER (ORDER BY pos) AS n FROM ` + Table + ` WHERE organization_id = $1 AND seq IS NULL
), counts AS (
	SELECT count(*) AS n FROM pending
), heads AS (
	INSERT INTO ` + HeadsTable + ` AS h (organization_id, seq) SELECT $1, n FROM counts
	ON CONFLICT (organization_id) DO UPDATE SET seq = h.seq + EXCLUDED.seq
	RETURNING seq
), numbered AS (
	UPDATE ` + Table + ` e SET seq = heads.seq - counts.n + pending.n
	FROM pending, counts, heads WHERE e.pos = pending.pos
	RETURNING 1
)
SELECT (SELECT id FROM snap), (SELECT seq FROM heads), (SELECT count(*) FROM numbered)`

// BeginSnapshot begins a read-only transaction that sees one consistent
// snapshot of db, on a connection of db, and returns both with the
// organization's event head in that snapshot: the snapshot holds the
// organization's events up to the head, and none after it, so that the
// feed after the head gives exactly the writes the snapshot does not hold.
// The transaction lives until ctx ends or it is committed or rolled back.
//
// On SQLite, whose events take their numbers as they are written, it is
// one read transaction whose first read is the head, begun read only:
// modernc.org/sqlite begins it deferred even on a pool whose transactions
// begin IMMEDIATE (_txlock=immediate), so that it takes no write lock. On PostgreSQL,
// whose events are numbered after they commit (see Sequence), a snapshot
// may hold events that have no number yet: BeginSnapshot takes the
// sequencer's lock on a second connection, exports the snapshot of one
// statement that also numbers the organization's events it holds, begins
// the returned REPEATABLE READ transaction on that snapshot
// (SET TRANSACTION SNAPSHOT), and only then lets the lock go. It takes
// both connections before the lock (a sequencer waits for the lock on a
// connection of its own), and at most one BeginSnapshot of the process
// takes its two at once.
func BeginSnapshot(ctx context.Context, db *sql.DB, d query.Dialect, org string) (*sql.Conn, *sql.Tx, int64, error) {
	if d != query.Postgres {
		conn, err := db.Conn(ctx)
		if err != nil {
			return nil, nil, 0, err
		}
		tx, err := conn.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
		if err != nil {
			_ = conn.Close()
			return nil, nil, 0, err
		}
		head, _, err := Head(ctx, tx, d, org)
		if err != nil {
			_ = tx.Rollback()
			_ = conn.Close()
			return nil, nil, 0, err
		}
		return conn, tx, head, nil
	}
	select {
	case snapshotSetup <- struct{}{}:
		defer func() { <-snapshotSetup }()
	case <-ctx.Done():
		return nil, nil, 0, ctx.Err()
	}
	// Both connections first, then the lock: a sequencer holds its
	// connection while it waits for the lock, so taking the lock and then
	// waiting for a second connection could wait for that sequencer.
	// BEGIN takes no snapshot: the export's is set by its first statement.
	seal, err := db.BeginTx(ctx, nil)
	if err != nil {
		return nil, nil, 0, err
	}
	defer func() { _ = seal.Rollback() }()
	conn, err := db.Conn(ctx)
	if err != nil {
		return nil, nil, 0, err
	}
	tx, err := conn.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead, ReadOnly: true})
	if err != nil {
		_ = conn.Close()
		return nil, nil, 0, err
	}
	handed := false
	defer func() {
		if !handed {
			_ = tx.Rollback()
			_ = conn.Close()
		}
	}()
	if _, err := seal.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, sequenceLock); err != nil {
		return nil, nil, 0, fmt.Errorf("events: snapshot: %w", err)
	}
	var name string
	var head, numbered int64
	if err := seal.QueryRowContext(ctx, exportSQL, org).Scan(&name, &head, &numbered); err != nil {
		return nil, nil, 0, fmt.Errorf("events: snapshot: %w", err)
	}
	if !snapshotID.MatchString(name) {
		return nil, nil, 0, fmt.Errorf("events: snapshot: an unexpected snapshot name %q", name)
	}
	if _, err := tx.ExecContext(ctx, `SET TRANSACTION SNAPSHOT '`+name+`'`); err != nil {
		return nil, nil, 0, fmt.Errorf("events: snapshot: %w", err)
	}
	if err := seal.Commit(); err != nil {
		return nil, nil, 0, fmt.Errorf("events: snapshot: %w", err)
	}
	handed = true
	return conn, tx, head, nil
}
