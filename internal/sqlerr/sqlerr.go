// Package sqlerr tells which integrity constraint a database refused a
// write for, on PostgreSQL (pgx) and SQLite (modernc.org/sqlite), without
// importing either driver: it recognizes their error types by their
// methods, SQLState() of pgx's *pgconn.PgError and Code() of modernc's
// *sqlite.Error.
package sqlerr

import "errors"

// Kind is the kind of constraint a write violated.
type Kind uint8

// The kinds of constraint violation.
const (
	None       Kind = iota // not a constraint violation
	Unique                 // a unique or primary key constraint
	ForeignKey             // a foreign key
	Check                  // a CHECK constraint
	NotNull                // a NOT NULL constraint
	Other                  // another constraint
	// Data is a value the column cannot hold: out of range, too long, not
	// valid for its type (PostgreSQL's SQLSTATE class 22).
	Data
)

// SQLSTATEs of PostgreSQL's integrity constraint violations (class 23).
const (
	pgNotNull    = "23502"
	pgForeignKey = "23503"
	pgUnique     = "23505"
	pgCheck      = "23514"
)

// Extended result codes of SQLite's constraint violations, part of its
// stable ABI (https://sqlite.org/rescode.html).
const (
	sqliteConstraint           = 19
	sqliteConstraintCheck      = 275
	sqliteConstraintForeignKey = 787
	sqliteConstraintNotNull    = 1299
	sqliteConstraintPrimaryKey = 1555
	sqliteConstraintUnique     = 2067
)

// sqliteBusy is SQLite's SQLITE_BUSY: another connection holds a lock.
const sqliteBusy = 5

// Busy reports whether err is SQLite's SQLITE_BUSY (or one of its extended
// codes): another connection held a lock the statement needed for longer
// than the connection's busy timeout, or a step that takes no busy handler,
// such as switching a new database file to WAL, met another connection
// doing the same.
func Busy(err error) bool {
	var lite interface{ Code() int }
	return errors.As(err, &lite) && lite.Code()&0xff == sqliteBusy
}

// KindOf returns the kind of constraint err reports the violation of (or
// Data for a value its column cannot hold), or None.
// Retryable reports whether err is a PostgreSQL failure that running the
// transaction again may not meet: a deadlock that the database broke
// (SQLSTATE 40P01) or a serialization failure (40001).
func Retryable(err error) bool {
	var pg interface{ SQLState() string }
	if !errors.As(err, &pg) {
		return false
	}
	state := pg.SQLState()
	return state == "40P01" || state == "40001"
}

func KindOf(err error) Kind {
	var pg interface{ SQLState() string }
	if errors.As(err, &pg) {
		switch state := pg.SQLState(); {
		case state == pgUnique:
			return Unique
		case state == pgForeignKey:
			return ForeignKey
		case state == pgCheck:
			return Check
		case state == pgNotNull:
			return NotNull
		case len(state) == 5 && state[:2] == "23":
			return Other
		case len(state) == 5 && state[:2] == "22":
			return Data
		}
		return None
	}
	var lite interface{ Code() int }
	if errors.As(err, &lite) {
		switch code := lite.Code(); {
		case code == sqliteConstraintUnique, code == sqliteConstraintPrimaryKey:
			return Unique
		case code == sqliteConstraintForeignKey:
			return ForeignKey
		case code == sqliteConstraintCheck:
			return Check
		case code == sqliteConstraintNotNull:
			return NotNull
		case code&0xff == sqliteConstraint:
			return Other
		}
	}
	return None
}
