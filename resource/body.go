package resource

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/internal/excerpt"
	"github.com/waybillhq/waybill/internal/httpbody"
	"github.com/waybillhq/waybill/query"
)

// MaxBodyBytes is the largest request body accepted: 1 MiB; a larger one
// is answered 413.
const MaxBodyBytes = 1 << 20

// defaultMaxLength bounds String fields that declare no MaxLength.
const defaultMaxLength = 1000

// member is one member of a JSON object body, in the order sent.
type member struct {
	name  string
	value json.RawMessage
}

// readObject reads a request body that must be application/json and one
// JSON object, with no member named twice. accept is asked about each
// member's name as it is read, before its value, and may refuse it: the
// reading stops at the first refusal, which is returned. A body over
// MaxBodyBytes is 413; anything else wrong is 400 invalid_request.
func readObject(w http.ResponseWriter, r *http.Request, accept func(name string) error, maxMembers int) ([]member, error) {
	body, err := httpbody.JSON(w, r, MaxBodyBytes)
	if err != nil {
		return nil, err
	}
	return decodeObject(body, accept, maxMembers)
}

// decodeObject parses body, one JSON object, into its members in the order
// sent. Its time is linear in the body's length: the names seen are kept
// in a set, and the reading stops at the first name that accept (when not
// nil) refuses, returning accept's error, or at the member after
// maxMembers (when positive). A name sent twice is 400 invalid_request, as
// is a body that is not one JSON object.
func decodeObject(body []byte, accept func(name string) error, maxMembers int) ([]member, error) {
	notObject := apierrors.InvalidRequest("the body must be one JSON object")
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.UseNumber()
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return nil, notObject
	}
	var members []member
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, notObject
		}
		name := tok.(string) // inside an object every key is a string
		if seen[name] {
			return nil, apierrors.InvalidRequest("the body names %q twice", excerpt.Cut(name, 64))
		}
		seen[name] = true
		if accept != nil {
			if err := accept(name); err != nil {
				return nil, err
			}
		}
		if maxMembers > 0 && len(members) == maxMembers {
			return nil, apierrors.InvalidRequest("the body has more than %d members", maxMembers)
		}
		var raw json.RawMessage
		if err := dec.Decode(&raw); err != nil {
			return nil, notObject
		}
		members = append(members, member{name, raw})
	}
	if tok, err := dec.Token(); err != nil || tok != json.Delim('}') {
		return nil, notObject
	}
	if _, err := dec.Token(); err != io.EOF {
		return nil, notObject
	}
	return members, nil
}

// readChanges reads the body of a POST (create) or PATCH and validates it
// against the resource (see changes). Each name is checked as it is read,
// so a body is refused at its first member the resource does not take,
// however many follow, and never has more members than the resource has
// fields.
func (r *Resource) readChanges(w http.ResponseWriter, req *http.Request, create bool) (Record, error) {
	accept := func(name string) error {
		_, err := r.writableField(name, create)
		return err
	}
	members, err := readObject(w, req, accept, len(r.fields))
	if err != nil {
		return nil, err
	}
	return r.changes(members, create)
}

// decodeChanges parses body, which must be one JSON object, and validates
// it as readChanges does.
func (r *Resource) decodeChanges(body []byte, create bool) (Record, error) {
	members, err := decodeObject(body, func(name string) error {
		_, err := r.writableField(name, create)
		return err
	}, len(r.fields))
	if err != nil {
		return nil, err
	}
	return r.changes(members, create)
}

// writableField returns the field that a member of a POST (create) or
// PATCH body named name sets, or the refusal: invalid_create on POST and
// invalid_update on PATCH, naming the field.
func (r *Resource) writableField(name string, create bool) (*Field, error) {
	refuse := apierrors.InvalidUpdate
	if create {
		refuse = apierrors.InvalidCreate
	}
	f := r.Field(name)
	switch {
	case name == OrganizationColumn || name == BranchColumn:
		return nil, refuse("%s is set by the server and cannot be sent", name)
	case f == nil:
		return nil, refuse("unknown field %q; fields that may be sent: %s", excerpt.Cut(name, 64), quoteList(r.writable(create)))
	case create && !f.Create:
		return nil, refuse("%s cannot be set on create; fields that may be sent: %s", name, quoteList(r.writable(true)))
	case !create && !f.Update:
		return nil, refuse("%s cannot be changed; fields that may be sent: %s", name, quoteList(r.writable(false)))
	}
	return f, nil
}

// changes validates the members of a POST (create) or PATCH body against
// the resource's whitelists and field types and returns them as a Record.
// Every refusal is invalid_create on POST and invalid_update on PATCH, and
// names the field.
func (r *Resource) changes(members []member, create bool) (Record, error) {
	refuse := apierrors.InvalidUpdate
	if create {
		refuse = apierrors.InvalidCreate
	}
	rec, err := r.decodeMembers(members, refuse, func(name string) error {
		_, err := r.writableField(name, create)
		return err
	})
	if err != nil {
		return nil, err
	}
	if create {
		if missing := r.missing(rec); missing != "" {
			return nil, refuse("%s", missing)
		}
	}
	return rec, nil
}

