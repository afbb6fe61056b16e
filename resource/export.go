package resource

import (
	"bufio"
	"context"
	"database/sql"
	"errors"
	"io"
	"log/slog"
	"mime"
	"net/http"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"
	"unicode"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/query/sqlbuild"
	"github.com/waybillhq/waybill/tenancy"
)

// Exports.
//
// GET {prefix}/{scopeId}/{resource} with Accept: application/x-ndjson or
// Accept: text/csv streams every record that the filters match, in the
// sort given, instead of a page: NDJSON is one record a line, as the
// list's data shows it; CSV (RFC 4180, CRLF line ends) has a header row
// of the field names, then a row a record, an empty cell for null. In a
// CSV cell a string is written as it is and every other value as its JSON
// text unquoted: a number as 12.5, a boolean as true, a date as
// 2026-11-20, a timestamp as 2026-11-20T10:00:00.123456Z (a field whose
// value were a JSON object or array would be its JSON text, quoted as CSV
// quotes any cell). Values are written exactly, so that they read back as
// they were stored: a cell that starts with =, +, - or @ is not escaped,
// and a spreadsheet that opens the file should take its cells as text.
// fields= applies, to both. limit, offset and after are
// refused with 400 invalid_request: an export has no pages. Accept
// application/json, */* or none gives the list as always; the answer of a
// list varies with Accept.
//
// The rows are read in one transaction, one consistent snapshot of the
// database: REPEATABLE READ, read only, on PostgreSQL; one read
// transaction on SQLite, which holds a SQLite registry's one connection
// for the whole export. When the registry's Outbox is a Snapshotter (as
// events.Outbox is), the answer carries Waybill-Feed-Cursor: the change
// feed's cursor after which come exactly the writes the snapshot does not
// hold, so that a client that resynchronizes from an export and then
// follows the feed from that cursor misses nothing and sees nothing twice.
//
// The answer is streamed as it is read, through a buffer of ExportBuffer
// bytes, so that memory stays flat whatever the number of records. The
// rows are read through database/sql, or through the registry's RowReader
// when it reads from the registry's driver (pgxrows.Reader on PostgreSQL
// through pgx: twice as fast). The
// request's own deadline bounds the export until it starts to answer;
// then Registry.ExportTimeout bounds the whole export, and each write to
// the client must be done within ExportWriteTimeout, so that a client that
// stops reading frees its connection and its database transaction. A
// failure once the answer has begun (the database went away, the export
// timed out) cuts the answer off without its end, so that the client
// cannot take a part for the whole, and is logged. Since an export holds a
// database connection and a snapshot for as long as it runs, a registry
// serves at most Registry.ExportsAtOnce of them at once (503 beyond, with
// Retry-After), and one organization at most half of those (429 beyond),
// so that neither one tenant's exports nor all of them together take the
// connections that the other requests need.

// The media types of an export.
const (
	NDJSON = "application/x-ndjson"
	CSV    = "text/csv"
)

// FeedCursorHeader is the header of an export's change-feed cursor.
const FeedCursorHeader = "Waybill-Feed-Cursor"

// Bounds of an export.
const (
	// DefaultExportTimeout bounds an export of a registry whose
	// ExportTimeout is zero.
	DefaultExportTimeout = 10 * time.Minute
	// ExportWriteTimeout bounds each write of an export's answer to the
	// client.
	ExportWriteTimeout = 30 * time.Second
	// ExportBuffer is the size of the buffer an export writes through.
	ExportBuffer = 32 << 10
)

// DefaultExportsAtOnce is how many exports a registry serves at once when
// its ExportsAtOnce is zero.
const DefaultExportsAtOnce = 4

// exportSlots counts the exports a registry serves, in all and by
// organization.
type exportSlots struct {
	mu    sync.Mutex
	total int
	byOrg map[string]int
}

// takeExport takes a slot for an export of the organization, or refuses:
// 503 when the registry serves ExportsAtOnce exports already, 429 when
// the organization runs half of them (at least one). The release func
// gives the slot back.
func (g *Registry) takeExport(org string) (release func(), err error) {
	most := g.ExportsAtOnce
	if most <= 0 {
		most = DefaultExportsAtOnce
	}
	perOrg := max(1, most/2)
	e := &g.exports
	e.mu.Lock()
	defer e.mu.Unlock()
	switch {
	case e.total >= most:
		return nil, apierrors.Unavailable("the server runs as many exports as it serves at once (%d); retry in a moment", most)
	case e.byOrg[org] >= perOrg:
		return nil, apierrors.RateLimited(1).WithDescription("this organization runs %d exports already, as many as it may at once; start another when one has ended", perOrg)
	}
	if e.byOrg == nil {
		e.byOrg = map[string]int{}
	}
	e.total++
	e.byOrg[org]++
	return func() {
		e.mu.Lock()
		defer e.mu.Unlock()
		e.total--
		if e.byOrg[org]--; e.byOrg[org] == 0 {
			delete(e.byOrg, org)
		}
	}, nil
}

