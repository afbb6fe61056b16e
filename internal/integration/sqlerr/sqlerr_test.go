package sqlerr_test

import (
	"database/sql"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/internal/sqlerr"
	"github.com/waybillhq/waybill/internal/testdb"
)

// The real drivers' errors are told apart, on both databases.
func TestKindOf(t *testing.T) {
	for _, b := range []struct {
		name   string
		open   func(testing.TB) *sql.DB
		schema string
		cases  map[string]sqlerr.Kind
	}{
		{"postgres", testdb.Postgres, `
			CREATE TABLE parent (id integer PRIMARY KEY);
			CREATE TABLE child (id integer PRIMARY KEY, parent integer REFERENCES parent, n integer NOT NULL CHECK (n >= 0), small smallint)`,
			map[string]sqlerr.Kind{
				"INSERT INTO child VALUES (1, NULL, 1, 1), (1, NULL, 1, 1)": sqlerr.Unique,
				"INSERT INTO child VALUES (2, 99, 1, 1)":                    sqlerr.ForeignKey,
				"INSERT INTO child VALUES (3, NULL, -1, 1)":                 sqlerr.Check,
				"INSERT INTO child VALUES (4, NULL, NULL, 1)":               sqlerr.NotNull,
				"INSERT INTO child VALUES (5, NULL, 1, 99999)":              sqlerr.Data,
				"SELECT * FROM nowhere":                                     sqlerr.None,
			}},
		{"sqlite", testdb.SQLite, `
			CREATE TABLE parent (id INTEGER PRIMARY KEY);
			CREATE TABLE child (id INTEGER PRIMARY KEY, parent INTEGER REFERENCES parent, n INTEGER NOT NULL CHECK (n >= 0), u TEXT UNIQUE)`,
			map[string]sqlerr.Kind{
				"INSERT INTO child VALUES (1, NULL, 1, 'a'), (1, NULL, 1, 'b')": sqlerr.Unique,
				"INSERT INTO child VALUES (6, NULL, 1, 'x'), (7, NULL, 1, 'x')": sqlerr.Unique,
				"INSERT INTO child VALUES (2, 99, 1, 'c')":                      sqlerr.ForeignKey,
				"INSERT INTO child VALUES (3, NULL, -1, 'd')":                   sqlerr.Check,
				"INSERT INTO child VALUES (4, NULL, NULL, 'e')":                 sqlerr.NotNull,
				"SELECT * FROM nowhere":                                         sqlerr.None,
			}},
	} {
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			db := b.open(t)
			_, err := db.Exec(b.schema)
			require.NoError(t, err)
			for stmt, want := range b.cases {
				_, err := db.Exec(stmt)
				require.Error(t, err, stmt)
				assert.Equal(t, want, sqlerr.KindOf(err), "%s: %v", stmt, err)
			}
		})
	}
}

// TestMain runs the tests with testdb.Main, which says how many skipped for want of
// PostgreSQL or Redis.
func TestMain(m *testing.M) { testdb.Main(m) }
