package eventstore

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/waybillhq/waybill/query"
)

// SequenceBatch is the most events one call of Sequence numbers.
const SequenceBatch = 5000

// sequenceLock is the key of the PostgreSQL advisory lock that one
// sequencer holds at a time (a constant of this package's own).
const sequenceLock int64 = 0x77617962696c6c

// Sequence numbers the committed events that have no number yet, the
// first inserted first, at most SequenceBatch of them a call, and returns
// how many it numbered: per organization, after its head, in the order
// they were inserted. It runs under a transaction-level advisory lock, one
// sequencer at a time whatever the number of replicas, and raises each
// organization's head in the same transaction, so that a reader that sees
// head H sees every event up to H, and no event is ever numbered below a
// head a reader saw.
//
// The order is commit order for the events of one record (a write of a
// record waits for the one before to commit, and inserts its event after
// it), and close to it across records. The feed and the webhook
// dispatcher call Sequence before they read, so that a client that wrote
// and then reads the feed finds its write; the bound keeps what one
// request may cost bounded when many events wait (the dispatcher numbers
// the rest at its next passes, Purge all of them). When nothing waits for
// a number, Sequence takes no lock. On SQLite, whose events are numbered
// as they are written, it does nothing.
func Sequence(ctx context.Context, db *sql.DB, d query.Dialect) (int64, error) {
	if d != query.Postgres {
		return 0, nil
	}
	n, err := sequenceOnce(ctx, db)
	if err != nil {
		return 0, fmt.Errorf("events: sequence: %w", err)
	}
	return n, nil
}

// sequenceOnce numbers up to SequenceBatch events and returns how many.
func sequenceOnce(ctx context.Context, db *sql.DB) (int64, error) {
	// Most calls find nothing to number: they look without the lock.
	var pending bool
	if err := db.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM `+Table+` WHERE seq IS NULL)`).Scan(&pending); err != nil || !pending {
		return 0, err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return 0, err
	}
	defer func() { _ = tx.Rollback() }()
	if _, err := tx.ExecContext(ctx, `SELECT pg_advisory_xact_lock($1)`, sequenceLock); err != nil {
		return 0, err
	}
	// The events without a number, first inserted first: each
	// organization's come as a run from 1 (n) over the organization's
	// count, which its head rises by.
	res, err := tx.ExecContext(ctx, `WITH pending AS (
	SELECT pos, organization_id, row_number() OVER (PARTITION BY organization_id ORDER BY pos) AS n
	FROM `+Table+` WHERE seq IS NULL ORDER BY pos LIMIT $1
), counts AS (
	SELECT organization_id, max(n) AS n FROM pending GROUP BY organization_id
), heads AS (
	INSERT INTO `+HeadsTable+` AS h (organization_id, seq) SELECT organization_id, n FROM counts
	ON CONFLICT (organization_id) DO UPDATE SET seq = h.seq + EXCLUDED.seq
	RETURNING organization_id, seq
)
UPDATE `+Table+` e SET seq = heads.seq - counts.n + pending.n
FROM pending JOIN counts USING (organization_id) JOIN heads USING (organization_id)
WHERE e.pos = pending.pos`, SequenceBatch)
	if err != nil {
		return 0, err
	}
	n, err := res.RowsAffected()
	if err != nil {
		return 0, err
	}
	return n, tx.Commit()
}