// decodeMembers decodes the members of a body that accept takes into a
// Record; a value the field does not take is refused with refuse, naming
// the field.
func (r *Resource) decodeMembers(members []member, refuse func(string, ...any) *apierrors.Error, accept func(name string) error) (Record, error) {
	rec := make(Record, len(members))
	for _, m := range members {
		if err := accept(m.name); err != nil {
			return nil, err
		}
		f := r.Field(m.name)
		v, err := f.decode(m.value)
		if err != nil {
			return nil, refuse("%s: %s", f.Name, err.Error())
		}
		rec[f.Name] = v
	}
	return rec, nil
}

// missing says which required fields a new record with rec lacks: "" when
// none, else "x is required" or "x, y and z are required".
func (r *Resource) missing(rec Record) string {
	var missing []string
	for _, f := range r.fields {
		if f.Required && rec[f.Name] == nil {
			missing = append(missing, f.Name)
		}
	}
	switch len(missing) {
	case 0:
		return ""
	case 1:
		return missing[0] + " is required"
	}
	last := len(missing) - 1
	return strings.Join(missing[:last], ", ") + " and " + missing[last] + " are required"
}

// decode parses a JSON value of the field, checking its JSON kind, its
// type, and its bounds.
func (f *Field) decode(raw json.RawMessage) (any, error) {
	if string(raw) == "null" {
		if !f.Nullable || f.Required {
			return nil, errors.New("may not be null")
		}
		return nil, nil
	}
	qf := query.Field{Name: f.Name, Type: f.Type, Values: f.Values}
	var text string
	switch f.Type {
	case query.Integer, query.Number:
		if raw[0] != '-' && (raw[0] < '0' || raw[0] > '9') {
			return nil, wrongKind(raw, typeWord(f.Type))
		}
		text = string(raw)
	case query.Boolean:
		if string(raw) != "true" && string(raw) != "false" {
			return nil, wrongKind(raw, "true or false")
		}
		text = string(raw)
	default:
		if err := json.Unmarshal(raw, &text); err != nil {
			return nil, wrongKind(raw, "a string")
		}
	}
	v, err := qf.ParseValue(text)
	if err != nil {
		if f.Type == query.Integer || f.Type == query.Number {
			// A JSON number, shown as it was sent: not quoted as the
			// filter value of query's message is.
			return nil, errors.New(excerpt.Cut(text, 64) + " is not " + typeWord(f.Type))
		}
		return nil, err
	}
	switch f.Type {
	case query.String:
		max := f.MaxLength
		if max == 0 {
			max = defaultMaxLength
		}
		if n := utf8.RuneCountInString(text); n > max {
			return nil, errors.New("is longer than " + itoa(max) + " characters")
		}
		if strings.IndexByte(text, 0) >= 0 {
			return nil, errors.New("may not contain NUL characters")
		}
		if f.visible {
			if text == "" {
				return nil, errors.New("may not be empty; send null for none")
			}
			if strings.ContainsFunc(text, func(c rune) bool { return !unicode.IsGraphic(c) || unicode.IsSpace(c) }) {
				return nil, errors.New("may hold visible characters only: no spaces and no control characters")
			}
		}
	case query.Integer, query.Number:
		n := toFloat(v)
		if f.Min != nil && n < *f.Min {
			return nil, errors.New("must be at least " + formatBound(*f.Min))
		}
		if f.Max != nil && n > *f.Max {
			return nil, errors.New("must be at most " + formatBound(*f.Max))
		}
	case query.Date:
		v = v.(time.Time).Format(time.DateOnly)
	case query.Timestamp:
		v = v.(time.Time).Truncate(time.Microsecond)
	}
	return v, nil
}

// typeWord names what a value of the numeric type t is, with its article.
func typeWord(t query.Type) string {
	if t == query.Integer {
		return "an integer"
	}
	return "a number"
}

// wrongKind is the refusal of raw, a JSON value that is not null and of another
// kind than the field's, which wants a value that is want ("a number"): it
// shows a string, number or boolean as it was sent and says what it is.
func wrongKind(raw json.RawMessage, want string) error {
	var kind string
	switch c := raw[0]; {
	case c == '"':
		kind = "a string"
	case c == 't' || c == 'f':
		kind = "a boolean"
	case c == '-' || (c >= '0' && c <= '9'):
		kind = "a number"
	default:
		return errors.New("must be " + want)
	}
	return errors.New(excerpt.Cut(string(raw), 64) + " is " + kind + ", not " + want)
}

func toFloat(v any) float64 {
	switch n := v.(type) {
	case int64:
		return float64(n)
	case float64:
		return n
	}
	return 0
}

func formatBound(f float64) string { return string(appendFloat(nil, f)) }

func itoa(n int) string { return string(appendJSON(nil, int64(n))) }
