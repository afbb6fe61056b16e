package migrate_test

import (
	"strings"
	"testing"
	"testing/fstest"

	"github.com/waybillhq/waybill/internal/migrate"
	"github.com/waybillhq/waybill/query"
)

// The tests that apply migrations, on PostgreSQL and SQLite, are in
// internal/integration/migrate. Here: what Apply refuses before it touches
// the database, which it is given none of (a nil *sql.DB would panic if
// Apply used it).
func TestApplyRejectsBeforeTheDatabase(t *testing.T) {
	t.Parallel()
	ok := &fstest.MapFile{Data: []byte("CREATE TABLE t (id integer)")}
	tests := []struct {
		name    string
		fsys    fstest.MapFS
		dialect query.Dialect
		dir     string
		table   string
		wantErr string
	}{
		{name: "short version", fsys: fstest.MapFS{"m/001_init.sql": ok}, wantErr: "migrate: m/001_init.sql: not a migration"},
		{name: "no name", fsys: fstest.MapFS{"m/0001.sql": ok}, wantErr: "migrate: m/0001.sql: not a migration"},
		{name: "subdirectory", fsys: fstest.MapFS{"m/0001_init.sql": ok, "m/sub/0002_x.sql": ok}, wantErr: "migrate: m/sub: not a migration"},
		{name: "version zero", fsys: fstest.MapFS{"m/0000_init.sql": ok}, wantErr: "migrate: m/0000_init.sql: version must be a positive integer"},
		{name: "duplicate version", fsys: fstest.MapFS{"m/0001_a.sql": ok, "m/0001_b.sql": ok}, wantErr: "migrate: m/0001_a.sql and m/0001_b.sql have the same version 1"},
		{name: "missing directory", fsys: fstest.MapFS{"m/0001_a.sql": ok}, dir: "nope", wantErr: "migrate: open nope"},
		{name: "unknown dialect", fsys: fstest.MapFS{"m/0001_a.sql": ok}, dialect: query.Dialect(9), wantErr: `migrate: unknown dialect Dialect(9)`},
		{name: "bad table name", fsys: fstest.MapFS{"m/0001_a.sql": ok}, table: "x; DROP TABLE t", wantErr: `migrate: invalid table name "x; DROP TABLE t"`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			dialect, dir, table := query.Postgres, "m", "schema_migrations"
			if tt.dialect != 0 {
				dialect = tt.dialect
			}
			if tt.dir != "" {
				dir = tt.dir
			}
			if tt.table != "" {
				table = tt.table
			}
			applied, err := migrate.Apply(t.Context(), nil, dialect, tt.fsys, dir, table)
			if err == nil || !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("Apply(%v, %q, %q) = %v, want an error containing %q", dialect, dir, table, err, tt.wantErr)
			}
			if applied != nil {
				t.Errorf("Apply(%v, %q, %q) applied %v, want nil", dialect, dir, table, applied)
			}
		})
	}
}
