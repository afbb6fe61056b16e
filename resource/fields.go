package resource

import (
	"net/http"
	"slices"
	"strings"

	apierrors "github.com/waybillhq/waybill/errors"
)

// fieldsParam is the query parameter of field selection: fields=id,status
// returns only those fields of each record (id always), on GET of a list or
// of one record. The order of the fields in the answer is the resource's,
// not the parameter's.
const fieldsParam = "fields"

// fields returns which columns the fields parameter of r selects, as a mask
// over h.cols, or nil without the parameter. An unknown or empty name is
// 400 invalid_request naming the fields there are.
func (h *handlers) fields(r *http.Request) ([]bool, error) {
	if !strings.Contains(r.URL.RawQuery, fieldsParam) {
		return nil, nil
	}
	values, ok := r.URL.Query()[fieldsParam]
	if !ok {
		return nil, nil
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
				return nil, apierrors.InvalidRequest("fields: %s has no field %q; its fields are %s", h.resource.Name, truncate(name, 64), strings.Join(h.names, ", "))
			}
			only[i] = true
		}
	}
	return only, nil
}
