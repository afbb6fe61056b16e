package webhook

import (
	"bytes"
	"encoding/json"
	"maps"
	"net/http"
	"net/url"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/internal/excerpt"
	"github.com/waybillhq/waybill/internal/httpbody"
	"github.com/waybillhq/waybill/query"
)

// This file reads request bodies and query parameters and writes the JSON
// answers of the API.

// refusal makes the 400 of a body that fails validation: invalid_create
// for POST, invalid_update for PATCH.
type refusal func(format string, args ...any) *apierrors.Error

// readBody reads a request body that must be application/json, at most
// MaxBodyBytes, and one JSON object whose member names are all in allowed.
func readBody(w http.ResponseWriter, r *http.Request, allowed []string, refuse refusal) (map[string]json.RawMessage, error) {
	body, err := httpbody.JSON(w, r, MaxBodyBytes)
	if err != nil {
		return nil, err
	}
	var members map[string]json.RawMessage
	if err := json.Unmarshal(body, &members); err != nil || members == nil {
		return nil, apierrors.InvalidRequest("the body must be one JSON object")
	}
	if name, ok := duplicate(body); ok {
		return nil, apierrors.InvalidRequest("the body names %q twice", excerpt.Cut(name, 64))
	}
	for _, name := range slices.Sorted(maps.Keys(members)) {
		if !slices.Contains(allowed, name) {
			return nil, refuse("the body may not set %q; it takes %s", excerpt.Cut(name, 64), strings.Join(allowed, ", "))
		}
	}
	return members, nil
}

// duplicate returns a member name that body, one JSON object, has twice.
func duplicate(body []byte) (string, bool) {
	dec := json.NewDecoder(bytes.NewReader(body))
	if tok, err := dec.Token(); err != nil || tok != json.Delim('{') {
		return "", false
	}
	seen := map[string]bool{}
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return "", false
		}
		name, _ := tok.(string)
		if seen[name] {
			return name, true
		}
		seen[name] = true
		var value json.RawMessage
		if err := dec.Decode(&value); err != nil {
			return "", false
		}
	}
	return "", false
}

// isNull reports whether raw is the JSON null.
func isNull(raw json.RawMessage) bool { return strings.TrimSpace(string(raw)) == "null" }

// decodeString reads the string member name.
func decodeString(raw json.RawMessage, name string, refuse refusal) (string, error) {
	var s string
	if isNull(raw) || json.Unmarshal(raw, &s) != nil {
		return "", refuse("%s must be a string", name)
	}
	return s, nil
}

// decodeStrings reads the member name, an array of strings.
func decodeStrings(raw json.RawMessage, name string, refuse refusal) ([]string, error) {
	var l []string
	if isNull(raw) || json.Unmarshal(raw, &l) != nil {
		return nil, refuse("%s must be an array of strings", name)
	}
	return l, nil
}

// dedupe returns l without repeated strings, in the order of first
// appearance.
func dedupe(l []string) []string {
	out := make([]string, 0, len(l))
	for _, s := range l {
		if !slices.Contains(out, s) {
			out = append(out, s)
		}
	}
	return out
}

// newID returns the id of a new endpoint: a UUID version 7.
func newID() string { return uuid.Must(uuid.NewV7()).String() }

// jsonTime is a timestamp as the API writes it: RFC 3339 in UTC with
// microseconds, as the resource API writes its timestamps.
type jsonTime time.Time

// MarshalJSON writes t in query.SQLiteTimestampLayout.
func (t jsonTime) MarshalJSON() ([]byte, error) {
	return strconv.AppendQuote(nil, time.Time(t).UTC().Format(query.SQLiteTimestampLayout)), nil
}

// timePtr returns t as a *jsonTime, nil for the zero time.
func timePtr(t time.Time) *jsonTime {
	if t.IsZero() {
		return nil
	}
	j := jsonTime(t)
	return &j
}

// envelope is the answer of one object.
type envelope struct {
	Data    any    `json:"data"`
	Version string `json:"version"`
}

// writeJSON writes v as the JSON answer with status; when v does not
// encode it writes nothing and returns the error to answer.
func writeJSON(w http.ResponseWriter, status int, v any) error {
	body, err := json.Marshal(v)
	if err != nil {
		return apierrors.Internal(err)
	}
	w.Header().Set("Content-Type", "application/json")
	w.Header().Set("Content-Length", strconv.Itoa(len(body)+1))
	w.WriteHeader(status)
	_, _ = w.Write(append(body, '\n'))
	return nil
}

// queryParams parses the query of r, refusing a parameter not in allowed
// and one given twice.
func queryParams(r *http.Request, allowed ...string) (map[string]string, error) {
	vals, err := url.ParseQuery(r.URL.RawQuery)
	if err != nil {
		return nil, apierrors.InvalidRequest("the query string does not parse")
	}
	out := map[string]string{}
	for name, v := range vals {
		if !slices.Contains(allowed, name) {
			return nil, apierrors.InvalidRequest("unknown query parameter %q; this route takes %s", excerpt.Cut(name, 64), strings.Join(allowed, ", "))
		}
		if len(v) > 1 {
			return nil, apierrors.InvalidRequest("the query parameter %s is given twice", name)
		}
		out[name] = v[0]
	}
	return out, nil
}

// intParam reads the integer parameter name of params, def when absent,
// which must be within [min, max].
func intParam(params map[string]string, name string, def, lo, hi int) (int, error) {
	s, ok := params[name]
	if !ok {
		return def, nil
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < lo || n > hi {
		return 0, apierrors.InvalidRequest("%s must be an integer from %d to %d", name, lo, hi)
	}
	return n, nil
}