// Snapshotter is an Outbox that can begin a read of one consistent
// snapshot of the database and say where its change feed goes on after
// that snapshot: the writes after cursor in the feed of the organization
// are exactly those the snapshot does not hold. An export reads through it
// when the registry's Outbox is one. The transaction is read-only, runs
// on conn, a connection of db that the caller closes when the transaction
// has ended, lives until ctx ends or the caller commits or rolls it back,
// and may take another connection of db for a moment while it begins.
type Snapshotter interface {
	BeginSnapshot(ctx context.Context, db *sql.DB, organizationID string) (conn *sql.Conn, tx *sql.Tx, cursor string, err error)
}

// exportTimeout is the registry's ExportTimeout, or the default.
func (g *Registry) exportTimeout() time.Duration {
	if g.ExportTimeout > 0 {
		return g.ExportTimeout
	}
	return DefaultExportTimeout
}

// exportFormat returns the media type of the export r asks for by its
// Accept header, or "" for a page of the list: the acceptable type with
// the highest q-value, the first given on a tie; application/json, */*,
// application/* and types the API does not serve count as a list.
func exportFormat(r *http.Request) string {
	type choice struct {
		typ string
		q   float64
	}
	var choices []choice
	for _, v := range r.Header.Values("Accept") {
		for part := range strings.SplitSeq(v, ",") {
			typ, params, err := mime.ParseMediaType(strings.TrimSpace(part))
			if err != nil {
				continue
			}
			q := 1.0
			if s, ok := params["q"]; ok {
				if q, err = strconv.ParseFloat(s, 64); err != nil {
					continue
				}
			}
			if q > 0 {
				choices = append(choices, choice{typ, q})
			}
		}
	}
	sort.SliceStable(choices, func(i, j int) bool { return choices[i].q > choices[j].q })
	for _, c := range choices {
		switch c.typ {
		case NDJSON, CSV:
			return c.typ
		case "application/json", "*/*", "application/*":
			return ""
		}
	}
	return ""
}

// export is GET {prefix}/{scopeId}/{resource} that asks for format.
func (h *handlers) export(w http.ResponseWriter, r *http.Request, format string) error {
	t := tenant(r)
	values := r.URL.Query()
	for _, p := range []string{"limit", "offset", "after"} {
		if values.Has(p) {
			return apierrors.InvalidRequest("%s: an export has no pages: it streams every record the filters match; leave out limit, offset and after", p)
		}
	}
	q, err := h.resource.schema.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return err
	}
	only, err := h.fields(r)
	if err != nil {
		return err
	}
	d := h.dialect()
	cond, args := tenantWhere(h.resource, t)
	b := h.selectFrom().Where(cond, args...)
	if filters := sqlbuild.Where(d, q); filters != nil {
		b = b.Where(filters)
	}
	text, targs, err := sqlbuild.SQL(d, b.OrderBy(sqlbuild.OrderBy(d, q)...))
	if err != nil {
		return apierrors.Internal(err)
	}

	release, err := h.registry.takeExport(t.OrganizationID)
	if err != nil {
		return err
	}
	defer release()

	// The export's context outlives the request's deadline, which bounds
	// only its start (see answerExport).
	ctx, cancel := context.WithTimeout(context.WithoutCancel(r.Context()), h.registry.exportTimeout())
	defer cancel()
	stop := context.AfterFunc(r.Context(), cancel)
	defer stop()
	conn, tx, cursor, err := h.beginSnapshot(ctx, t)
	if err != nil {
		return h.exportFailed(r, err)
	}
	defer conn.Close()
	defer func() { _ = tx.Rollback() }()
	e := exportAnswer{w: w, r: r, format: format, only: only, cursor: cursor, started: stop, cancel: cancel}
	if r.Method == http.MethodHead { // HEAD wants the headers, the cursor among them
		err = h.answerExport(e, nil)
	} else {
		err = h.readExport(ctx, conn, tx, text, targs, e)
	}
	if errors.Is(err, errExportCut) {
		panic(http.ErrAbortHandler) // the client sees the answer cut off, never a clean end
	}
	if err == nil {
		_ = tx.Commit()
	}
	return err
}

// errExportCut is the error of an export that failed after its answer
// began: it is logged, and the answer is cut off.
var errExportCut = errors.New("resource: export cut off")

