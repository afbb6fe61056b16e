package resource

import (
	"net/http"
	"strconv"

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
	mode, asked := preferredCount(r)
	total, applied, err := h.total(ctx, q, mode, cond, args)
	if err != nil {
		return readError(err)
	}
	w.Header().Add("Vary", "Prefer")
	w.Header().Add("Vary", "Accept")
	if asked && applied == mode {
		w.Header().Set("Preference-Applied", applied.String())
	}
	rows, err := h.db().QueryContext(ctx, pageSQL, pageArgs...)
	if err != nil {
		return readError(err)
	}
	defer rows.Close()
	buf := make([]byte, 0, 512+256*q.Limit)
	buf = append(buf, `{"data":[`...)
	vals, ptrs := h.scratch()
	n := 0
	var next string
	for rows.Next() {
		if n == q.Limit {
			// The row after the page: the page's last row starts the next.
			if next, err = q.NextCursor(h.sortValues(vals, q)); err != nil {
				return apierrors.Internal(err)
			}
			break
		}
		if err := rows.Scan(ptrs...); err != nil {
			return apierrors.Internal(err)
		}
		if n > 0 {
			buf = append(buf, ',')
		}
		if buf, err = h.appendFields(buf, vals, only); err != nil {
			return apierrors.Internal(err)
		}
		n++
	}
	if err := rows.Err(); err != nil {
		return readError(err)
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
