package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/resource"
)

// nextNumberSQL takes the next number of one kind for one branch and year
// and advances the counter, in one statement that PostgreSQL and SQLite
// (3.35 and later) both run: the first number of a year inserts the row,
// every later one updates it. On PostgreSQL the row lock that the update
// takes is held until the transaction ends, so concurrent writers of one
// branch and kind queue up and never share a number; on SQLite writers are
// serialized anyway. next_value is the number the following call gets.
const nextNumberSQL = `INSERT INTO number_sequences (branch_id, kind, year, next_value) VALUES ($1, $2, $3, 2)
ON CONFLICT (branch_id, kind, year) DO UPDATE SET next_value = number_sequences.next_value + 1
RETURNING next_value - 1`

// queryRower is what nextNumber needs of a transaction.
type queryRower interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// nextNumber takes the next number of kind for the branch and year inside
// the transaction q: 1, 2, 3, ... A transaction that rolls back gives its
// number back.
func nextNumber(ctx context.Context, q queryRower, branchID, kind string, year int) (int64, error) {
	var n int64
	if err := q.QueryRowContext(ctx, nextNumberSQL, branchID, kind, year).Scan(&n); err != nil {
		return 0, fmt.Errorf("take the next %s number of branch %s: %w", kind, branchID, err)
	}
	return n, nil
}

// formatNumber returns the number n of a year as records show it:
// Q-2026-000042. Numbers beyond 999999 keep every digit.
func formatNumber(prefix string, year int, n int64) string {
	return fmt.Sprintf("%s-%d-%06d", prefix, year, n)
}

// numbered returns hooks that give a new record of a branch-scoped resource
// the next number of kind for its branch and the current year (UTC), in
// field, formatted with prefix (formatNumber). The number is taken inside
// the write's transaction, so it is unique in the branch, and a write that
// fails gives it back.
func numbered(field, prefix, kind string) resource.Hooks {
	return resource.Hooks{BeforeCreate: func(ctx context.Context, tx *sql.Tx, w *resource.Write) error {
		branch := w.Tenant.BranchID
		if branch == "" {
			return apierrors.Internal(errors.New("numbered: " + field + " needs a branch-scoped write"))
		}
		year := w.Time.UTC().Year()
		n, err := nextNumber(ctx, tx, branch, kind, year)
		if err != nil {
			return apierrors.Internal(err)
		}
		w.Changes[field] = formatNumber(prefix, year, n)
		return nil
	}}
}
