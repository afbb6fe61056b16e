// Package depstest lists what a package links, for the tests that keep a
// package's import graph within its bounds: a receiver of webhooks links
// none of the server, the tenancy middleware none of the token service.
package depstest

import (
	"strings"
	"testing"
)

// Deps returns the import paths of every package that the package in the
// current directory links, itself and the standard library included, as
// "go list -deps ." lists them. Without the go command on PATH it skips t,
// or fails it when CI is set.
func Deps(t testing.TB) map[string]bool {
	t.Helper()
	deps := map[string]bool{}
	for _, p := range goList(t, goCommand(t), "{{.ImportPath}}", "-deps", ".") {
		deps[p] = true
	}
	return deps
}

// Standard reports whether path is a package of the standard library: its
// first element has no dot.
func Standard(path string) bool {
	first, _, _ := strings.Cut(path, "/")
	return !strings.Contains(first, ".")
}
