package errors_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"strings"
	"syscall"
	"testing"

	apierrors "github.com/waybillhq/waybill/errors"
)

// pgError has the method by which From recognizes pgx's *pgconn.PgError.
type pgError struct{ state string }

func (e *pgError) Error() string    { return "pg error " + e.state }
func (e *pgError) SQLState() string { return e.state }

// sqliteError has the method by which From recognizes modernc.org/sqlite's
// *sqlite.Error: its result code, primary or extended.
type sqliteError int

func (e sqliteError) Error() string { return fmt.Sprintf("sqlite error (%d)", int(e)) }
func (e sqliteError) Code() int     { return int(e) }

// lockError has the method and the unwrapped text by which From
// recognizes pgx's error for a connection closed before a statement was
// sent (pgconn's connLockError around pgconn.ErrConnClosed).
type lockError struct {
	status string
	safe   bool
}

func (e *lockError) Error() string     { return e.status }
func (e *lockError) SafeToRetry() bool { return e.safe }
func (e *lockError) Unwrap() error {
	if e.status == "conn closed" {
		return errors.New("conn closed")
	}
	return nil
}

func TestFrom(t *testing.T) {
	t.Parallel()
	dialErr := &net.OpError{Op: "dial", Net: "tcp", Err: os.NewSyscallError("connect", syscall.ECONNREFUSED)}
	tests := []struct {
		name       string
		err        error
		wantCode   string
		wantStatus int
		wantRetry  string
	}{
		{"api error stays", apierrors.NotFound("no order"), "not_found", 404, ""},
		{"api error wrapping a cancellation stays", apierrors.InvalidRequest("bad").Wrap(context.Canceled), "invalid_request", 400, ""},
		{"plain error", errors.New("boom"), "server_error", 500, ""},
		{"text that only reads like an outage", errors.New("connection refused"), "server_error", 500, ""},
		{"Internal without a cause", apierrors.Internal(nil), "server_error", 500, ""},
		{"Internal of a plain error", apierrors.Internal(errors.New("boom")), "server_error", 500, ""},
		{"constraint violation", fmt.Errorf("insert: %w", &pgError{"23505"}), "server_error", 500, ""},
		{"cancelled", context.Canceled, "client_closed_request", 499, ""},
		{"Internal of a wrapped cancellation", apierrors.Internal(fmt.Errorf("list: %w", context.Canceled)), "client_closed_request", 499, ""},
		{"deadline", context.DeadlineExceeded, "temporarily_unavailable", 503, "1"},
		{"Internal of a wrapped deadline", apierrors.Internal(fmt.Errorf("query: %w", context.DeadlineExceeded)), "temporarily_unavailable", 503, "1"},
		{"dial refused", fmt.Errorf("connect: %w", dialErr), "temporarily_unavailable", 503, "5"},
		{"connection reset", fmt.Errorf("read: %w", syscall.ECONNRESET), "temporarily_unavailable", 503, "5"},
		{"unexpected EOF", apierrors.Internal(fmt.Errorf("receive: %w", io.ErrUnexpectedEOF)), "temporarily_unavailable", 503, "5"},
		{"bad connection", driver.ErrBadConn, "temporarily_unavailable", 503, "5"},
		{"connection exception", &pgError{"08006"}, "temporarily_unavailable", 503, "5"},
		{"too many connections", &pgError{"53300"}, "temporarily_unavailable", 503, "5"},
		{"admin shutdown", &pgError{"57P01"}, "temporarily_unavailable", 503, "5"},
		{"cannot connect now", &pgError{"57P03"}, "temporarily_unavailable", 503, "5"},
		{"statement cancelled", &pgError{"57014"}, "temporarily_unavailable", 503, "1"},
		{"a short SQLSTATE", &pgError{"08"}, "server_error", 500, ""},
		{"SQLITE_BUSY", sqliteError(5), "temporarily_unavailable", 503, "1"},
		{"SQLITE_BUSY_SNAPSHOT in Internal", apierrors.Internal(fmt.Errorf("update: %w", sqliteError(517))), "temporarily_unavailable", 503, "1"},
		{"SQLITE_BUSY_RECOVERY", sqliteError(261), "temporarily_unavailable", 503, "1"},
		{"SQLITE_BUSY_TIMEOUT", sqliteError(773), "temporarily_unavailable", 503, "1"},
		{"SQLITE_LOCKED", fmt.Errorf("drop: %w", sqliteError(6)), "temporarily_unavailable", 503, "1"},
		{"SQLITE_LOCKED_SHAREDCACHE", sqliteError(262), "temporarily_unavailable", 503, "1"},
		{"SQLITE_ERROR", sqliteError(1), "server_error", 500, ""},
		{"SQLITE_CONSTRAINT_UNIQUE", sqliteError(2067), "server_error", 500, ""},
		{"SQLITE_IOERR", sqliteError(10), "server_error", 500, ""},
		{"SQLITE_READONLY", sqliteError(8), "server_error", 500, ""},
		{"the text of a locked database alone", errors.New("database is locked (5) (SQLITE_BUSY)"), "server_error", 500, ""},
		{"connection closed before a statement", apierrors.Internal(fmt.Errorf("insert: %w", &lockError{"conn closed", true})), "temporarily_unavailable", 503, "5"},
		{"the text of a closed connection alone", errors.New("conn closed"), "server_error", 500, ""},
		{"a busy connection", &lockError{"conn busy", true}, "server_error", 500, ""},
		{"closed, but not safe to retry", &lockError{"conn closed", false}, "server_error", 500, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			e := apierrors.From(tt.err)
			checkEqual(t, "e.Code", e.Code, tt.wantCode)
			checkEqual(t, "e.Status", e.Status, tt.wantStatus)
			checkEqual(t, `e.Header.Get("Retry-After")`, e.Header.Get("Retry-After"), tt.wantRetry)
			if !errors.Is(e, tt.err) {
				t.Errorf("errors.Is(e, tt.err) = false, want true: err stays in the chain, for the log")
			}
		})
	}
}

