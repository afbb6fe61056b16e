package resource

import (
	"bytes"
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"

	"github.com/stretchr/testify/require"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/tenancy"
)

// bodyResource is a resource with a field of each kind the body reader
// decodes, for the body tests and benchmarks.
func bodyResource(tb testing.TB) *Resource {
	tb.Helper()
	r := &Resource{
		Name: "accounts", ScopeType: tenancy.Branch,
		Fields: []Field{
			{Name: "company_name", Type: query.String, Create: true, Update: true, Required: true, MaxLength: 200},
			{Name: "comment", Type: query.String, Create: true, Update: true, Nullable: true},
			{Name: "account_type", Type: query.Enum, Values: []string{"customer", "carrier"}, Create: true, Update: true, Required: true},
			{Name: "weight_kg", Type: query.Number, Create: true, Update: true, Nullable: true, Min: Bound(0)},
			{Name: "active", Type: query.Boolean, Create: true, Update: true},
		},
	}
	if err := r.compile(); err != nil {
		tb.Fatal(err)
	}
	return r
}

// parseBody runs what a POST does with a body before it touches the
// database: read it and validate its members against r.
func parseBody(r *Resource, body []byte) error {
	req := httptest.NewRequest(http.MethodPost, "/v1/x/accounts", bytes.NewReader(body))
	req.Header.Set("Content-Type", "application/json")
	_, err := r.readChanges(httptest.NewRecorder(), req, true)
	return err
}

// worstBodies are bodies of at most MaxBodyBytes that cost a JSON reader
// the most: many members, deep nesting, long strings.
func worstBodies() map[string][]byte {
	const size = MaxBodyBytes
	bodies := map[string][]byte{}

	// As many distinct members as fit, with short keys counted in base 36;
	// then the same after one known member, so that a reader that validates
	// only after reading meets them all.
	bodies["many keys"] = manyKeys("{")
	bodies["many keys after a known one"] = manyKeys(`{"company_name":"x",`)

	// A known field's value nested as deep as the body allows.
	depth := (size - 64) / 2
	bodies["deep nesting"] = []byte(`{"comment":` + strings.Repeat("[", depth) + strings.Repeat("]", depth) + `}`)

	// A known field's string as long as the body allows, plain and escaped.
	bodies["long string"] = []byte(`{"comment":"` + strings.Repeat("x", size-64) + `"}`)
	bodies["long escaped string"] = []byte(`{"comment":"` + strings.Repeat(`\u00e9`, (size-64)/6) + `"}`)

	// One key as long as the body allows.
	bodies["long key"] = []byte(`{"` + strings.Repeat("k", size-64) + `":0}`)
	return bodies
}

// manyKeys returns start followed by as many distinct members "<key>":0 as
// fit in MaxBodyBytes, and the closing brace.
func manyKeys(start string) []byte {
	b := bytes.NewBufferString(start)
	for i := 0; ; i++ {
		member := `"` + strconv.FormatInt(int64(i), 36) + `":0`
		if b.Len()+len(member)+2 > MaxBodyBytes {
			break
		}
		if i > 0 {
			b.WriteByte(',')
		}
		b.WriteString(member)
	}
	b.WriteByte('}')
	return b.Bytes()
}

// BenchmarkBody measures reading and validating the worst bodies of at most
// 1 MiB. Each must cost milliseconds, not seconds.
func BenchmarkBody(b *testing.B) {
	r := bodyResource(b)
	for name, body := range worstBodies() {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				_ = parseBody(r, body)
			}
		})
	}
}

// BenchmarkDecodeObject measures the JSON object reader alone on the worst
// bodies, without the early stop of a resource's names: every member is
// read, and the duplicate check stays linear.
func BenchmarkDecodeObject(b *testing.B) {
	for name, body := range worstBodies() {
		b.Run(name, func(b *testing.B) {
			b.ReportAllocs()
			b.SetBytes(int64(len(body)))
			for b.Loop() {
				_, _ = decodeObject(body, nil, 0)
			}
		})
	}
}

