package sqlstore_test

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"log"
	"os"
	"path/filepath"

	_ "modernc.org/sqlite" // registers the "sqlite" driver

	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/oauth/sqlstore"
	"github.com/waybillhq/waybill/query"
)

// A store on a SQLite file: migrate it, register an app and read it back.
func Example() {
	dir, err := os.MkdirTemp("", "sqlstore-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)

	dsn := filepath.Join(dir, "oauth.db") + "?_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)"
	db, err := sql.Open("sqlite", dsn)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()

	ctx := context.Background()
	store := sqlstore.New(db, query.SQLite)
	if err := store.Migrate(ctx); err != nil {
		log.Fatal(err)
	}

	secretHash := sha256.Sum256([]byte("s3cret"))
	err = store.CreateApp(ctx, &oauth.App{
		ID:             "app-1",
		ClientID:       "dispatch-board",
		Name:           "Dispatch board",
		OrganizationID: "org-1",
		Scopes:         []string{"svc:orders:read", "svc:shipments:read"},
		RedirectURIs:   []string{"https://dispatch.example.com/callback"},
		SecretHash:     secretHash[:], // the SHA-256 of the app's secret: the store never sees the secret
	})
	if err != nil {
		log.Fatal(err)
	}

	app, err := store.App(ctx, "dispatch-board")
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(app.Name, app.Scopes, app.BranchIDs, len(app.RedirectURIs))
	fmt.Println(bytes.Equal(app.SecretHash, secretHash[:]))
	// Output:
	// Dispatch board [svc:orders:read svc:shipments:read] [] 1
	// true
}
