package sqlbuild_test

import (
	"slices"
	"strings"
	"testing"

	"github.com/waybillhq/waybill/internal/depstest"
)

// sqlbuild links the standard library, query, Waybill's errors (which
// query links) and squirrel with the two modules squirrel needs, nothing
// else.
func TestDependencies(t *testing.T) {
	allowed := map[string]bool{
		"github.com/waybillhq/waybill/query/sqlbuild": true,
		"github.com/waybillhq/waybill/query":          true,
		"github.com/waybillhq/waybill/errors":         true,
		"github.com/Masterminds/squirrel":             true,
		"github.com/lann/builder":                     true,
		"github.com/lann/ps":                          true,
	}
	deps := depstest.Deps(t)
	for p := range deps {
		if !depstest.Standard(p) && !allowed[p] {
			t.Errorf("sqlbuild depends on %s; it may link only the standard library, query, Waybill's errors and squirrel", p)
		}
	}
	if !deps["github.com/Masterminds/squirrel"] {
		t.Errorf("go list -deps . does not list squirrel: the list is not sqlbuild's")
	}
}

// An importer of sqlbuild downloads squirrel's modules and no other:
// exactly what an importer of squirrel alone downloads (squirrel, its two
// helpers, and what squirrel's own tests import).
func TestImporterModules(t *testing.T) {
	got := depstest.ImporterModules(t, depstest.Module+"/query/sqlbuild")
	want := depstest.ImporterModules(t, "github.com/Masterminds/squirrel")
	t.Logf("%d modules: %s", len(got), strings.Join(got, " "))
	if !slices.Contains(want, "github.com/Masterminds/squirrel") {
		t.Fatalf("the modules of an importer of squirrel do not hold squirrel: %v", want)
	}
	if !slices.Equal(got, want) {
		t.Errorf("an importer of sqlbuild downloads\n  %s\nwant squirrel's own\n  %s", strings.Join(got, "\n  "), strings.Join(want, "\n  "))
	}
}