// FuzzBody feeds the body reader any bytes. It never panics; it accepts
// exactly the JSON objects that encoding/json finds valid and whose members
// have distinct names, with the members encoding/json reads; and every
// refusal, of the reader or of a resource's validation, is a 400 of the
// API's error model.
func FuzzBody(f *testing.F) {
	for _, seed := range []string{
		`{}`, ` { "a" : 1 , "b" : [1, {"c": null}] } `, `{"company_name":"x","account_type":"customer"}`,
		`{"a":1,"a":2}`, `{"a":1,"\u0061":2}`, `{"\ud800":1,"\udc00":2}`, "{\"\xff\":1,\"\xfe\":2}",
		`{"a":1}{}`, `{"a":1,}`, `{"a" 1}`, `{,}`, `[]`, `null`, `"x"`, ``, `{`, `{"a":[[[[]]]]}`,
		`{"weight_kg":-0.5e3,"active":true,"comment":null}`, `{"weight_kg":"5"}`, `{"comment":"a\u0000b"}`,
		"\ufeff{}", `{"organization_id":1}`, `{"id":"x"}`,
	} {
		f.Add([]byte(seed))
	}
	r := bodyResource(f)
	f.Fuzz(func(t *testing.T, body []byte) {
		members, err := decodeObject(body, nil, 0)
		var want map[string]json.RawMessage
		object := json.Valid(body) && bytes.HasPrefix(bytes.TrimLeft(body, " \t\r\n"), []byte("{"))
		if object {
			require.NoError(t, json.Unmarshal(body, &want))
		}
		if err == nil {
			require.True(t, object, "accepted what encoding/json does not read as an object")
			require.Len(t, members, len(want), "names are distinct")
			for _, m := range members {
				require.Contains(t, want, m.name)
				require.Equal(t, string(want[m.name]), string(m.value))
			}
		} else {
			assertBadRequest(t, err)
			if object {
				require.Greater(t, topLevelMembers(t, body), len(want), "refused a valid object without a duplicate name: %v", err)
			}
		}

		// A resource's reading of the same body: it stops early, and may
		// refuse what the reader accepts, but only with a 400.
		for _, create := range []bool{true, false} {
			accept := func(name string) error {
				_, err := r.writableField(name, create)
				return err
			}
			members, err := decodeObject(body, accept, len(r.fields))
			if err == nil {
				_, err = r.changes(members, create)
			}
			if err != nil {
				assertBadRequest(t, err)
			}
		}
	})
}

// assertBadRequest checks that err is an *apierrors.Error with status 400.
func assertBadRequest(t *testing.T, err error) {
	t.Helper()
	e, ok := apierrors.As(err)
	require.True(t, ok, "not an API error: %#v", err)
	require.Equal(t, http.StatusBadRequest, e.Status, "%v", err)
}

// topLevelMembers counts the members of the JSON object body, names sent
// twice included, with encoding/json's tokenizer.
func topLevelMembers(t *testing.T, body []byte) int {
	t.Helper()
	dec := json.NewDecoder(bytes.NewReader(body))
	_, err := dec.Token()
	require.NoError(t, err)
	n := 0
	for dec.More() {
		_, err := dec.Token()
		require.NoError(t, err)
		var v json.RawMessage
		require.NoError(t, dec.Decode(&v))
		n++
	}
	return n
}

