// Command customresource is a service of its own that declares one new
// resource, inspections, with Waybill's resource package: its fields and
// whitelists, a status flow and a domain hook (inspections.go), its
// migration (migrations/), the tenancy.Branches lookup it needs, the
// generated list/get/create/update/delete routes on a plain http.ServeMux,
// and its OpenAPI document at /openapi.json.
//
// The service verifies, and never issues, access tokens: HS256 JWTs signed
// with the secret of -jwt-secret (or WAYBILL_JWT_SECRET, at least 32 bytes)
// by the issuer of -issuer (or WAYBILL_ISSUER), and not revoked: it reads
// the token service's revocations from its database, -waybill-db (or
// WAYBILL_DATABASE_URL, default sqlite://waybill.db), read only, and fails
// to start without it. In production the tokens come
// from a running Waybill token service, such as the reference server started
// with the same --jwt-secret, and the branches table holds the branches it
// knows. For development, -print-token prints a client-credentials token
// for the branch that every new database is seeded with, signed with the
// same secret: a development aid only, not how clients get tokens in
// production.
//
//	export WAYBILL_JWT_SECRET=$(openssl rand -hex 32)
//	go run ./reference migrate    # the token service's database, sqlite://waybill.db
//	go run ./examples/customresource &
//	TOKEN=$(go run ./examples/customresource -print-token)
//	curl -H "Authorization: Bearer $TOKEN" http://127.0.0.1:8082/v1/5eed0000-0000-4000-8000-0000000000b1/inspections
//
// -db names a SQLite file (default ./inspections.db) or a postgres:// URL.
// -branch ORG:BRANCH records a branch of the token service in the branches
// table, as a real service learns its branches some other way.
package main

import (
	"cmp"
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"log"
	"net/http"
	"net/url"
	"os"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/waybillhq/waybill/oauth/bearer"
	"github.com/waybillhq/waybill/oauth/sqlstore"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/resource"
)

// The organization and branch that every new database is seeded with, and
// that -print-token's token is for.
const (
	devOrganization = "5eed0000-0000-4000-8000-0000000000a1"
	devBranch       = "5eed0000-0000-4000-8000-0000000000b1"
)

// config is what the flags set.
type config struct {
	addr, dsn, issuer, secret string
	waybillDB                 string      // the token service's database
	branches                  [][2]string // organization and branch ids of -branch
	printToken                bool
}

func main() {
	var c config
	flag.StringVar(&c.addr, "addr", "127.0.0.1:8082", "`address` to listen on")
	flag.StringVar(&c.dsn, "db", "inspections.db", "SQLite `file` or postgres:// URL")
	flag.StringVar(&c.issuer, "issuer", "", "`URL` of the token service, the iss of its tokens (default $WAYBILL_ISSUER or http://127.0.0.1:8080)")
	flag.StringVar(&c.secret, "jwt-secret", "", "HMAC `key` of the token service, at least 32 bytes (default $WAYBILL_JWT_SECRET)")
	flag.StringVar(&c.waybillDB, "waybill-db", "", "the token service's --database-url `URL`, read to refuse the tokens it revoked (default $WAYBILL_DATABASE_URL or sqlite://waybill.db)")
	flag.BoolVar(&c.printToken, "print-token", false, "development aid: print a token for the seeded branch and exit")
	flag.Func("branch", "`ORG:BRANCH`: the ids of a branch of the token service and of its organization, recorded in the branches table (repeatable)", func(v string) error {
		org, branch, ok := strings.Cut(v, ":")
		if !ok || org == "" || branch == "" {
			return errors.New("want ORG:BRANCH, the ids of an organization and of one of its branches")
		}
		c.branches = append(c.branches, [2]string{org, branch})
		return nil
	})
	flag.Parse()
	c.issuer = cmp.Or(c.issuer, os.Getenv("WAYBILL_ISSUER"), "http://127.0.0.1:8080")
	c.secret = cmp.Or(c.secret, os.Getenv("WAYBILL_JWT_SECRET"))
	c.waybillDB = cmp.Or(c.waybillDB, os.Getenv("WAYBILL_DATABASE_URL"), "sqlite://waybill.db")
	if err := run(c); err != nil {
		log.Fatal(err)
	}
}

