package oauthtest_test

import (
	"database/sql"
	"path/filepath"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/oauth/oauthtest"
	"github.com/waybillhq/waybill/oauth/sqlstore"
	"github.com/waybillhq/waybill/query"
)

// A store proves itself from its own tests: a test function hands TestStore
// a constructor that returns a new, empty, migrated store for every
// subtest. Here the store is sqlstore on a SQLite file of its own; the test
// file imports a SQLite driver, such as modernc.org/sqlite, which registers
// "sqlite":
//
//	import _ "modernc.org/sqlite"
func ExampleTestStore() {
	testSQLiteStore := func(t *testing.T) { // func TestSQLiteStore(t *testing.T) in a _test.go file
		oauthtest.TestStore(t, func(t *testing.T) oauth.Store {
			dsn := filepath.Join(t.TempDir(), "oauth.db") + "?_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)"
			db, err := sql.Open("sqlite", dsn)
			require.NoError(t, err)
			t.Cleanup(func() { _ = db.Close() })
			s := sqlstore.New(db, query.SQLite)
			require.NoError(t, s.Migrate(t.Context()))
			return s
		})
	}
	_ = testSQLiteStore
}
