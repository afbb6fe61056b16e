package migrate_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"testing/fstest"

	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver

	"github.com/waybillhq/waybill/internal/migrate"
	"github.com/waybillhq/waybill/query"
)

// An application embeds one directory of migrations per dialect (with
// //go:embed) and applies the directory of its database at start-up: here
// SQLite, with migrate.Apply.
func Example_apply() {
	migrations := fstest.MapFS{ // in a real program: an embed.FS
		"migrations/sqlite/0001_init.sql":   {Data: []byte("CREATE TABLE notes (id integer PRIMARY KEY, body text NOT NULL);")},
		"migrations/sqlite/0002_author.sql": {Data: []byte("ALTER TABLE notes ADD COLUMN author text;\nCREATE INDEX notes_author ON notes (author);")},
	}

	dir, err := os.MkdirTemp("", "migrate-example")
	if err != nil {
		panic(err)
	}
	defer os.RemoveAll(dir)
	db, err := sql.Open("sqlite", filepath.Join(dir, "app.db")+"?_pragma=busy_timeout(5000)")
	if err != nil {
		panic(err)
	}
	defer db.Close()

	ctx := context.Background()
	for range 2 {
		applied, err := migrate.Apply(ctx, db, query.SQLite, migrations, "migrations/sqlite", "app_migrations")
		if err != nil {
			panic(err)
		}
		fmt.Println("applied", applied)
	}
	// Output:
	// applied [1 2]
	// applied []
}
