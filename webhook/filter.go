package webhook

import (
	"bytes"
	"encoding/json"
	"fmt"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/events"
	"github.com/waybillhq/waybill/internal/excerpt"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/resource"
)

// This file holds the filter of an endpoint: conditions field:operator:value
// on the events it gets, in the grammar of the list filters of package
// query (filter=), checked when the endpoint is written and evaluated by
// the dispatcher's fan-out on each event's body in memory.

// MaxFilterConditions is how many conditions one endpoint's filter may
// hold.
const MaxFilterConditions = query.MaxFilters

// The pseudo-fields of a filter besides the fields of data.record.
const (
	filterStatusFrom = "status.from"
	filterStatusTo   = "status.to"
	filterChanged    = "changed"
)

// filterOps are the operators a filter condition may use; like and ilike,
// which the list filters also have, are not among them.
var filterOps = []query.Op{query.Eq, query.Ne, query.In, query.Gt, query.Gte, query.Lt, query.Lte, query.IsNull}

// storedCondition is a condition as the endpoint's filter column holds it:
// the condition as the client wrote it, and the type of its field, the
// same in every resource the endpoint's event types name.
type storedCondition struct {
	Condition string `json:"c"`
	Type      string `json:"t"`
}

// typeNamed returns the query.Type whose name is s.
func typeNamed(s string) (query.Type, bool) {
	for t := query.UUID; t <= query.Boolean; t++ {
		if t.String() == s {
			return t, true
		}
	}
	return 0, false
}

// filterSchema returns the fields a filter on the events of r may name, as
// a query.Schema of the list filter grammar: every field of the record,
// with the operators of filterOps its type has; status.from and status.to
// (the resource's status field's values) when the resource has a status
// flow; and changed, whose values are the names of the record's fields,
// with eq, ne and in.
func filterSchema(r *resource.Resource) *query.Schema {
	s := &query.Schema{}
	var names []string
	for _, f := range r.AllFields() {
		names = append(names, f.Name)
		s.Fields = append(s.Fields, query.Field{Name: f.Name, Type: f.Type, Values: f.Values, Filterable: true, Ops: allowedOps(f.Type)})
	}
	if status := r.Field(r.StatusField()); r.StatusField() != "" && status != nil {
		for _, name := range []string{filterStatusFrom, filterStatusTo} {
			s.Fields = append(s.Fields, query.Field{Name: name, Type: status.Type, Values: status.Values, Filterable: true, Ops: allowedOps(status.Type)})
		}
	}
	s.Fields = append(s.Fields, query.Field{Name: filterChanged, Type: query.Enum, Values: names, Filterable: true, Ops: []query.Op{query.Eq, query.Ne, query.In}})
	return s
}

// allowedOps returns the operators of filterOps that a field of type t
// allows.
func allowedOps(t query.Type) []query.Op {
	var ops []query.Op
	for _, op := range query.DefaultOps(t) {
		if slices.Contains(filterOps, op) {
			ops = append(ops, op)
		}
	}
	return ops
}

// patternResources returns the resources of a that the event type patterns
// name: all of them for "*".
func (a *API) patternResources(patterns []string) []*resource.Resource {
	var out []*resource.Resource
	for _, r := range a.Registry.Resources() {
		if slices.ContainsFunc(patterns, func(p string) bool {
			return slices.ContainsFunc([]string{events.Created, events.Updated, events.Deleted, events.StatusChanged}, func(change string) bool {
				return events.Pattern(p).Matches(events.Type(r.Name, change))
			})
		}) {
			out = append(out, r)
		}
	}
	return out
}

