package sqlstore_test

// These examples are compiled, not run: they need a database and its
// driver, which this package leaves to the caller. The same code runs, with
// its output checked, on SQLite in the package's integration tests.

import (
	"bytes"
	"context"
	"crypto/sha256"
	"database/sql"
	"fmt"
	"log"

	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/oauth/sqlstore"
	"github.com/waybillhq/waybill/query"
)

// A store on a SQLite file: migrate it, register an app and read it back.
// The program imports a SQLite driver, such as modernc.org/sqlite, which
// registers "sqlite":
//
//	import _ "modernc.org/sqlite"
func Example() {
	db, err := sql.Open("sqlite", "oauth.db?_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)&_pragma=journal_mode(WAL)")
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
	// It prints:
	// Dispatch board [svc:orders:read svc:shipments:read] [] 1
	// true
}

// The signing key encrypted at rest under a secrets key, then the secrets
// key rotated: the new key with the old one as previous, ReencryptKeys,
// and the new key alone.
func ExampleStore_WithSealer() {
	db, err := sql.Open("sqlite", "oauth.db?_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()

	// Secrets keys come from the operator: openssl rand -base64 32.
	oldKey, err := oauth.ParseSecretsKey("Vo7vAPdb0Yb8RZ6QmIBn8Y0uYzmbVUaJ8hSb5fQeCdI=")
	if err != nil {
		log.Fatal(err)
	}
	newKey, err := oauth.ParseSecretsKey("sJkTNdD2sFq8P0ltp4yTnDgmvPX3Hw9hZ7bC0m4YH4A=")
	if err != nil {
		log.Fatal(err)
	}

	sealer, err := oauth.NewSealer(oldKey)
	if err != nil {
		log.Fatal(err)
	}
	store := sqlstore.New(db, query.SQLite).WithSealer(sealer)
	if err := store.Migrate(ctx); err != nil {
		log.Fatal(err)
	}
	key, err := store.SigningKey(ctx) // generated, and stored encrypted
	if err != nil {
		log.Fatal(err)
	}

	rotating, err := oauth.NewSealer(newKey, oldKey)
	if err != nil {
		log.Fatal(err)
	}
	n, err := store.WithSealer(rotating).ReencryptKeys(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("reencrypted:", n)

	onlyNew, err := oauth.NewSealer(newKey)
	if err != nil {
		log.Fatal(err)
	}
	again, err := store.WithSealer(onlyNew).SigningKey(ctx)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("same key:", again.ID == key.ID && string(again.Secret) == string(key.Secret))
	// It prints:
	// reencrypted: 1
	// same key: true
}