func TestWriteDerivedAnswers(t *testing.T) {
	t.Parallel()
	t.Run("a cancelled request is a 499 logged at info", func(t *testing.T) {
		rec, logs := writeLogged(t, http.MethodGet, "/v1/x/orders", apierrors.Internal(fmt.Errorf("list: %w", context.Canceled)))
		checkEqual(t, "rec.Code", rec.Code, apierrors.StatusClientClosedRequest)
		entry := logEntry(t, logs)
		checkEqual(t, `entry["level"]`, entry["level"], "INFO")
		checkEqual(t, `entry["msg"]`, entry["msg"], "request abandoned by the client")
		checkEqual(t, `entry["status"]`, entry["status"], float64(499))
	})

	t.Run("a deadline is a 503 with Retry-After, logged as a warning", func(t *testing.T) {
		rec, logs := writeLogged(t, http.MethodPost, "/v1/oauth/token", fmt.Errorf("load app: %w", context.DeadlineExceeded))
		checkEqual(t, "rec.Code", rec.Code, http.StatusServiceUnavailable)
		checkEqual(t, `rec.Header().Get("Retry-After")`, rec.Header().Get("Retry-After"), "1")
		body := decode(t, rec)
		checkEqual(t, "body.Error", body.Error, "temporarily_unavailable")
		checkNotContains(t, "body.Description (the cause is not shown)", body.Description, "deadline")
		entry := logEntry(t, logs)
		checkEqual(t, `entry["level"]`, entry["level"], "WARN")
		if msg, _ := entry["error"].(string); !strings.Contains(msg, "deadline exceeded") {
			t.Errorf(`entry["error"] = %#v, want a string containing "deadline exceeded"`, entry["error"])
		}
	})

	t.Run("an Internal error judged a 503 is logged as the 503, with its cause", func(t *testing.T) {
		rec, logs := writeLogged(t, http.MethodPost, "/v1/x/accounts", apierrors.Internal(fmt.Errorf("insert account: %w", sqliteError(5))))
		checkEqual(t, "rec.Code", rec.Code, http.StatusServiceUnavailable)
		entry := logEntry(t, logs)
		checkEqual(t, `entry["msg"]`, entry["msg"], "request not served")
		checkEqual(t, `entry["error"]`, entry["error"], "temporarily_unavailable: the server could not answer in time; retry later")
		checkEqual(t, `entry["cause"]`, entry["cause"], "insert account: "+sqliteError(5).Error())
	})

	t.Run("an unreachable database is a 503 with a longer Retry-After", func(t *testing.T) {
		rec := write(t, http.MethodGet, "/v1/x/orders", &pgError{"57P01"})
		checkEqual(t, "rec.Code", rec.Code, http.StatusServiceUnavailable)
		checkEqual(t, `rec.Header().Get("Retry-After")`, rec.Header().Get("Retry-After"), "5")
		checkEqual(t, "decode(t, rec).Error", decode(t, rec).Error, "temporarily_unavailable")
	})
}

func TestFromRequest(t *testing.T) {
	t.Parallel()
	gone, cancel := context.WithCancel(context.Background())
	cancel()
	late, cancelLate := context.WithTimeout(context.Background(), -1)
	defer cancelLate()
	tests := []struct {
		name       string
		ctx        context.Context
		err        error
		wantStatus int
	}{
		{"client left: a statement the database cancelled", gone, &pgError{"57014"}, 499},
		{"client left: any server error", gone, errors.New("boom"), 499},
		{"client left: a client error stays", gone, apierrors.NotFound("no order"), 404},
		{"deadline passed: a cancelled statement is overload", late, &pgError{"57014"}, 503},
		{"deadline passed: a server error stays", late, errors.New("boom"), 500},
		{"deadline passed: a transaction it ended is overload", late, fmt.Errorf("insert: %w", sql.ErrTxDone), 503},
		{"deadline passed: a connection it ended is overload", late, sql.ErrConnDone, 503},
		{"live request: a transaction done is a server error", context.Background(), sql.ErrTxDone, 500},
		{"live request", context.Background(), &pgError{"57014"}, 503},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r, err := http.NewRequestWithContext(tt.ctx, http.MethodGet, "/", nil)
			if err != nil {
				t.Fatalf("err = %v, want no error", err)
			}
			checkEqual(t, "apierrors.FromRequest(r, tt.err).Status", apierrors.FromRequest(r, tt.err).Status, tt.wantStatus)
		})
	}
}