// parseFilter checks the conditions of a filter against the resources the
// endpoint's event types name and returns them as the filter column
// stores them. A condition must hold for an event of any of those
// resources: its field must be one of every one of them, of the same type
// in each (status.from and status.to need a status flow in each), and its
// value must parse as that type for each (an enum's value must be one of
// every resource's values). Anything else is refused with the reason.
func (a *API) parseFilter(conditions []string, patterns []string, refuse refusal) ([]storedCondition, error) {
	if len(conditions) == 0 {
		return nil, refuse("filter must hold at least one condition field:operator:value, or be null for every event")
	}
	if len(conditions) > MaxFilterConditions {
		return nil, refuse("filter holds %d conditions; at most %d are allowed", len(conditions), MaxFilterConditions)
	}
	resources := a.patternResources(patterns)
	schemas := make([]*query.Schema, len(resources))
	for i, r := range resources {
		schemas[i] = filterSchema(r)
	}
	out := make([]storedCondition, 0, len(conditions))
	for _, c := range conditions {
		typ := ""
		for i, s := range schemas {
			q, err := s.Parse(url.Values{"filter": {c}})
			if err != nil {
				desc := apierrors.From(err).Description
				// The description names the filter and its field already.
				return nil, refuse("%s (for the events of %s)", desc, resources[i].Name)
			}
			var t string
			for _, f := range s.Fields {
				if f.Name == q.Filters[0].Field {
					t = f.Type.String()
				}
			}
			if typ != "" && t != typ {
				return nil, refuse("filter: %q is of type %s in %s and of type %s in %s; a condition names a field of one type in every resource the event types name",
					q.Filters[0].Field, typ, resources[0].Name, t, resources[i].Name)
			}
			typ = t
		}
		if typ == "" {
			return nil, refuse("filter: %q names no field of the events the endpoint gets", excerpt.Cut(c, 64))
		}
		out = append(out, storedCondition{Condition: c, Type: typ})
	}
	return out, nil
}

// filterConditions returns the conditions of a stored filter as the API
// shows them; nil for no filter.
func filterConditions(f []storedCondition) []string {
	if f == nil {
		return nil
	}
	out := make([]string, len(f))
	for i, c := range f {
		out[i] = c.Condition
	}
	return out
}

// storedFilter returns f as the filter column stores it, nil (NULL) for no
// filter.
func storedFilter(f []storedCondition) any {
	if f == nil {
		return nil
	}
	b, _ := json.Marshal(f) // a []storedCondition always marshals
	return string(b)
}

// readStoredFilter reads the filter column; NULL is no filter (nil).
func readStoredFilter(s *string) ([]storedCondition, error) {
	if s == nil {
		return nil, nil
	}
	var f []storedCondition
	if err := json.Unmarshal([]byte(*s), &f); err != nil {
		return nil, err
	}
	return nonNilConditions(f), nil
}

func nonNilConditions(f []storedCondition) []storedCondition {
	if f == nil {
		return []storedCondition{}
	}
	return f
}

// eventFilter is an endpoint's filter compiled for the dispatcher: every
// value parsed once, as its field's type.
type eventFilter []condition

// condition is one compiled condition.
type condition struct {
	field  string
	op     query.Op
	typ    query.Type
	values []any // as query.Filter.Values
}

// compileFilter compiles a stored filter; nil for no filter.
func compileFilter(stored []storedCondition) (eventFilter, error) {
	if stored == nil {
		return nil, nil
	}
	f := make(eventFilter, 0, len(stored))
	for _, sc := range stored {
		typ, ok := typeNamed(sc.Type)
		if !ok {
			return nil, fmt.Errorf("webhook: filter: unknown type %q", sc.Type)
		}
		name, _, _ := strings.Cut(sc.Condition, ":")
		// An enum's values were checked when the filter was written; here
		// it compares as the string it is.
		ft := typ
		if ft == query.Enum {
			ft = query.String
		}
		s := &query.Schema{Fields: []query.Field{{Name: name, Column: "v", Type: ft, Filterable: true}}, Tiebreaker: name}
		q, err := s.Parse(url.Values{"filter": {sc.Condition}})
		if err != nil {
			return nil, fmt.Errorf("webhook: filter %q: %w", sc.Condition, err)
		}
		qf := q.Filters[0]
		f = append(f, condition{field: qf.Field, op: qf.Op, typ: ft, values: qf.Values})
	}
	return f, nil
}

// eventData is what a filter reads of an event's body: data.record,
// data.changed and data.status.
type eventData struct {
	Data struct {
		Record  map[string]json.RawMessage `json:"record"`
		Changed []string                   `json:"changed"`
		Status  *struct {
			From string `json:"from"`
			To   string `json:"to"`
		} `json:"status"`
	} `json:"data"`
}

