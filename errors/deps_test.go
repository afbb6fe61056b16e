package errors_test

import (
	"testing"

	"github.com/waybillhq/waybill/internal/depstest"
)

// Every package of Waybill links errors, so errors links the standard
// library only.
func TestDependencies(t *testing.T) {
	deps := depstest.Deps(t)
	for p := range deps {
		if !depstest.Standard(p) && p != "github.com/waybillhq/waybill/errors" {
			t.Errorf("errors depends on %s; it may link only the standard library", p)
		}
	}
	if !deps["net/http"] {
		t.Errorf("go list -deps ./errors does not list net/http: the list is not errors'")
	}
}
