package resourcetest_test

import (
	"context"
	"crypto/rand"
	"database/sql"
	"errors"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/internal/testdb"
	"github.com/waybillhq/waybill/oauth/bearer"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/resource"
	"github.com/waybillhq/waybill/resource/resourcetest"
	"github.com/waybillhq/waybill/tenancy"
)

const (
	orgA = "0a000000-0000-4000-8000-00000000000a"
	orgB = "0b000000-0000-4000-8000-00000000000b"
	a1   = "0a000000-0000-4000-8000-0000000000a1"
	a2   = "0a000000-0000-4000-8000-0000000000a2"
	b1   = "0b000000-0000-4000-8000-0000000000b1"

	issuer = "https://resourcetest.test"
)

// branchMap is a tenancy.Branches of fixed branches.
type branchMap map[string]string // branch → organization

func (m branchMap) Organization(_ context.Context, id string) (string, error) {
	if org, ok := m[id]; ok {
		return org, nil
	}
	return "", tenancy.ErrNoBranch
}

func (m branchMap) List(_ context.Context, org string) ([]string, error) {
	var ids []string
	for b, o := range m {
		if o == org {
			ids = append(ids, b)
		}
	}
	return ids, nil
}

// schema creates the tables of the test resources on SQLite.
const schema = `
CREATE TABLE widgets (
    id text NOT NULL PRIMARY KEY, organization_id text NOT NULL, branch_id text NOT NULL,
    created_at text NOT NULL, updated_at text NOT NULL,
    name text NOT NULL, code text, size integer
) STRICT;
CREATE TABLE notes (
    id text NOT NULL PRIMARY KEY, organization_id text NOT NULL, branch_id text,
    created_at text NOT NULL, updated_at text NOT NULL,
    body text NOT NULL
) STRICT;
CREATE TABLE gauges (
    id text NOT NULL PRIMARY KEY, organization_id text NOT NULL,
    created_at text NOT NULL, updated_at text NOT NULL,
    reading real NOT NULL
) STRICT;`

// resources declares one resource of each scope type: a branch resource
// with every kind of whitelist, a branch-or-null one, and a read-only
// organization one.
func resources() []*resource.Resource {
	return []*resource.Resource{
		{Name: "widgets", ScopeType: tenancy.Branch, Fields: []resource.Field{
			{Name: "name", Type: query.String, Create: true, Update: true, Required: true, Filterable: true, Sortable: true},
			{Name: "code", Type: query.String, Create: true, Nullable: true, Filterable: true},
			{Name: "size", Type: query.Integer, Update: true, Nullable: true, Sortable: true},
		}},
		{Name: "notes", ScopeType: tenancy.BranchOrNull, Fields: []resource.Field{
			{Name: "body", Type: query.String, Create: true, Update: true, Required: true},
		}},
		{Name: "gauges", ScopeType: tenancy.Organization, ReadOnly: true, Fields: []resource.Field{
			{Name: "reading", Type: query.Number, Filterable: true, Sortable: true},
		}},
	}
}

// insert is Config.Record for the test resources: an INSERT of a record
// with made-up values.
func insert(db *sql.DB) func(t testing.TB, r *resource.Resource, in resourcetest.Tenant) string {
	return func(t testing.TB, r *resource.Resource, in resourcetest.Tenant) string {
		id := newUUID()
		now := time.Now().UTC().Format(query.SQLiteTimestampLayout)
		var err error
		switch r.Name {
		case "widgets":
			_, err = db.Exec(`INSERT INTO widgets (id, organization_id, branch_id, created_at, updated_at, name) VALUES (?, ?, ?, ?, ?, 'w')`, id, in.OrganizationID, in.BranchID, now, now)
		case "notes":
			_, err = db.Exec(`INSERT INTO notes (id, organization_id, branch_id, created_at, updated_at, body) VALUES (?, ?, ?, ?, ?, 'n')`, id, in.OrganizationID, in.BranchID, now, now)
		case "gauges":
			_, err = db.Exec(`INSERT INTO gauges (id, organization_id, created_at, updated_at, reading) VALUES (?, ?, ?, ?, 1.5)`, id, in.OrganizationID, now, now)
		}
		require.NoError(t, err)
		return id
	}
}

func newUUID() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6], b[8] = b[6]&0x0f|0x40, b[8]&0x3f|0x80
	return fmt.Sprintf("%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:])
}

// newConfig returns a registry of the test resources on a new SQLite
// database, with the registry's middleware mw (nil: none).
func newConfig(t *testing.T, mw func(http.Handler) http.Handler) resourcetest.Config {
	db := testdb.SQLite(t)
	_, err := db.Exec(schema)
	require.NoError(t, err)
	keys, err := bearer.NewKeySet(bearer.Key{ID: "k", Secret: []byte(strings.Repeat("k", 32))})
	require.NoError(t, err)
	reg := &resource.Registry{
		DB: db, Dialect: query.SQLite, Verifier: &bearer.Verifier{Keys: keys, Issuer: issuer},
		Branches: branchMap{a1: orgA, a2: orgA, b1: orgB}, Middleware: mw,
	}
	require.NoError(t, reg.Register(resources()...))
	return resourcetest.Config{
		Registry: reg, Keys: keys, Issuer: issuer,
		Organization: orgA, Branch: a1, SiblingBranch: a2, OtherOrganization: orgB, OtherBranch: b1,
		Record: insert(db),
	}
}

