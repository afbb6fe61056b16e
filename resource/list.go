package resource

import (
	"context"
	"database/sql"
	"fmt"
	"net/http"
	"strconv"
	"time"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/query/sqlbuild"
)

// list is GET {prefix}/{scopeId}/{resource}.
func (h *handlers) list(w http.ResponseWriter, r *http.Request) error {
	if format := exportFormat(r); format != "" {
		return h.export(w, r, format)
	}
	t := tenant(r)
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
	// One row more than the page: when it exists, the page is not the last
	// and gets a next cursor.
	peek := *q
	peek.Limit++
	pageSQL, pageArgs, err := sqlbuild.SQL(d, sqlbuild.Page(d, &peek, h.selectFrom().Where(cond, args...)))
	if err != nil {
		return apierrors.Internal(err)
	}
	ctx := r.Context()
	// With a RowReader the list takes one connection for its total and its
	// page, so that it waits for a free one once, not twice.
	var db rowsQuerier = h.db()
	var conn *sql.Conn
	if h.registry.RowReader != nil {
		if conn, err = h.db().Conn(ctx); err != nil {
			return readError(err)
		}
		defer conn.Close() // on the way out of a failure; closed below else
		db = conn
	}
	mode, asked := preferredCount(r)
	total, applied, err := h.total(ctx, db, q, mode, cond, args)
	if err != nil {
		return readError(err)
	}
	w.Header().Add("Vary", "Prefer")
	w.Header().Add("Vary", "Accept")
	if asked && applied == mode {
		w.Header().Set("Preference-Applied", applied.String())
	}
	buf := make([]byte, 0, 512+256*q.Limit)
	buf = append(buf, `{"data":[`...)
	buf, next, err := h.appendPage(ctx, db, conn, buf, pageSQL, pageArgs, q, only)
	if conn != nil {
		_ = conn.Close() // before the answer: a client slow to read it holds no connection
	}
	if err != nil {
		return err
	}
	buf = append(buf, `],"pagination":{"limit":`...)
	buf = strconv.AppendInt(buf, int64(q.Limit), 10)
	buf = append(buf, `,"offset":`...)
	buf = strconv.AppendInt(buf, q.Offset, 10)
	buf = append(buf, `,"total":`...)
	if total != nil {
		buf = strconv.AppendInt(buf, *total, 10)
	} else {
		buf = append(buf, "null"...)
	}
	buf = append(buf, `,"next_cursor":`...)
	if next != "" {
		buf = appendJSON(buf, next)
		w.Header().Set("Link", "<"+h.nextLink(r, next, only)+`>; rel="next"`)
	} else {
		buf = append(buf, "null"...)
	}
	buf = append(buf, `},"version":"`+Version+`"}`...)
	writeJSON(w, http.StatusOK, buf)
	return nil
}

// appendPage appends the records of the page that text reads (the page's
// rows and one more, which only says that the page is not the last) as
// JSON objects separated by commas, and returns the next cursor, or ""
// after the last page. It reads through the registry's RowReader on conn
// (nil without a RowReader) when the reader reads from conn's driver, else
// through database/sql on db (conn itself, or the *sql.DB).
func (h *handlers) appendPage(ctx context.Context, db rowsQuerier, conn *sql.Conn, buf []byte, text string, args []any, q *query.Query, only []bool) ([]byte, string, error) {
	var next string
	var pageErr error
	read, err := h.readRaw(ctx, conn, text, args, func(rows Rows) {
		buf, next, pageErr = h.appendPageRows(buf, rows, q, only)
	})
	if err != nil {
		return nil, "", readError(err)
	}
	if read {
		return buf, next, pageErr
	}
	rows, err := db.QueryContext(ctx, text, args...)
	if err != nil {
		return nil, "", readError(err)
	}
	defer rows.Close()
	vals, ptrs := h.scratch()
	n := 0
	for rows.Next() {
		if n == q.Limit {
			// The row after the page: the page's last row starts the next.
			if next, err = q.NextCursor(h.sortValues(vals, q)); err != nil {
				return nil, "", apierrors.Internal(err)
			}
			break
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, "", apierrors.Internal(err)
		}
		if n > 0 {
			buf = append(buf, ',')
		}
		if buf, err = h.appendFields(buf, vals, only); err != nil {
			return nil, "", apierrors.Internal(err)
		}
		n++
	}
	if err := rows.Err(); err != nil {
		return nil, "", readError(err)
	}
	return buf, next, nil
}

