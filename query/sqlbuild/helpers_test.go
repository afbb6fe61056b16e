package sqlbuild_test

import (
	"reflect"
	"strings"
	"testing"

	"github.com/waybillhq/waybill/query"
)

// The tests of sqlbuild use the standard library only, besides squirrel,
// which sqlbuild itself links: an importer's go mod tidy resolves the
// modules of these files too.

var cursorKey = []byte("test cursor key, 32 bytes or more")

const anID = "0a1b2c3d-0000-4000-8000-00000000abcd"

// testSchema is the schema of the fixture table used by every test here,
// with cursors on.
func testSchema() *query.Schema {
	return &query.Schema{
		Name:      "items",
		CursorKey: cursorKey,
		Fields: []query.Field{
			{Name: "id", Type: query.UUID, Filterable: true, Sortable: true},
			{Name: "name", Type: query.String, Filterable: true, Sortable: true},
			{Name: "status", Type: query.Enum, Values: []string{"draft", "sent", "accepted"}, Filterable: true, Sortable: true},
			{Name: "packages", Type: query.Integer, Filterable: true, Sortable: true},
			{Name: "weight", Type: query.Number, Filterable: true, Sortable: true},
			{Name: "day", Type: query.Date, Filterable: true, Sortable: true, Nullable: true},
			{Name: "created_at", Type: query.Timestamp, Filterable: true, Sortable: true},
			{Name: "active", Type: query.Boolean, Filterable: true, Sortable: true},
			{Name: "comment", Type: query.String, Filterable: true, Sortable: true, Nullable: true},
			{Name: "code", Column: "ref_code", Type: query.String, Filterable: true, Ops: []query.Op{query.Eq, query.In}},
			{Name: "secret", Type: query.String},
		},
		DefaultSort: "created_at:desc",
		Reserved:    []string{"organization_id", "branch_id"},
	}
}

// mustParse parses raw on s and stops the test if s refuses it.
func mustParse(t testing.TB, s *query.Schema, raw string) *query.Query {
	t.Helper()
	q, err := s.ParseQuery(raw)
	if err != nil {
		t.Fatalf("ParseQuery(%q): %v", raw, err)
	}
	return q
}

// cursorFor parses raw on s and returns the cursor after the row whose
// sort keys hold last.
func cursorFor(t *testing.T, s *query.Schema, raw string, last ...any) string {
	t.Helper()
	q := mustParse(t, s, raw)
	c, err := q.NextCursor(last)
	if err != nil {
		t.Fatalf("NextCursor(%#v) after %q = %v, want no error", last, raw, err)
	}
	return c
}

// checkErrorContains checks that err is not nil and that its text holds
// want.
func checkErrorContains(t testing.TB, err error, want string) {
	t.Helper()
	if err == nil {
		t.Errorf("err = nil, want an error containing %q", want)
		return
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("err = %q, want it to contain %q", err, want)
	}
}

// checkEqual reports got and want, with what names them, when they are not
// deeply equal.
func checkEqual(t testing.TB, what string, got, want any) {
	t.Helper()
	if !reflect.DeepEqual(got, want) {
		t.Errorf("%s = %#v, want %#v", what, got, want)
	}
}
