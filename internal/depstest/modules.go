package depstest

import (
	"bufio"
	"bytes"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// Module is the path of this module; its own packages are not counted as
// downloads.
const Module = "github.com/waybillhq/waybill"

// ImporterModules returns the modules, sorted, that "go mod tidy" resolves
// for a module importing only the package pkg (an import path): the modules
// of every package pkg links, and of every package the tests of those
// packages import, ours and other modules' alike. Go resolves the tests of
// each linked package (one level: not the tests of test dependencies), so a
// library package's own tests decide what its importers download as much as
// its code does. This module itself is left out. The answer is computed with "go list", offline; it
// matches the go.sum lines (those not ending in /go.mod) that an importer's
// tidy writes.
func ImporterModules(t testing.TB, pkg string) []string {
	t.Helper()
	gobin := goCommand(t)
	linked := goList(t, gobin, "{{if not .Standard}}{{.ImportPath}} {{with .Module}}{{.Path}}{{end}}{{end}}", "-deps", pkg)
	mods := map[string]bool{}
	var paths []string
	for _, line := range linked {
		path, mod, _ := strings.Cut(line, " ")
		mods[mod] = true
		paths = append(paths, path)
	}
	if len(paths) > 0 {
		tested := goList(t, gobin, "{{if not .Standard}}{{with .Module}}{{.Path}}{{end}}{{end}}", append([]string{"-deps", "-test"}, paths...)...)
		for _, mod := range tested {
			mods[mod] = true
		}
	}
	delete(mods, Module)
	delete(mods, "")
	out := make([]string, 0, len(mods))
	for m := range mods {
		out = append(out, m)
	}
	slices.Sort(out)
	return out
}

// LibraryPackages returns the import paths of this module's packages that
// an importer may use: every package but those under internal/, reference/
// and examples/ and the module's root (which holds only documentation).
func LibraryPackages(t testing.TB) []string {
	t.Helper()
	var out []string
	for _, p := range goList(t, goCommand(t), "{{.ImportPath}}", Module+"/...") {
		rest, _ := strings.CutPrefix(p, Module)
		rest = strings.TrimPrefix(rest, "/")
		first, _, _ := strings.Cut(rest, "/")
		if rest == "" || first == "reference" || first == "examples" || strings.Contains("/"+rest+"/", "/internal/") {
			continue
		}
		out = append(out, p)
	}
	return out
}

func goCommand(t testing.TB) string {
	t.Helper()
	gobin, err := exec.LookPath("go")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("depstest: the go command is needed to list the dependencies: %v", err)
		}
		t.Skipf("skipped: the go command is not on PATH (%v)", err)
	}
	return gobin
}

// goList runs go list with the format and arguments given and returns its
// non-empty output lines.
func goList(t testing.TB, gobin, format string, args ...string) []string {
	t.Helper()
	cmd := exec.Command(gobin, append([]string{"list", "-f", format}, args...)...)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("depstest: go list %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	var lines []string
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		if line := strings.TrimSpace(sc.Text()); line != "" {
			lines = append(lines, line)
		}
	}
	return lines
}
