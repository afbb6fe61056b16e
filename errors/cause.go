package errors

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"io"
	"net"
	"net/http"
	"syscall"
)

// Retry-After values of the 503s that From derives from a cause.
const (
	// retryOverload is the delay for a request that did not get the
	// database in time: a queue of requests drains within a second.
	retryOverload = "1"
	// retryUnreachable is the delay for a dependency that cannot be
	// reached: an outage lasts longer, and clients coming back every second
	// would only add to the reconnections when it ends.
	retryUnreachable = "5"
)

// From returns the *Error that answers err. An *Error in err's chain is
// returned as it is, unless it is a server_error whose cause says more.
// Any other error, and such a cause, is judged by what it is:
//
//   - a cancelled context (context.Canceled): the client went away before
//     the answer; ClientClosed, status 499, logged below the error level;
//   - an expired deadline (context.DeadlineExceeded), a PostgreSQL
//     statement cancelled (SQLSTATE 57014: a statement_timeout, or the
//     cancel request of a deadline), or a SQLite database that another
//     connection kept locked (SQLITE_BUSY: for longer than the busy
//     timeout, or since the transaction's snapshot; SQLITE_LOCKED: a
//     table another statement holds): the request could not get what it
//     needed in time, such as a free database connection within the
//     server's bound or the database's write lock; 503
//     temporarily_unavailable with Retry-After: 1;
//   - a dependency that cannot be reached or went away: a network error,
//     a connection refused or reset, a driver's bad connection, pgx's
//     connection closed before a statement could be sent, or a
//     PostgreSQL error of SQLSTATE class 08 (connection exception), 53
//     (insufficient resources, such as too many connections) or 57P01-03
//     (the server shuts down or starts); 503 temporarily_unavailable with
//     Retry-After: 5;
//   - anything else: 500 server_error, whose description says nothing of
//     err.
//
// The returned error keeps err as its cause for the log. Drivers are
// recognized by the standard library's types, by the SQLState method of
// pgx's errors and by the Code method of modernc.org/sqlite's, without
// importing any driver.
func From(err error) *Error {
	e, ok := As(err)
	if ok && e.Code != CodeServerError {
		return e
	}
	cause := err
	if ok {
		if e.cause == nil {
			return e
		}
		cause = e.cause
	}
	switch {
	case errors.Is(cause, context.Canceled):
		return ClientClosed(err)
	case overloaded(cause):
		return Unavailable("the server could not answer in time; retry later").
			WithHeader("Retry-After", retryOverload).Wrap(err)
	case unreachable(cause):
		return Unavailable("a service this server depends on is not reachable; retry later").
			WithHeader("Retry-After", retryUnreachable).Wrap(err)
	}
	if ok {
		return e
	}
	return Internal(err)
}

// FromRequest is From for an error that ends the handling of r: when r's
// client went away (r's context was cancelled), a failure that From judges
// a 5xx is ClientClosed instead, whatever the failure says. A database
// statement cancelled for a client that left fails with the database's own
// error, not with the context's. When r's deadline passed, a transaction or
// connection that database/sql closed because of it (sql.ErrTxDone,
// sql.ErrConnDone) is overload, as the deadline itself would be: 503 with
// Retry-After: 1.
func FromRequest(r *http.Request, err error) *Error {
	e := From(err)
	if e.Status < http.StatusInternalServerError {
		return e
	}
	switch ctxErr := r.Context().Err(); {
	case errors.Is(ctxErr, context.Canceled):
		return ClientClosed(err)
	case errors.Is(ctxErr, context.DeadlineExceeded) && e.Code == CodeServerError &&
		(errors.Is(err, sql.ErrTxDone) || errors.Is(err, sql.ErrConnDone)):
		return Unavailable("the server could not answer in time; retry later").
			WithHeader("Retry-After", retryOverload).Wrap(err)
	}
	return e
}

// overloaded reports whether err says that a request could not get what it
// needed in time: its deadline passed, PostgreSQL cancelled its statement
// (SQLSTATE 57014, a statement_timeout or the cancel request of a
// deadline), or SQLite found the database locked (see sqliteBusy).
func overloaded(err error) bool {
	if errors.Is(err, context.DeadlineExceeded) {
		return true
	}
	return sqlState(err) == "57014" || sqliteBusy(err)
}

// SQLite's primary result codes for a lock held by another connection
// (https://sqlite.org/rescode.html); the extended codes keep them in their
// low byte.
const (
	sqliteCodeBusy   = 5 // SQLITE_BUSY: the database file is locked
	sqliteCodeLocked = 6 // SQLITE_LOCKED: a table is locked
)

// sqliteBusy reports whether err is SQLite's SQLITE_BUSY or
// SQLITE_LOCKED, or one of their extended codes (SQLITE_BUSY_SNAPSHOT, a
// read transaction that another connection's commit overtook before it
// could write; SQLITE_LOCKED_SHAREDCACHE, ...): another connection or
// statement held the lock the statement needed, for longer than the
// connection's busy timeout or where SQLite does not wait. The statement
// wrote nothing, and the same request sent again may succeed.
// modernc.org/sqlite's *sqlite.Error is recognized by its Code method.
func sqliteBusy(err error) bool {
	var lite interface{ Code() int }
	if !errors.As(err, &lite) {
		return false
	}
	switch lite.Code() & 0xff {
	case sqliteCodeBusy, sqliteCodeLocked:
		return true
	}
	return false
}

// connClosed reports whether err is pgx's error for a statement on a
// connection that went away before it could be sent (pgconn.ErrConnClosed,
// "conn closed", inside an error whose SafeToRetry says that nothing was
// sent): the database dropped the connection, as when it is cut off
// mid-transaction. It is recognized by that method and that text together,
// without importing the driver; the text alone is not enough.
func connClosed(err error) bool {
	var retry interface {
		error
		SafeToRetry() bool
	}
	if !errors.As(err, &retry) || !retry.SafeToRetry() {
		return false
	}
	for e := error(retry); e != nil; e = errors.Unwrap(e) {
		if e.Error() == "conn closed" {
			return true
		}
	}
	return false
}

// sqlState returns the SQLSTATE of the PostgreSQL error in err's chain, or
// "". pgx's *pgconn.PgError is recognized by its SQLState method.
func sqlState(err error) string {
	var pg interface{ SQLState() string }
	if errors.As(err, &pg) {
		return pg.SQLState()
	}
	return ""
}

// unreachable reports whether err says that a dependency could not be
// reached or dropped the connection (see From).
func unreachable(err error) bool {
	var netErr net.Error
	if errors.As(err, &netErr) {
		return true
	}
	for _, target := range []error{driver.ErrBadConn, io.ErrUnexpectedEOF, net.ErrClosed,
		syscall.ECONNREFUSED, syscall.ECONNRESET, syscall.ECONNABORTED, syscall.EPIPE, syscall.EHOSTUNREACH, syscall.ENETUNREACH} {
		if errors.Is(err, target) {
			return true
		}
	}
	if connClosed(err) {
		return true
	}
	switch state := sqlState(err); {
	case len(state) != 5:
		return false
	case state[:2] == "08", state[:2] == "53":
		return true
	case state == "57P01", state == "57P02", state == "57P03":
		return true
	}
	return false
}