// appendPageRows is appendPage's work on the rows of a RowReader.
func (h *handlers) appendPageRows(buf []byte, rows Rows, q *query.Query, only []bool) ([]byte, string, error) {
	keys := make([]sortKey, len(q.Sort))
	for i, o := range q.Sort {
		keys[i].col = h.colIndex[o.Field]
	}
	n := 0
	for rows.Next() {
		if n == q.Limit {
			// The row after the page: the page's last row starts the next.
			last := make([]any, len(keys))
			for i := range keys {
				last[i] = keys[i].value(h.cols[keys[i].col].typ)
			}
			next, err := q.NextCursor(last)
			if err != nil {
				return nil, "", apierrors.Internal(err)
			}
			return buf, next, nil
		}
		if n > 0 {
			buf = append(buf, ',')
		}
		var err error
		if buf, err = h.appendRowJSON(buf, rows, only); err != nil {
			return nil, "", apierrors.Internal(err)
		}
		for i := range keys {
			if err := keys[i].read(rows, h.cols[keys[i].col].typ); err != nil {
				return nil, "", apierrors.Internal(err)
			}
		}
		n++
	}
	if err := rows.Err(); err != nil {
		return nil, "", readError(err)
	}
	return buf, "", nil
}

// sortKey is the value of one sort key in the last row read from Rows,
// kept past the next Next for the next cursor.
type sortKey struct {
	col  int // the key's column
	null bool
	text []byte // of a UUID, String, Enum or Date
	n    int64
	f    float64
	t    time.Time
	b    bool
}

// read keeps the key's value, of type t, in the current row.
func (k *sortKey) read(rows Rows, t query.Type) error {
	if k.null = rows.Null(k.col); k.null {
		return nil
	}
	var err error
	switch t {
	case query.UUID, query.String, query.Enum, query.Date:
		var s []byte
		s, err = rows.Text(k.col)
		k.text = append(k.text[:0], s...)
	case query.Integer:
		k.n, err = rows.Int(k.col)
	case query.Number:
		k.f, err = rows.Float(k.col)
	case query.Timestamp:
		k.t, err = rows.Time(k.col)
	case query.Boolean:
		k.b, err = rows.Bool(k.col)
	default:
		err = fmt.Errorf("resource: a sort key of type %v", t)
	}
	return err
}

// value returns the key's value, of type t, as Query.NextCursor takes it.
func (k *sortKey) value(t query.Type) any {
	if k.null {
		return nil
	}
	switch t {
	case query.Integer:
		return k.n
	case query.Number:
		return k.f
	case query.Timestamp:
		return k.t
	case query.Boolean:
		return k.b
	}
	return string(k.text)
}

// sortValues returns the values of the sort keys of q in a row as scanned.
func (h *handlers) sortValues(vals []any, q *query.Query) []any {
	out := make([]any, len(q.Sort))
	for i, o := range q.Sort {
		out[i] = vals[h.colIndex[o.Field]]
	}
	return out
}

// nextLink returns the URL of the page after r's, whose cursor is next: r's
// path and query, without offset, with after=next and, when r selects
// fields (only is not nil), those fields as selectedFields names them
// rather than as r sent them.
func (h *handlers) nextLink(r *http.Request, next string, only []bool) string {
	values := r.URL.Query()
	values.Del("offset")
	values.Set("after", next)
	if only != nil {
		values.Set(fieldsParam, h.selectedFields(only))
	}
	return r.URL.Path + "?" + values.Encode()
}
