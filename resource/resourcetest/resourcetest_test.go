package resourcetest

import (
	"context"
	"crypto/rand"
	"database/sql"
	"fmt"
	"net/http"
	"runtime"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/internal/testdb"
	"github.com/waybillhq/waybill/oauth/bearer"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/resource"
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
			{Name: "name", Type: query.String, Create: true, Update: true, Required: true, Filter: true, Sort: true},
			{Name: "code", Type: query.String, Create: true, Nullable: true, Filter: true},
			{Name: "size", Type: query.Integer, Update: true, Nullable: true, Sort: true},
		}},
		{Name: "notes", ScopeType: tenancy.BranchOrNull, Fields: []resource.Field{
			{Name: "body", Type: query.String, Create: true, Update: true, Required: true},
		}},
		{Name: "gauges", ScopeType: tenancy.Organization, ReadOnly: true, Fields: []resource.Field{
			{Name: "reading", Type: query.Number, Filter: true, Sort: true},
		}},
	}
}

// insert is Config.Record for the test resources: an INSERT of a record
// with made-up values.
func insert(db *sql.DB) func(t testing.TB, r *resource.Resource, in Tenant) string {
	return func(t testing.TB, r *resource.Resource, in Tenant) string {
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
func newConfig(t *testing.T, mw func(http.Handler) http.Handler) Config {
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
	return Config{
		Registry: reg, Keys: keys, Issuer: issuer,
		Organization: orgA, Branch: a1, SiblingBranch: a2, OtherOrganization: orgB, OtherBranch: b1,
		Record: insert(db),
	}
}

func TestResourceConforms(t *testing.T) {
	t.Parallel()
	c := newConfig(t, nil)
	for _, r := range c.Registry.Resources() {
		t.Run(r.Name, func(t *testing.T) { TestResource(t, c, r) })
	}
}

// recorder is a testing.TB that records failures instead of failing the
// test, so that a test can check that the suite fails.
type recorder struct {
	testing.TB
	mu       sync.Mutex
	failures []string
}

func (r *recorder) Helper() {}
func (r *recorder) Errorf(format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.failures = append(r.failures, fmt.Sprintf(format, args...))
}
func (r *recorder) Error(args ...any)                 { r.Errorf("%s", fmt.Sprint(args...)) }
func (r *recorder) Fatalf(format string, args ...any) { r.Errorf(format, args...); runtime.Goexit() }
func (r *recorder) Fatal(args ...any)                 { r.Error(args...); runtime.Goexit() }
func (r *recorder) Fail()                             { r.Errorf("Fail") }
func (r *recorder) FailNow()                          { r.Errorf("FailNow"); runtime.Goexit() }
func (r *recorder) Failed() bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.failures) > 0
}

// runChecks runs every check of the suite on r with its own recorder and
// returns the recorders by check.
func runChecks(t *testing.T, c Config, r *resource.Resource) map[string]*recorder {
	s := newSuite(t, c, r)
	out := map[string]*recorder{}
	for _, ch := range checks {
		rec := &recorder{TB: t}
		done := make(chan struct{})
		go func() {
			defer close(done)
			ch.run(rec, s)
		}()
		<-done
		out[ch.name] = rec
	}
	return out
}

// TestResourceFailsOnBrokenTenancy checks that the suite catches a
// registry that serves another tenant's records: its middleware forgets
// which tenant asked and answers every request as the suite's own tenant,
// as a list or get without its tenant condition would.
func TestResourceFailsOnBrokenTenancy(t *testing.T) {
	t.Parallel()
	forget := func(next http.Handler) http.Handler {
		return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			ten, _ := tenancy.FromContext(r.Context())
			ten.OrganizationID = orgA
			if ten.BranchID != "" {
				ten.BranchID = a1
			}
			next.ServeHTTP(w, r.WithContext(tenancy.NewContext(r.Context(), ten)))
		})
	}
	good, broken := newConfig(t, nil), newConfig(t, forget)
	for _, r := range resources() {
		t.Run(r.Name, func(t *testing.T) {
			for name, rec := range runChecks(t, good, good.Registry.Resource(r.Name)) {
				assert.Empty(t, rec.failures, "%s fails on a good registry", name)
			}
			for name, rec := range runChecks(t, broken, broken.Registry.Resource(r.Name)) {
				if name == "isolation" {
					assert.NotEmpty(t, rec.failures, "isolation passes on a registry that ignores the tenant")
					continue
				}
				assert.Empty(t, rec.failures, "%s fails", name)
			}
		})
	}
}

// TestMain runs the tests with testdb.Main, which says how many skipped for want of
// PostgreSQL or Redis.
func TestMain(m *testing.M) { testdb.Main(m) }