func TestResourceConforms(t *testing.T) {
	t.Parallel()
	c := newConfig(t, nil)
	for _, r := range c.Registry.Resources() {
		t.Run(r.Name, func(t *testing.T) { resourcetest.TestResource(t, c, r) })
	}
}

// parts are the parts of the suite, as TestResource names its subtests.
var parts = []string{"envelopes", "whitelists", "tenant_columns", "isolation", "methods", "batch", "export", "openapi", "history"}

// envRegistry names, in the environment of a child process of the test
// binary, the registry on which TestResourceFailsOnBrokenTenancy runs the
// suite in that process: "good" or "broken".
const envRegistry = "WAYBILL_RESOURCETEST_REGISTRY"

// forget is a registry middleware that forgets which tenant asked and
// answers every request as the suite's own tenant, as a list or get
// without its tenant condition would.
func forget(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ten, _ := tenancy.FromContext(r.Context())
		ten.OrganizationID = orgA
		if ten.BranchID != "" {
			ten.BranchID = a1
		}
		next.ServeHTTP(w, r.WithContext(tenancy.NewContext(r.Context(), ten)))
	})
}

// TestResourceFailsOnBrokenTenancy checks that the suite catches a
// registry that serves another tenant's records: its middleware (forget)
// forgets which tenant asked. On a good registry every part of the suite
// passes; on the broken one isolation fails and every other part passes.
//
// TestResource fails the test it is given, so the suite runs in child
// processes of the test binary (this test again, told by envRegistry which
// registry to test), and the test reads from their -test.v output which
// parts passed and which failed.
func TestResourceFailsOnBrokenTenancy(t *testing.T) {
	if which := os.Getenv(envRegistry); which != "" {
		var mw func(http.Handler) http.Handler
		if which == "broken" {
			mw = forget
		}
		c := newConfig(t, mw)
		for _, r := range c.Registry.Resources() {
			t.Run(r.Name, func(t *testing.T) { resourcetest.TestResource(t, c, r) })
		}
		return
	}
	t.Parallel()
	good, goodErr := runSuite(t, "good")
	require.NoError(t, goodErr, "the suite fails on a good registry")
	broken, brokenErr := runSuite(t, "broken")
	require.Error(t, brokenErr, "the suite passes on a registry that ignores the tenant")
	for _, r := range resources() {
		t.Run(r.Name, func(t *testing.T) {
			for _, part := range parts {
				name := r.Name + "/" + part
				assert.Equal(t, "PASS", good[name], "%s fails on a good registry", part)
				if part == "isolation" {
					assert.Equal(t, "FAIL", broken[name], "isolation passes on a registry that ignores the tenant")
					continue
				}
				assert.Equal(t, "PASS", broken[name], "%s fails", part)
			}
		})
	}
	for name := range broken {
		if _, part, ok := strings.Cut(name, "/"); ok {
			assert.Contains(t, parts, part, "a part of the suite that this test does not know")
		}
	}
}

// testResult is a result line of go test -v: a (sub)test's name after the
// top-level test and whether it passed.
var testResult = regexp.MustCompile(`(?m)^\s*--- (PASS|FAIL|SKIP): TestResourceFailsOnBrokenTenancy/(\S+) \(`)

// runSuite runs TestResourceFailsOnBrokenTenancy in a child process with
// the registry which ("good" or "broken") and returns the result of each of
// its subtests ("PASS", "FAIL" or "SKIP"), by name ("widgets/isolation"), and
// the child's exit error (nil when it passed).
func runSuite(t *testing.T, which string) (map[string]string, error) {
	t.Helper()
	cmd := exec.CommandContext(t.Context(), os.Args[0], "-test.run=^TestResourceFailsOnBrokenTenancy$", "-test.v", "-test.count=1")
	cmd.Env = append(os.Environ(), envRegistry+"="+which)
	out, err := cmd.CombinedOutput()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatalf("run the suite on the %s registry: %v", which, err)
	}
	results := map[string]string{}
	for _, m := range testResult.FindAllStringSubmatch(string(out), -1) {
		results[m[2]] = m[1]
	}
	require.NotEmpty(t, results, "the child process on the %s registry ran no subtest:\n%s", which, out)
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("the suite on the %s registry:\n%s", which, out)
		}
	})
	return results, err
}

// TestMain runs the tests with testdb.Main, which says how many skipped for want of
// PostgreSQL or Redis.
func TestMain(m *testing.M) { testdb.Main(m) }
