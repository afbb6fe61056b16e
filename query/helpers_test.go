package query_test

import (
	"reflect"
	"strings"
	"testing"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/query"
)

// The tests of query use the standard library only (the SQL it compiles
// to is sqlbuild's to test): an importer's go mod tidy resolves the modules
// of these files too, and TestImporterModules keeps them at none.

// testSchema is the schema of the fixture table used by every test here.
func testSchema() *query.Schema {
	return &query.Schema{
		Fields: []query.Field{
			{Name: "id", Type: query.UUID, Filterable: true, Sortable: true},
			{Name: "name", Type: query.String, Filterable: true, Sortable: true},
			{Name: "status", Type: query.Enum, Values: []string{"draft", "sent", "accepted"}, Filterable: true, Sortable: true},
			{Name: "packages", Type: query.Integer, Filterable: true, Sortable: true},
			{Name: "weight", Type: query.Number, Filterable: true, Sortable: true},
			{Name: "day", Type: query.Date, Filterable: true, Sortable: true, Nullable: true},
			{Name: "created_at", Type: query.Timestamp, Filterable: true, Sortable: true},
			{Name: "active", Type: query.Boolean, Filterable: true, Sortable: true},
			{Name: "comment", Type: query.String, Filterable: true, Nullable: true},
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

// checkInvalid checks that err is the 400 invalid_request *apierrors.Error
// whose description holds want.
func checkInvalid(t testing.TB, err error, want string) {
	t.Helper()
	if err == nil {
		t.Fatalf("err = nil, want an invalid_request containing %q", want)
	}
	e, ok := apierrors.As(err)
	if !ok {
		t.Fatalf("err = %#v (%T), want an *apierrors.Error", err, err)
	}
	if e.Code != apierrors.CodeInvalidRequest || e.Status != 400 {
		t.Errorf("err code %q status %d, want %q 400 (%v)", e.Code, e.Status, apierrors.CodeInvalidRequest, err)
	}
	if !strings.Contains(e.Description, want) {
		t.Errorf("err description %q, want it to contain %q", e.Description, want)
	}
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
