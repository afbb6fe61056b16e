package resource

import (
	"net/http"
	"slices"
	"strings"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/internal/excerpt"
)

// fieldsParam is the query parameter of field selection: fields=id,status
// returns only those fields of each record (id always), on GET of a list or
// of one record. The order of the fields in the answer is the resource's,
// not the parameter's. It names at most as many fields as the resource has,
// counted as given (across repeated parameters): a name given twice counts
// twice and is kept once. The Link of the next page carries the fields
// selected, in the resource's order, not the parameter as sent.
const fieldsParam = "fields"

// fields returns which columns the fields parameter of r selects, as a mask
// over h.cols, or nil without the parameter. An unknown or empty name, or
// more names than h.cols has columns, is 400 invalid_request; the names
// are counted before one is split off, so that a long list costs nothing.
func (h *handlers) fields(r *http.Request) ([]bool, error) {
	if !strings.Contains(r.URL.RawQuery, fieldsParam) {
		return nil, nil
	}
	values, ok := r.URL.Query()[fieldsParam]
	if !ok {
		return nil, nil
	}
	n := 0
	for _, v := range values {
		n += strings.Count(v, ",") + 1
	}
	if n > len(h.cols) {
		return nil, apierrors.InvalidRequest("fields lists %d field names; %s has %d fields, and fields may name at most as many", n, h.resource.Name, len(h.cols))
	}
	only := make([]bool, len(h.cols))
	for i, c := range h.cols {
		only[i] = c.name == "id"
	}
	for _, v := range values {
		for name := range strings.SplitSeq(v, ",") {
			name = strings.TrimSpace(name)
			i := slices.IndexFunc(h.cols, func(c column) bool { return c.name == name })
			switch {
			case name == "":
				return nil, apierrors.InvalidRequest("fields: an empty field name; give field names separated by commas, e.g. fields=id,%s", h.cols[min(1, len(h.cols)-1)].name)
			case i < 0:
				return nil, apierrors.InvalidRequest("fields: %s has no field %q; its fields are %s", h.resource.Name, excerpt.Cut(name, 64), h.columnList)
			}
			only[i] = true
		}
	}
	return only, nil
}

// selectedFields returns the fields parameter of the selection only (a
// mask of fields): the names it selects in the resource's order,
// comma-separated.
func (h *handlers) selectedFields(only []bool) string {
	var b strings.Builder
	for i, c := range h.cols {
		if only[i] {
			if b.Len() > 0 {
				b.WriteByte(',')
			}
			b.WriteString(c.name)
		}
	}
	return b.String()
}
