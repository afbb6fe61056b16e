package query_test

import (
	"strings"
	"testing"

	"github.com/waybillhq/waybill/internal/depstest"
)

// query stands alone: besides the standard library it links Waybill's
// errors, nothing else; the SQL builder (squirrel) is its subpackage
// sqlbuild's.
func TestDependencies(t *testing.T) {
	allowed := map[string]bool{
		"github.com/waybillhq/waybill/query":  true,
		"github.com/waybillhq/waybill/errors": true,
	}
	deps := depstest.Deps(t)
	for p := range deps {
		if !depstest.Standard(p) && !allowed[p] {
			t.Errorf("query depends on %s; it may link only the standard library and Waybill's errors", p)
		}
	}
	if !deps["github.com/waybillhq/waybill/query"] {
		t.Errorf("go list -deps . does not list query: the list is not query's")
	}
	if deps["github.com/Masterminds/squirrel"] {
		t.Errorf("query links squirrel; only its subpackage sqlbuild may")
	}
}

// An importer of query downloads no module: its go mod tidy resolves the
// packages query links and the imports of their tests, the standard
// library's and this module's only.
func TestImporterModules(t *testing.T) {
	if mods := depstest.ImporterModules(t, depstest.Module+"/query"); len(mods) > 0 {
		t.Errorf("an importer of query downloads %d modules, want none:\n  %s", len(mods), strings.Join(mods, "\n  "))
	}
}
