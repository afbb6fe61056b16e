package main

// The served OpenAPI document as a client generator or a validating proxy
// reads it: every real answer of the server validates, with an independent
// JSON Schema 2020-12 validator, against the schema the document gives for
// its operation and status, and carries the headers the document says it
// always carries.

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"math"
	"mime"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// oavURL is the base URL the document is compiled under; the schemas are
// addressed by JSON pointers into it.
const oavURL = "https://waybill.test/openapi.json"

// oavDoc is a served OpenAPI document, compiled for validating answers.
type oavDoc struct {
	doc      map[string]any
	compiler *jsonschema.Compiler
	mu       sync.Mutex
	schemas  map[string]*jsonschema.Schema // by JSON pointer
	seen     map[string]bool               // "operationId status" of every answer validated
}

// oavLoad fetches the document base serves at /v1/openapi.json and compiles
// it as one resource, asserting formats: the JSON Schema ones, and the
// OpenAPI ones of numbers (int32, int64, double), whose values must fit.
func oavLoad(t *testing.T, base string) *oavDoc {
	t.Helper()
	res, body := get(t, http.MethodGet, base+"/v1/openapi.json")
	require.Equal(t, http.StatusOK, res.StatusCode, body)
	return oavCompile(t, body)
}

// oavCompile compiles the document body (see oavLoad).
func oavCompile(t *testing.T, body string) *oavDoc {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(strings.NewReader(body))
	require.NoError(t, err)
	c := jsonschema.NewCompiler()
	c.DefaultDraft(jsonschema.Draft2020)
	c.AssertFormat()
	for _, f := range oavNumberFormats() {
		c.RegisterFormat(f)
	}
	require.NoError(t, c.AddResource(oavURL, doc))
	return &oavDoc{doc: doc.(map[string]any), compiler: c, schemas: map[string]*jsonschema.Schema{}, seen: map[string]bool{}}
}

// oavNumberFormats are the OpenAPI formats of numbers: a value must be an
// integer of 32 or 64 bits, or a number a double holds.
func oavNumberFormats() []*jsonschema.Format {
	integer := func(bits int) func(v any) error {
		return func(v any) error {
			n, ok := v.(json.Number)
			if !ok {
				return nil
			}
			_, err := strconv.ParseInt(string(n), 10, bits)
			return err
		}
	}
	double := func(v any) error {
		n, ok := v.(json.Number)
		if !ok {
			return nil
		}
		f, err := strconv.ParseFloat(string(n), 64)
		if err == nil && (math.IsInf(f, 0) || math.IsNaN(f)) {
			err = errors.New("not a finite double")
		}
		return err
	}
	return []*jsonschema.Format{
		{Name: "int32", Validate: integer(32)},
		{Name: "int64", Validate: integer(64)},
		{Name: "double", Validate: double},
	}
}

// oavPointer escapes a JSON pointer token.
func oavPointer(token string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(token)
}

// resolve follows a local $ref of v, of one level, and returns the
// object and its JSON pointer (ptr when v is no reference).
func (d *oavDoc) resolve(t *testing.T, v any, ptr string) (map[string]any, string) {
	t.Helper()
	m, ok := v.(map[string]any)
	require.True(t, ok, "%s is not an object", ptr)
	ref, ok := m["$ref"].(string)
	if !ok {
		return m, ptr
	}
	require.True(t, strings.HasPrefix(ref, "#/"), "%s: a $ref out of the document: %s", ptr, ref)
	var cur any = d.doc
	for _, tok := range strings.Split(strings.TrimPrefix(ref, "#/"), "/") {
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		obj, ok := cur.(map[string]any)
		require.True(t, ok, "%s: %s does not resolve", ptr, ref)
		cur, ok = obj[tok]
		require.True(t, ok, "%s: %s does not resolve", ptr, ref)
	}
	return d.resolve(t, cur, ref)
}

// schema returns the compiled schema at the JSON pointer ptr.
func (d *oavDoc) schema(t *testing.T, ptr string) *jsonschema.Schema {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	if s, ok := d.schemas[ptr]; ok {
		return s
	}
	s, err := d.compiler.Compile(oavURL + ptr)
	require.NoError(t, err, "compile %s", ptr)
	d.schemas[ptr] = s
	return s
}

