package depstest_test

import (
	"strings"
	"testing"

	"github.com/waybillhq/waybill/internal/depstest"
)

// bounds holds, for every library package, how many modules a module that
// imports only that package may download (go.sum lines that are not
// /go.mod, as "go mod tidy" writes them): what the package links plus what
// its own tests and the tests of what it links import. Tests that need a
// database, Redis, a browser or other heavy modules live under
// internal/integration, where no importer resolves them.
var bounds = map[string]int{
	"errors":            0, // its tests use the standard library only
	"openapi":           2, // testify (and its YAML package) in its tests
	"protectedresource": 2,
	// The parser links the standard library and errors only, and its tests
	// too: an importer downloads nothing.
	"query": 0,
	// squirrel and its two helpers, plus testify and its YAML package,
	// which squirrel's own tests import: go mod tidy resolves the tests of
	// every linked package, other modules' too. sqlbuild's own tests use
	// the standard library and squirrel only.
	"query/sqlbuild":          5,
	"tenancy":                 6, // oauth/bearer's jwt, uuid; chi and go-jose in tests
	"ratelimit":               2,
	"ratelimit/ratelimittest": 2,
	"ratelimit/redislimit":    10, // go-redis and its test dependencies
	"oauth/bearer":            5,
	"oauth":                   5,
	"oauth/sqlstore":          5, // oauth's: query (the dialect) adds none
	"oauth/oauthtest":         5,
	"oauth/password":          4, // golang.org/x/crypto (argon2) and x/sys
	"resource":                9,
	"resource/resourcetest":   9,
	"resource/numbering":      9,
	"resource/pgxrows":        15, // resource's, pgx and its five
	"events":                  9,
	"webhook":                 10, // resource's, the Standard Webhooks library, and uuid
	"webhook/signature":       3,
	"netguard":                0, // the standard library only, its tests too
	"audit":                   0, // the standard library only
	"audit/auditdb":           1, // uuid; query (the dialect) adds none
}

func TestImporterModules(t *testing.T) {
	t.Parallel()
	for _, pkg := range depstest.LibraryPackages(t) {
		short := strings.TrimPrefix(pkg, depstest.Module+"/")
		bound, ok := bounds[short]
		if !ok {
			t.Errorf("%s has no bound in internal/depstest/bounds_test.go: add one", short)
			continue
		}
		t.Run(short, func(t *testing.T) {
			t.Parallel()
			mods := depstest.ImporterModules(t, pkg)
			t.Logf("%s: %d modules: %s", short, len(mods), strings.Join(mods, " "))
			if len(mods) > bound {
				t.Errorf("an importer of %s downloads %d modules, more than its bound of %d:\n  %s",
					short, len(mods), bound, strings.Join(mods, "\n  "))
			}
		})
	}
	listed := map[string]bool{}
	for _, pkg := range depstest.LibraryPackages(t) {
		listed[strings.TrimPrefix(pkg, depstest.Module+"/")] = true
	}
	for short := range bounds {
		if !listed[short] {
			t.Errorf("bounds names %s, which is not a library package of this module", short)
		}
	}
}
