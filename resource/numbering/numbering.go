// Package numbering gives each new record of a branch-scoped resource the
// next number of its kind in its branch and year, without gaps and without
// duplicates, formatted as records show it: Q-2026-000001, Q-2026-000002,
// ... in one branch, Q-2026-000001 again in another.
//
// [Hooks] returns the resource.Hooks that number a field of a resource;
// [Migrate] creates the counters' table, number_sequences, in PostgreSQL
// or SQLite. The number is taken inside the write's transaction, so
// concurrent writes of one branch never share a number, and a write that
// fails or rolls back gives its number back: the numbers of committed
// records have no gaps.
//
// It is a package of its own beside package resource, not a Registry
// feature: a host that numbers nothing keeps no counters table, and one
// that does calls Migrate once at start, beside Registry.Migrate.
package numbering

import (
	"context"
	"database/sql"
	"embed"
	"errors"
	"fmt"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/internal/migrate"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/resource"
)

// Table is the table of the counters: one row per branch, kind and year,
// whose next_value is the number the next record gets.
const Table = "number_sequences"

// migrationsTable records the versions of the package's own tables.
const migrationsTable = "waybill_numbering_migrations"

//go:embed migrations/postgres/*.sql migrations/sqlite/*.sql
var migrations embed.FS

// Migrate creates the counters' table, number_sequences (branch_id, kind,
// year, next_value), in db unless it exists, recording its versions in
// waybill_numbering_migrations. It is safe to call on every start and from
// several processes at once. The table refers to no table of the host; a
// host whose schema created number_sequences itself, with the same
// columns (a foreign key from branch_id to its branches, say), keeps it.
func Migrate(ctx context.Context, db *sql.DB, d query.Dialect) error {
	if _, err := migrate.Apply(ctx, db, d, migrations, "migrations/"+d.String(), migrationsTable); err != nil {
		return fmt.Errorf("numbering: migrate: %w", err)
	}
	return nil
}

// nextSQL takes the next number of one kind for one branch and year and
// advances the counter, in one statement that PostgreSQL and SQLite (3.35
// and later) both run: the first number of a year inserts the row, every
// later one updates it. On PostgreSQL the row lock that the update takes
// is held until the transaction ends, so concurrent writers of one branch
// and kind queue up and never share a number; on SQLite writers are
// serialized anyway. next_value is the number the following call gets.
const nextSQL = `INSERT INTO number_sequences (branch_id, kind, year, next_value) VALUES ($1, $2, $3, 2)
ON CONFLICT (branch_id, kind, year) DO UPDATE SET next_value = number_sequences.next_value + 1
RETURNING next_value - 1`

// nextNSQL takes n numbers at once, as nextSQL takes one: it returns the
// first, and the counter moves past the last.
const nextNSQL = `INSERT INTO number_sequences (branch_id, kind, year, next_value) VALUES ($1, $2, $3, CAST($4 AS bigint) + 1)
ON CONFLICT (branch_id, kind, year) DO UPDATE SET next_value = number_sequences.next_value + CAST($4 AS bigint)
RETURNING next_value - CAST($4 AS bigint)`

// Querier is what Next needs of a transaction; a *sql.Tx is one.
type Querier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// Next takes the next number of kind for the branch and year inside the
// transaction q: 1, 2, 3, ... The counter stays locked (on PostgreSQL)
// until q ends; a transaction that rolls back gives its number back. The
// placeholders are $1, $2, $3, which both PostgreSQL and SQLite read.
func Next(ctx context.Context, q Querier, branchID, kind string, year int) (int64, error) {
	var n int64
	if err := q.QueryRowContext(ctx, nextSQL, branchID, kind, year).Scan(&n); err != nil {
		return 0, fmt.Errorf("numbering: take the next %s number of branch %s: %w", kind, branchID, err)
	}
	return n, nil
}

// NextN takes the next n numbers of kind for the branch and year inside
// the transaction q, in one statement, and returns the first: the numbers
// are first, first+1, ... first+n-1, as n calls of Next would take them.
func NextN(ctx context.Context, q Querier, branchID, kind string, year int, n int) (int64, error) {
	var first int64
	if err := q.QueryRowContext(ctx, nextNSQL, branchID, kind, year, n).Scan(&first); err != nil {
		return 0, fmt.Errorf("numbering: take the next %d %s numbers of branch %s: %w", n, kind, branchID, err)
	}
	return first, nil
}

// Format returns the number n of a year as records show it, prefix, year
// and n in at least six digits: Q-2026-000042. Numbers beyond 999999 keep
// every digit.
func Format(prefix string, year int, n int64) string {
	return fmt.Sprintf("%s-%d-%06d", prefix, year, n)
}

// Hooks returns the hooks that give a new record of a branch-scoped
// resource the next number of kind for its branch and the year (UTC) of
// the write, in field, formatted with prefix (Format). The number is taken
// inside the write's transaction (BeforeCreate), so it is unique in the
// branch, and a write that fails gives it back. A write without a branch
// (an organization-scoped resource) fails with 500: numbering needs a
// branch. Give each numbered resource its own kind; resources that share
// a kind share one sequence.
func Hooks(field, prefix, kind string) resource.Hooks {
	return resource.Hooks{
		BeforeCreate: func(ctx context.Context, tx *sql.Tx, w *resource.Write) error {
			branch := w.Tenant.BranchID
			if branch == "" {
				return apierrors.Internal(errors.New("numbering: " + field + " needs a branch-scoped write"))
			}
			year := w.Time.UTC().Year()
			n, err := Next(ctx, tx, branch, kind, year)
			if err != nil {
				return apierrors.Internal(err)
			}
			w.Changes[field] = Format(prefix, year, n)
			return nil
		},
		// A batch takes the numbers of its records in one statement per
		// branch and year, in the order of its records.
		BeforeCreateBatch: func(ctx context.Context, tx *sql.Tx, ws []*resource.Write) error {
			type group struct {
				branch string
				year   int
			}
			var order []group
			members := map[group][]*resource.Write{}
			for _, w := range ws {
				if w.Tenant.BranchID == "" {
					return apierrors.Internal(errors.New("numbering: " + field + " needs a branch-scoped write"))
				}
				g := group{w.Tenant.BranchID, w.Time.UTC().Year()}
				if members[g] == nil {
					order = append(order, g)
				}
				members[g] = append(members[g], w)
			}
			for _, g := range order {
				first, err := NextN(ctx, tx, g.branch, kind, g.year, len(members[g]))
				if err != nil {
					return apierrors.Internal(err)
				}
				for i, w := range members[g] {
					w.Changes[field] = Format(prefix, g.year, first+int64(i))
				}
			}
			return nil
		},
	}
}