// operation returns the path template of the document that path matches
// (the one with the most literal segments), its operation of method, and
// the operation's JSON pointer.
func (d *oavDoc) operation(t *testing.T, method, path string) (map[string]any, string) {
	t.Helper()
	segments := strings.Split(path, "/")
	best, bestLiterals := "", -1
	for tmpl := range d.doc["paths"].(map[string]any) {
		parts := strings.Split(tmpl, "/")
		if len(parts) != len(segments) {
			continue
		}
		literals := 0
		for i, p := range parts {
			switch {
			case strings.HasPrefix(p, "{") && strings.HasSuffix(p, "}"):
			case p == segments[i]:
				literals++
			default:
				literals = -1
			}
			if literals < 0 {
				break
			}
		}
		if literals > bestLiterals {
			best, bestLiterals = tmpl, literals
		}
	}
	require.NotEmpty(t, best, "no path of the document matches %s", path)
	item := d.doc["paths"].(map[string]any)[best].(map[string]any)
	op, ok := item[strings.ToLower(method)].(map[string]any)
	require.True(t, ok, "the document has no %s %s", method, best)
	return op, "#/paths/" + oavPointer(best) + "/" + strings.ToLower(method)
}

// check validates a, the answer to method path, and fails the test with
// every problem it finds (see problems).
func (d *oavDoc) check(t *testing.T, method, path string, a swAnswer) {
	t.Helper()
	id, problems := d.problems(t, method, path, a)
	what := fmt.Sprintf("%s %s (%s) → %d", method, path, id, a.status)
	for _, p := range problems {
		t.Errorf("%s: %s\nbody: %s", what, p, a.body)
	}
}

// problems validates a, the answer to method path: its status is
// documented for the operation, its body is of a documented media type and
// of its schema, and it carries every header the response declares
// required, each of its schema. It returns the operationId and what does
// not hold; an answer of a documented status counts as seen.
func (d *oavDoc) problems(t *testing.T, method, path string, a swAnswer) (id string, problems []string) {
	t.Helper()
	op, opPtr := d.operation(t, method, path)
	id, _ = op["operationId"].(string)
	responses := op["responses"].(map[string]any)
	key := strconv.Itoa(a.status)
	if _, ok := responses[key]; !ok {
		key = strconv.Itoa(a.status/100) + "XX"
	}
	if _, ok := responses[key]; !ok {
		key = "default"
	}
	raw, ok := responses[key]
	if !ok {
		return id, []string{"the document does not describe this status"}
	}
	resp, respPtr := d.resolve(t, raw, opPtr+"/responses/"+key)
	problems = append(d.bodyProblems(t, resp, respPtr, a), d.headerProblems(t, resp, respPtr, a)...)
	d.mu.Lock()
	d.seen[id+" "+strconv.Itoa(a.status)] = true
	d.mu.Unlock()
	return id, problems
}

func (d *oavDoc) bodyProblems(t *testing.T, resp map[string]any, respPtr string, a swAnswer) []string {
	t.Helper()
	content, _ := resp["content"].(map[string]any)
	if len(content) == 0 {
		if a.body != "" {
			return []string{"the document describes no body, the answer has one"}
		}
		return nil
	}
	mt, _, err := mime.ParseMediaType(a.header.Get("Content-Type"))
	if err != nil || content[mt] == nil {
		return []string{fmt.Sprintf("Content-Type %q is none of the document's %v", a.header.Get("Content-Type"), slices.Sorted(maps.Keys(content)))}
	}
	ptr := respPtr + "/content/" + oavPointer(mt) + "/schema"
	var docs []string
	switch mt {
	case "application/x-ndjson": // the schema is each line's
		docs = strings.SplitAfter(a.body, "\n")
		if last := len(docs) - 1; docs[last] == "" {
			docs = docs[:last]
		} else {
			return []string{"the last line of an NDJSON body has no end"}
		}
	case "text/csv": // the schema is the body's, a string
		raw, _ := json.Marshal(a.body)
		docs = []string{string(raw)}
	default:
		docs = []string{a.body}
	}
	for _, doc := range docs {
		body, err := jsonschema.UnmarshalJSON(strings.NewReader(doc))
		if err != nil {
			return []string{"the body is not JSON: " + err.Error()}
		}
		if err := d.schema(t, ptr).Validate(body); err != nil {
			return []string{fmt.Sprintf("the body does not validate against %s:\n%v", ptr, err)}
		}
	}
	return nil
}

func (d *oavDoc) headerProblems(t *testing.T, resp map[string]any, respPtr string, a swAnswer) []string {
	t.Helper()
	var problems []string
	headers, _ := resp["headers"].(map[string]any)
	for _, name := range slices.Sorted(maps.Keys(headers)) {
		h, hPtr := d.resolve(t, headers[name], respPtr+"/headers/"+oavPointer(name))
		values := a.header.Values(name)
		if len(values) == 0 {
			if required, _ := h["required"].(bool); required {
				problems = append(problems, "no "+name+" header, which the document declares required")
			}
			continue
		}
		s, ok := h["schema"].(map[string]any)
		if !ok {
			continue
		}
		var v any = values[0]
		if s["type"] == "integer" || s["type"] == "number" {
			if _, err := strconv.ParseFloat(values[0], 64); err != nil {
				problems = append(problems, fmt.Sprintf("header %s: %q is not a number", name, values[0]))
				continue
			}
			v = json.Number(values[0])
		}
		if err := d.schema(t, hPtr+"/schema").Validate(v); err != nil {
			problems = append(problems, fmt.Sprintf("header %s: %q does not validate: %v", name, values[0], err))
		}
	}
	return problems
}

