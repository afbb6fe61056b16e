package sqlerr_test

import (
	"errors"
	"fmt"
	"testing"

	"github.com/waybillhq/waybill/internal/sqlerr"
)

// The errors of the real drivers are told apart in
// internal/integration/sqlerr, on PostgreSQL and SQLite; here, errors that
// have their methods.

// codeError is an error with a SQLite result code, as modernc's *sqlite.Error has.
type codeError int

func (e codeError) Error() string { return "sqlite error" }
func (e codeError) Code() int     { return int(e) }

// stateError is an error with a SQLSTATE, as pgx's *pgconn.PgError has.
type stateError string

func (e stateError) Error() string    { return "postgres error" }
func (e stateError) SQLState() string { return string(e) }

func TestBusy(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want bool
	}{
		{"SQLITE_BUSY", codeError(5), true},
		{"SQLITE_BUSY_SNAPSHOT", codeError(517), true},
		{"wrapped", fmt.Errorf("migrate: connect: %w", codeError(5)), true},
		{"SQLITE_LOCKED", codeError(6), false},
		{"a constraint", codeError(2067), false},
		{"PostgreSQL", stateError("40001"), false},
		{"another error", errors.New("database is locked"), false},
		{"nil", nil, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := sqlerr.Busy(tc.err); got != tc.want {
				t.Errorf("Busy(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}

func TestKindOf(t *testing.T) {
	for _, tc := range []struct {
		name string
		err  error
		want sqlerr.Kind
	}{
		{"nil", nil, sqlerr.None},
		{"a plain error", errors.New("plain"), sqlerr.None},
		{"PostgreSQL unique", stateError("23505"), sqlerr.Unique},
		{"PostgreSQL foreign key", stateError("23503"), sqlerr.ForeignKey},
		{"PostgreSQL check", stateError("23514"), sqlerr.Check},
		{"PostgreSQL not null", stateError("23502"), sqlerr.NotNull},
		{"PostgreSQL exclusion", stateError("23P01"), sqlerr.Other},
		{"PostgreSQL out of range", stateError("22003"), sqlerr.Data},
		{"PostgreSQL serialization failure", stateError("40001"), sqlerr.None},
		{"PostgreSQL wrapped", fmt.Errorf("insert: %w", stateError("23505")), sqlerr.Unique},
		{"SQLite unique", codeError(2067), sqlerr.Unique},
		{"SQLite primary key", codeError(1555), sqlerr.Unique},
		{"SQLite foreign key", codeError(787), sqlerr.ForeignKey},
		{"SQLite check", codeError(275), sqlerr.Check},
		{"SQLite not null", codeError(1299), sqlerr.NotNull},
		{"SQLite another constraint", codeError(19), sqlerr.Other},
		{"SQLite busy", codeError(5), sqlerr.None},
		{"SQLite wrapped", fmt.Errorf("insert: %w", codeError(787)), sqlerr.ForeignKey},
	} {
		t.Run(tc.name, func(t *testing.T) {
			if got := sqlerr.KindOf(tc.err); got != tc.want {
				t.Errorf("KindOf(%v) = %v, want %v", tc.err, got, tc.want)
			}
		})
	}
}
