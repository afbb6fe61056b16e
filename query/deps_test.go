package query_test

import (
	"testing"

	"github.com/waybillhq/waybill/internal/depstest"
)

// query stands alone: besides the standard library it links squirrel (and
// the two modules squirrel needs) and Waybill's errors, nothing else.
func TestDependencies(t *testing.T) {
	allowed := map[string]bool{
		"github.com/waybillhq/waybill/query":  true,
		"github.com/waybillhq/waybill/errors": true,
		"github.com/Masterminds/squirrel":     true,
		"github.com/lann/builder":             true,
		"github.com/lann/ps":                  true,
	}
	deps := depstest.Deps(t)
	for p := range deps {
		if !depstest.Standard(p) && !allowed[p] {
			t.Errorf("query depends on %s; it may link only the standard library, squirrel and Waybill's errors", p)
		}
	}
	if !deps["github.com/Masterminds/squirrel"] {
		t.Errorf("go list -deps ./query does not list squirrel: the list is not query's")
	}
}