// The reader stops at the first name a resource refuses, or at the member
// after the last it may hold, and never reads what follows.
func TestDecodeObjectStopsEarly(t *testing.T) {
	t.Parallel()
	r := bodyResource(t)
	tail := `,"1":0,"2":0` // and no closing brace: the rest is never read
	tests := []struct {
		name, body string
		create     bool
		members    int
		code, says string
	}{
		{name: "unknown field first", body: `{"fax":1` + tail, create: true, code: "invalid_create", says: `unknown field "fax"`},
		{name: "unknown field after known ones", body: `{"company_name":"x","fax":1` + tail, create: true, code: "invalid_create", says: `unknown field "fax"`},
		{name: "unknown field on PATCH", body: `{"fax":1` + tail, code: "invalid_update", says: `unknown field "fax"`},
		{name: "a tenant column", body: `{"branch_id":1` + tail, create: true, code: "invalid_create", says: "set by the server"},
		{name: "a field not created", body: `{"id":1` + tail, create: true, code: "invalid_create", says: "id cannot be set on create"},
		{name: "a field not changed", body: `{"created_at":1` + tail, code: "invalid_update", says: "created_at cannot be changed"},
		{name: "a name twice", body: `{"comment":"a","comment":"b"` + tail, create: true, code: "invalid_request", says: `names "comment" twice`},
		{name: "more members than fields", body: `{"comment":"a","active":true` + tail, create: true, members: 1, code: "invalid_request", says: "more than 1 members"},
		{name: "a long unknown name is cut in the message", body: `{"` + strings.Repeat("k", 1000) + `":1` + tail, create: true, code: "invalid_create", says: strings.Repeat("k", 64) + `…"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			members := tt.members
			if members == 0 {
				members = len(r.fields)
			}
			accept := func(name string) error {
				_, err := r.writableField(name, tt.create)
				return err
			}
			_, err := decodeObject([]byte(tt.body), accept, members)
			e, ok := apierrors.As(err)
			require.True(t, ok, "%v", err)
			require.Equal(t, tt.code, e.Code)
			require.Contains(t, e.Description, tt.says)
		})
	}
}

// Without a resource's names the reader reads every member, however many,
// and still refuses a name sent twice.
func TestDecodeObjectManyMembers(t *testing.T) {
	t.Parallel()
	body := manyKeys("{")
	members, err := decodeObject(body, nil, 0)
	require.NoError(t, err)
	require.Greater(t, len(members), 100_000)
	require.Equal(t, "0", members[0].name)

	dup := append(bytes.TrimSuffix(body, []byte("}")), `,"0":1}`...)
	_, err = decodeObject(dup, nil, 0)
	require.ErrorContains(t, err, `names "0" twice`)
}

// TestBodyRefusalMessages checks the invalid_create descriptions of bodies
// with values of the wrong kind, shown as they were sent, and of bodies that
// lack required fields, all of them named.
func TestBodyRefusalMessages(t *testing.T) {
	r := &Resource{
		Name: "quotations", ScopeType: tenancy.Branch,
		Fields: []Field{
			{Name: "account_id", Type: query.UUID, Create: true, Required: true},
			{Name: "quotation_date", Type: query.Date, Create: true, Required: true},
			{Name: "valid_until", Type: query.Date, Create: true, Required: true},
			{Name: "total_packages", Type: query.Integer, Create: true, Nullable: true},
			{Name: "total_weight_kg", Type: query.Number, Create: true, Nullable: true},
			{Name: "insured", Type: query.Boolean, Create: true},
			{Name: "comment", Type: query.String, Create: true, Nullable: true},
		},
	}
	require.NoError(t, r.compile())
	const valid = `"account_id":"5eed0000-0000-4000-8000-0000000000b1","quotation_date":"2026-01-01","valid_until":"2026-01-02"`
	tests := []struct {
		name, body, want string
	}{
		{"fraction for an integer", `{` + valid + `,"total_packages":1.5}`, "total_packages: 1.5 is not an integer"},
		{"exponent for an integer", `{` + valid + `,"total_packages":1e3}`, "total_packages: 1e3 is not an integer"},
		{"string for an integer", `{` + valid + `,"total_packages":"1.5"}`, `total_packages: "1.5" is a string, not an integer`},
		{"string for a number", `{` + valid + `,"total_weight_kg":"5"}`, `total_weight_kg: "5" is a string, not a number`},
		{"boolean for a number", `{` + valid + `,"total_weight_kg":true}`, "total_weight_kg: true is a boolean, not a number"},
		{"object for a number", `{` + valid + `,"total_weight_kg":{}}`, "total_weight_kg: must be a number"},
		{"number too large", `{` + valid + `,"total_weight_kg":1e999}`, "total_weight_kg: 1e999 is not a number"},
		{"string for a boolean", `{` + valid + `,"insured":"true"}`, `insured: "true" is a string, not true or false`},
		{"number for a string", `{` + valid + `,"comment":5}`, "comment: 5 is a number, not a string"},
		{"array for a string", `{` + valid + `,"comment":[]}`, "comment: must be a string"},
		{"long string for an integer", `{` + valid + `,"total_packages":"` + strings.Repeat("9", 100) + `"}`,
			`total_packages: "` + strings.Repeat("9", 63) + `… is a string, not an integer`},
		{"one required missing", `{"account_id":"5eed0000-0000-4000-8000-0000000000b1","quotation_date":"2026-01-01"}`, "valid_until is required"},
		{"two required missing", `{"account_id":"5eed0000-0000-4000-8000-0000000000b1"}`, "quotation_date and valid_until are required"},
		{"all required missing", `{"comment":"x"}`, "account_id, quotation_date and valid_until are required"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := parseBody(r, []byte(tt.body))
			e, ok := apierrors.As(err)
			require.True(t, ok, "not an API error: %#v", err)
			require.Equal(t, apierrors.CodeInvalidCreate, e.Code)
			require.Equal(t, tt.want, e.Description)
		})
	}
}