// exportAnswer is what an export answers with, but its rows.
type exportAnswer struct {
	w       http.ResponseWriter
	r       *http.Request
	format  string
	only    []bool
	cursor  string
	started func() bool // ends the request's bound on the export: false if the request has ended
	cancel  func()      // ends the export
}

// readExport reads the rows of text in tx, which runs on conn, and
// answers with them: on the driver's own connection through the
// registry's RowReader when it reads from conn's driver, else through
// database/sql.
func (h *handlers) readExport(ctx context.Context, conn *sql.Conn, tx *sql.Tx, text string, args []any, e exportAnswer) error {
	var answerErr error
	read, err := h.readRaw(ctx, conn, text, args, func(rows Rows) {
		answerErr = h.answerExport(e, rows)
	})
	if err != nil {
		return h.exportFailed(e.r, err)
	}
	if read {
		return answerErr
	}
	rows, err := tx.QueryContext(ctx, text, args...)
	if err != nil {
		return h.exportFailed(e.r, err)
	}
	defer rows.Close()
	return h.answerExport(e, h.sqlRows(rows, e.only))
}

// readRaw runs text, its parameters bound to args, on conn's driver
// connection through the registry's RowReader and hands its rows to use,
// which must not keep them. read is false, and nothing ran, when there is
// no RowReader, no conn, or a reader that does not read from conn's
// driver: the caller reads through database/sql instead. err is the
// failure to run text or to reach the driver connection.
func (h *handlers) readRaw(ctx context.Context, conn *sql.Conn, text string, args []any, use func(Rows)) (read bool, err error) {
	rr := h.registry.RowReader
	if rr == nil || conn == nil {
		return false, nil
	}
	err = conn.Raw(func(driverConn any) error {
		rows, ok, err := rr.Query(ctx, driverConn, text, args)
		if read = ok; !ok || err != nil {
			return err
		}
		defer rows.Close()
		use(rows)
		return nil
	})
	return read, err
}

// answerExport answers with the rows (nil for HEAD): an error in the
// error shape if the first row cannot be read, else the export's headers
// and its rows, streamed. From the first row on, the request's deadline no
// longer bounds the export, but a client that goes away still ends it. A
// failure once the answer has begun is logged, and answerExport returns
// errExportCut.
func (h *handlers) answerExport(e exportAnswer, rows Rows) error {
	w, r := e.w, e.r
	more := rows != nil && rows.Next()
	if rows != nil && !more {
		if err := rows.Err(); err != nil {
			return h.exportFailed(r, err)
		}
	}
	if !e.started() {
		return h.exportFailed(r, r.Context().Err()) // the request ended meanwhile
	}
	gone := context.AfterFunc(r.Context(), func() {
		if errors.Is(r.Context().Err(), context.Canceled) {
			e.cancel()
		}
	})
	defer gone()

	hdr := w.Header()
	hdr.Set("Content-Type", e.format)
	if e.format == CSV {
		hdr.Set("Content-Type", "text/csv; charset=utf-8; header=present")
	}
	hdr.Set("Cache-Control", "no-store")
	hdr.Add("Vary", "Accept")
	if e.cursor != "" {
		hdr.Set(FeedCursorHeader, e.cursor)
	}
	w.WriteHeader(http.StatusOK)
	if rows == nil {
		return nil
	}
	out := bufio.NewWriterSize(&deadlineWriter{w: w, rc: http.NewResponseController(w)}, ExportBuffer)
	if err := h.stream(out, rows, more, e.format, e.only); err != nil {
		logger := h.registry.Logger
		if logger == nil {
			logger = slog.Default()
		}
		level, msg := slog.LevelError, "export failed after its answer began; the answer is cut off"
		if errors.Is(r.Context().Err(), context.Canceled) {
			level, msg = slog.LevelInfo, "export abandoned by the client"
		}
		logger.Log(r.Context(), level, msg, "method", r.Method, "path", r.URL.Path, "error", err)
		return errExportCut
	}
	return nil
}

// exportFailed is the error of an export that failed before it began to
// answer: the request's own when it ended (its deadline, its client gone),
// else err as a read's.
func (h *handlers) exportFailed(r *http.Request, err error) error {
	if rerr := r.Context().Err(); rerr != nil {
		return rerr
	}
	if _, ok := apierrors.As(err); ok {
		return err
	}
	return readError(err)
}

