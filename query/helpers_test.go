package query_test

import (
	"strings"
	"testing"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/internal/querytest"
)

// The tests of query use the standard library only (the SQL it compiles
// to is sqlbuild's to test): an importer's go mod tidy resolves the modules
// of these files too, and TestImporterModules keeps them at none.

// The fixtures and checks shared with sqlbuild's tests.
var (
	testSchema         = querytest.Schema
	mustParse          = querytest.MustParse
	checkErrorContains = querytest.CheckErrorContains
	checkEqual         = querytest.CheckEqual
)

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
