package sqlstore_test

import (
	"context"
	"database/sql"
	"fmt"
	"log"
	"os"
	"path/filepath"

	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/oauth/sqlstore"
	"github.com/waybillhq/waybill/query"
)

// Store.WithSealer: the signing key encrypted at rest under a secrets key,
// then the secrets key rotated: the new key with the old one as previous,
// ReencryptKeys, and the new key alone.
func Example_withSealer() {
	dir, err := os.MkdirTemp("", "sqlstore-example")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	db, err := sql.Open("sqlite", filepath.Join(dir, "oauth.db")+"?_pragma=busy_timeout(5000)&_pragma=foreign_keys(1)")
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
	// Output:
	// reencrypted: 1
	// same key: true
}