// decodeEvent reads what a filter needs of the CloudEvent body.
func decodeEvent(body []byte) (*eventData, error) {
	var e eventData
	if err := json.Unmarshal(body, &e); err != nil {
		return nil, err
	}
	return &e, nil
}

// matches reports whether the event e passes every condition of f. A
// field that the event's record lacks, or holds null, is null: only
// isnull:true holds for it (ne, as in the list filters, never holds for
// null). status.from and status.to are null on every event but a
// status_changed one.
func (f eventFilter) matches(e *eventData) bool {
	for i := range f {
		if !f[i].holds(e) {
			return false
		}
	}
	return true
}

// holds reports whether c holds for e.
func (c *condition) holds(e *eventData) bool {
	if c.field == filterChanged {
		in := func(v any) bool { return slices.Contains(e.Data.Changed, v.(string)) }
		switch c.op {
		case query.Eq, query.In:
			return slices.ContainsFunc(c.values, in)
		case query.Ne:
			return !slices.ContainsFunc(c.values, in)
		}
		return false
	}
	var (
		raw  json.RawMessage
		isSt bool
		st   string
	)
	switch c.field {
	case filterStatusFrom, filterStatusTo:
		isSt = true
		if e.Data.Status != nil {
			st = e.Data.Status.To
			if c.field == filterStatusFrom {
				st = e.Data.Status.From
			}
		}
	default:
		raw = e.Data.Record[c.field]
	}
	null := isSt && e.Data.Status == nil || !isSt && (len(raw) == 0 || bytes.Equal(bytes.TrimSpace(raw), []byte("null")))
	if c.op == query.IsNull {
		return c.values[0].(bool) == null
	}
	if null {
		return false
	}
	var v any
	if isSt {
		v = st
	} else {
		var ok bool
		if v, ok = decodeValue(raw, c.typ); !ok {
			return false
		}
	}
	if c.op == query.In {
		return slices.ContainsFunc(c.values, func(w any) bool { n, ok := compare(v, w); return ok && n == 0 })
	}
	n, ok := compare(v, c.values[0])
	switch c.op {
	case query.Eq:
		return ok && n == 0
	case query.Ne:
		return !ok || n != 0
	case query.Gt:
		return ok && n > 0
	case query.Gte:
		return ok && n >= 0
	case query.Lt:
		return ok && n < 0
	case query.Lte:
		return ok && n <= 0
	}
	return false
}

// decodeValue reads a record's JSON value as a field of type t, with the
// Go type of query.Filter.Values.
func decodeValue(raw json.RawMessage, t query.Type) (any, bool) {
	switch t {
	case query.Integer:
		if n, err := strconv.ParseInt(string(raw), 10, 64); err == nil {
			return n, true
		}
		if f, err := strconv.ParseFloat(string(raw), 64); err == nil {
			return int64(f), true
		}
		return nil, false
	case query.Number:
		f, err := strconv.ParseFloat(string(raw), 64)
		return f, err == nil
	case query.Boolean:
		b, err := strconv.ParseBool(string(raw))
		return b, err == nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil {
		return nil, false
	}
	switch t {
	case query.Timestamp:
		ts, err := time.Parse(time.RFC3339Nano, s)
		return ts, err == nil
	case query.Date:
		d, err := time.Parse(time.DateOnly, s)
		return d, err == nil
	case query.UUID:
		return strings.ToLower(s), true
	}
	return s, true
}

// compare compares two values of one Go type (int64, float64, time.Time,
// string or bool): -1, 0 or +1, and true; false for values that do not
// compare (of two types, or two different booleans, which are unequal but
// neither less nor greater).
func compare(a, b any) (int, bool) {
	switch x := a.(type) {
	case int64:
		if y, ok := b.(int64); ok {
			return cmpOrdered(x, y), true
		}
	case float64:
		if y, ok := b.(float64); ok {
			return cmpOrdered(x, y), true
		}
	case string:
		if y, ok := b.(string); ok {
			return strings.Compare(x, y), true
		}
	case time.Time:
		if y, ok := b.(time.Time); ok {
			return x.Compare(y), true
		}
	case bool:
		if y, ok := b.(bool); ok && x == y {
			return 0, true
		}
	}
	return 0, false
}

func cmpOrdered[T int64 | float64](a, b T) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}