// run prints a token, or serves the API until the server fails.
func run(c config) error {
	keys, err := keySet(c.secret)
	if err != nil {
		return err
	}
	if c.printToken {
		token, err := devToken(keys, c.issuer)
		if err != nil {
			return err
		}
		fmt.Println(token)
		return nil
	}
	families, closeFamilies, err := openFamilies(context.Background(), c.waybillDB)
	if err != nil {
		return err
	}
	defer closeFamilies()
	db, dialect, err := openDB(context.Background(), c.dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	for _, b := range c.branches {
		if err := addBranch(context.Background(), db, b[0], b[1]); err != nil {
			return err
		}
	}
	h, err := newHandler(db, dialect, newVerifier(keys, c.issuer, families), c.issuer)
	if err != nil {
		return err
	}
	srv := &http.Server{Addr: c.addr, Handler: h, ReadHeaderTimeout: 10 * time.Second}
	log.Printf("listening on http://%s (OpenAPI document at /openapi.json)", c.addr)
	return srv.ListenAndServe()
}

// newHandler registers the resource and mounts its routes under /v1 and
// /api/v1, beside its OpenAPI document.
func newHandler(db *sql.DB, dialect query.Dialect, verifier *bearer.Verifier, issuer string) (http.Handler, error) {
	reg, err := newRegistry(db, dialect, verifier)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	reg.Mount(mux)
	mux.Handle("GET /openapi.json", reg.OpenAPIHandler(resource.OpenAPIInfo{
		Title:            "Inspections API",
		TokenURL:         issuer + "/auth/v1/oauth/token",
		AuthorizationURL: issuer + "/auth/v1/oauth/authorize",
	}))
	return mux, nil
}

// newRegistry returns the registry of the service's resource over db.
func newRegistry(db *sql.DB, dialect query.Dialect, verifier *bearer.Verifier) (*resource.Registry, error) {
	reg := &resource.Registry{DB: db, Dialect: dialect, Verifier: verifier, Branches: branches{db}}
	if err := reg.Register(inspections()); err != nil {
		return nil, err
	}
	return reg, nil
}

// keySet returns the key that verifies the token service's tokens:
// bearer.SecretKey names it as the reference server names its --jwt-secret,
// so that its tokens are accepted.
func keySet(secret string) (*bearer.KeySet, error) {
	if secret == "" {
		return nil, errors.New("set -jwt-secret or WAYBILL_JWT_SECRET to the secret of the Waybill token service (at least 32 bytes)")
	}
	return bearer.NewKeySet(bearer.SecretKey([]byte(secret)))
}

// newVerifier returns the verifier of the token service's tokens. Like the
// waybill binary's own, it asks families whether the refresh token family
// of an authorization-code token was revoked (a revocation, a reused
// refresh token, a user removed from the organization, an app whose tokens
// were revoked), so that a revoked token is refused at once instead of at
// its expiry. Client-credentials tokens have no family and cost no lookup.
func newVerifier(keys *bearer.KeySet, issuer string, families bearer.FamilyChecker) *bearer.Verifier {
	return &bearer.Verifier{Keys: keys, Issuer: issuer, Families: families}
}

// openFamilies opens the token service's database, named by its
// --database-url (postgres://..., or sqlite://PATH for a SQLite file, read
// only), as the FamilyChecker of newVerifier, and checks that it holds the
// token service's tables. The returned function closes it.
func openFamilies(ctx context.Context, dbURL string) (bearer.FamilyChecker, func(), error) {
	driver, dsn, dialect := "pgx", dbURL, query.Postgres
	if !strings.HasPrefix(dbURL, "postgres://") && !strings.HasPrefix(dbURL, "postgresql://") {
		path, ok := strings.CutPrefix(dbURL, "sqlite://")
		if !ok || path == "" {
			return nil, nil, errors.New("-waybill-db: want the token service's --database-url, postgres://... or sqlite://PATH")
		}
		driver, dsn, dialect = "sqlite", "file:"+path+"?mode=ro&_pragma=busy_timeout(5000)", query.SQLite
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return nil, nil, fmt.Errorf("-waybill-db: %w", err)
	}
	store := sqlstore.New(db, dialect)
	if _, err := store.FamilyRevoked(ctx, "probe"); err != nil {
		db.Close()
		return nil, nil, fmt.Errorf("-waybill-db %s is not the database of a Waybill token service (start the token service, or run \"waybill migrate\" on it, first): %w", redacted(dbURL), err)
	}
	return store, func() { db.Close() }, nil
}

// redacted returns a database URL with its password hidden.
func redacted(dbURL string) string {
	u, err := url.Parse(dbURL)
	if err != nil {
		return "(unparsable URL)"
	}
	return u.Redacted()
}

// devToken returns a client-credentials token for the development branch,
// shaped as the token service issues them, valid for an hour. It is a
// development aid: real clients get their tokens from the token service.
func devToken(keys *bearer.KeySet, issuer string) (string, error) {
	r := inspections()
	now := time.Now()
	return keys.Sign(&bearer.Claims{
		Issuer: issuer, Subject: "dev-app", Audience: bearer.Audience, Role: bearer.Role,
		IssuedAt: now.Unix(), ExpiresAt: now.Add(time.Hour).Unix(), ID: uuid.Must(uuid.NewV7()).String(),
		OrganizationID: devOrganization, ClientID: "dev-client", AppName: "customresource -print-token",
		Scopes: []string{r.ReadScope(), r.WriteScope()}, BranchIDs: []string{devBranch},
	})
}