// requireSeen fails the test unless an answer of each "operationId status"
// of want was validated.
func (d *oavDoc) requireSeen(t *testing.T, want []string) {
	t.Helper()
	d.mu.Lock()
	defer d.mu.Unlock()
	var missing []string
	for _, w := range want {
		if !d.seen[w] {
			missing = append(missing, w)
		}
	}
	require.Empty(t, missing, "answers not validated; validated: %v", slices.Sorted(maps.Keys(d.seen)))
}

// TestOpenAPIValidatorCatches checks the checker: answers that break the
// document in each way it looks for are reported, and ones that keep it
// are not.
func TestOpenAPIValidatorCatches(t *testing.T) {
	t.Parallel()
	var out strings.Builder
	require.NoError(t, run(t.Context(), []string{"openapi"}, env(nil), &out, &out))
	d := oavCompile(t, out.String())
	const id = "01a21842-1803-7e21-a862-fae136d49c10"
	item, list := "/v1/"+id+"/quotations/"+id, "/v1/"+id+"/quotations"
	record := func(change string) string {
		r := `"id":"` + id + `","quotation_number":"Q-2026-000001","account_id":"` + id + `","quotation_date":"2026-11-24","valid_until":"2026-12-24","status":"draft",` +
			`"total_weight_kg":123456.789,"total_volume_m3":1.5,"total_packages":2,"created_at":"2026-11-24T10:00:00Z","updated_at":"2026-11-24T10:00:00Z","organization_id":"` + id + `","branch_id":"` + id + `"`
		return `{"data":{` + strings.Replace(r, `"total_packages":2`, change, 1) + `},"version":"v1"}`
	}
	page := `{"data":[],"pagination":{"limit":50,"offset":%s,"total":null,"next_cursor":null},"version":"v1"}`
	jsonType := http.Header{"Content-Type": {"application/json"}}
	with := func(h http.Header, kv ...string) http.Header {
		h = h.Clone()
		for i := 0; i+1 < len(kv); i += 2 {
			h.Set(kv[i], kv[i+1])
		}
		return h
	}
	etag := with(jsonType, "ETag", `"v1"`)
	for _, tc := range []struct {
		name, method, path string
		status             int
		header             http.Header
		body, problem      string // problem: "" when the answer keeps the document
	}{
		{"a whole record", "GET", item, 200, etag, record(`"total_packages":2`), ""},
		{"a record with fields=", "GET", item, 200, etag, `{"data":{"id":"` + id + `","total_weight_kg":1.5},"version":"v1"}`, ""},
		{"an update answers a whole record", "PATCH", item, 200, etag, `{"data":{"id":"` + id + `"},"version":"v1"}`, "missing properties"},
		{"a required header missing", "GET", item, 200, jsonType, record(`"total_packages":2`), "no ETag header"},
		{"a fraction for an integer", "GET", item, 200, etag, record(`"total_packages":1.5`), "does not validate"},
		{"an id that is no UUID", "GET", item, 200, etag, strings.Replace(record(`"total_packages":2`), `"id":"`+id, `"id":"Q-1`, 1), "does not validate"},
		{"an int64 that does not fit", "GET", list, 200, jsonType, fmt.Sprintf(page, "9223372036854775808"), "does not validate"},
		{"an int64 that fits", "GET", list, 200, jsonType, fmt.Sprintf(page, "9223372036854775807"), ""},
		{"a status not documented", "GET", item, 418, jsonType, `{}`, "does not describe this status"},
		{"503 without Retry-After", "GET", list, 503, jsonType, `{"error":"temporarily_unavailable","error_description":"x"}`, "no Retry-After header"},
		{"503 with Retry-After", "GET", list, 503, with(jsonType, "Retry-After", "5"), `{"error":"temporarily_unavailable","error_description":"x"}`, ""},
		{"Retry-After not a number", "GET", list, 429, with(jsonType, "Retry-After", "soon"), `{"error":"rate_limited","error_description":"x"}`, "is not a number"},
		{"another media type", "GET", list, 404, http.Header{"Content-Type": {"text/plain"}}, `not found`, "Content-Type"},
		{"an error without its description", "GET", list, 404, jsonType, `{"error":"not_found"}`, "does not validate"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, problems := d.problems(t, tc.method, tc.path, swAnswer{status: tc.status, header: tc.header, body: tc.body})
			if tc.problem == "" {
				assert.Empty(t, problems)
				return
			}
			require.NotEmpty(t, problems)
			assert.Contains(t, strings.Join(problems, "\n"), tc.problem)
		})
	}
}