// beginSnapshot begins the read of an export, on a connection it returns
// too: through the Outbox when it is a Snapshotter, which gives the feed's
// cursor too; else a read-only REPEATABLE READ transaction on PostgreSQL,
// a read transaction on SQLite. Read only on SQLite too: modernc.org/sqlite
// begins it deferred even on a pool whose transactions begin IMMEDIATE
// (_txlock=immediate), so that the export takes no write lock.
func (h *handlers) beginSnapshot(ctx context.Context, t tenancy.Tenant) (*sql.Conn, *sql.Tx, string, error) {
	if s, ok := h.registry.Outbox.(Snapshotter); ok {
		return s.BeginSnapshot(ctx, h.db(), t.OrganizationID)
	}
	opts := &sql.TxOptions{ReadOnly: true}
	if h.dialect() == query.Postgres {
		opts.Isolation = sql.LevelRepeatableRead
	}
	conn, err := h.db().Conn(ctx)
	if err != nil {
		return nil, nil, "", err
	}
	tx, err := conn.BeginTx(ctx, opts)
	if err != nil {
		_ = conn.Close()
		return nil, nil, "", err
	}
	return conn, tx, "", nil
}

// stream writes the rows to out in format, the fields only selects (nil:
// all), and flushes it; more says whether the rows stand on a row already.
// Each row is made in one buffer, written once.
func (h *handlers) stream(out *bufio.Writer, rows Rows, more bool, format string, only []bool) error {
	csv := format == CSV
	var line []byte
	if csv {
		for i, c := range h.cols {
			if only == nil || only[i] {
				line = appendCSVCell(line, c.name)
			}
		}
		if _, err := out.Write(append(line[:len(line)-1], '\r', '\n')); err != nil {
			return err
		}
	}
	for ; more; more = rows.Next() {
		var err error
		if csv {
			line = line[:0]
			for i, c := range h.cols {
				if only != nil && !only[i] {
					continue
				}
				if line, err = appendColumn(line, rows, i, c.typ, true); err != nil {
					return err
				}
			}
			line = append(line[:len(line)-1], '\r', '\n') // for the last comma
		} else {
			if line, err = h.appendRowJSON(line[:0], rows, only); err != nil {
				return err
			}
			line = append(line, '\n')
		}
		if _, err := out.Write(line); err != nil {
			return err
		}
	}
	if err := rows.Err(); err != nil {
		return err
	}
	return out.Flush()
}

// appendRowJSON appends the fields of the current row of rows that only
// names (nil: every field) as a JSON object, the bytes appendFields writes
// of the same values.
func (h *handlers) appendRowJSON(b []byte, rows Rows, only []bool) ([]byte, error) {
	return h.appendObject(b, only, func(b []byte, i int, t query.Type) ([]byte, error) {
		return appendColumn(b, rows, i, t, false)
	})
}

// appendCSVCell appends a Record value as a cell of RFC 4180 CSV, then a
// comma: a string as appendCSVText writes it, null empty, anything else as
// its JSON text unquoted.
func appendCSVCell(b []byte, v any) []byte {
	switch v := v.(type) {
	case nil:
	case string:
		b = appendCSVText(b, v)
	case time.Time:
		b = appendTimestamp(b, v) // as the JSON shows it
	default:
		b = appendJSON(b, v) // a number or a boolean: nothing to quote
	}
	return append(b, ',')
}

// appendCSVText appends s as a CSV cell as encoding/csv writes it: as it
// is, or quoted, its quotes doubled, when it holds a comma, a quote or a
// line break, or starts with a space of any kind, or is the lone \. that
// some readers take for an end.
func appendCSVText[S string | []byte](b []byte, s S) []byte {
	if !csvNeedsQuotes(s) {
		return append(b, s...)
	}
	b = append(b, '"')
	for i := 0; i < len(s); i++ {
		if s[i] == '"' {
			b = append(b, '"')
		}
		b = append(b, s[i])
	}
	return append(b, '"')
}

// csvNeedsQuotes reports whether a CSV cell of s must be quoted (see
// appendCSVText).
func csvNeedsQuotes[S string | []byte](s S) bool {
	if len(s) == 0 {
		return false
	}
	if r, _ := decodeRune(s); unicode.IsSpace(r) || (len(s) == 2 && s[0] == '\\' && s[1] == '.') {
		return true
	}
	for i := 0; i < len(s); i++ {
		switch s[i] {
		case ',', '"', '\r', '\n':
			return true
		}
	}
	return false
}

// deadlineWriter writes to the client, each write due within
// ExportWriteTimeout: a client that stops reading ends the export.
type deadlineWriter struct {
	w  http.ResponseWriter
	rc *http.ResponseController
}

func (d *deadlineWriter) Write(p []byte) (int, error) {
	if err := d.rc.SetWriteDeadline(time.Now().Add(ExportWriteTimeout)); err != nil && !errors.Is(err, http.ErrNotSupported) {
		return 0, err
	}
	n, err := d.w.Write(p)
	if err == nil {
		err = d.rc.Flush()
		if errors.Is(err, http.ErrNotSupported) {
			err = nil
		}
	}
	return n, err
}

var _ io.Writer = (*deadlineWriter)(nil)
