package pgxrows_test

import (
	"log"
	"net/http"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/resource"
	"github.com/waybillhq/waybill/resource/pgxrows"
)

// A registry on PostgreSQL through pgx reads its exports (a list asked for
// as NDJSON or CSV) and the pages of its lists through pgxrows.Reader;
// lists' totals, single records and writes go through database/sql as
// before.
func Example() {
	config, err := pgx.ParseConfig("postgres://localhost/tms")
	if err != nil {
		log.Fatal(err)
	}
	db := stdlib.OpenDB(*config) // database/sql over pgx
	registry := &resource.Registry{DB: db, Dialect: query.Postgres, RowReader: pgxrows.Reader{}}
	// ... Register the resources, set Verifier and Branches ...
	mux := http.NewServeMux()
	registry.Mount(mux)
	log.Fatal(http.ListenAndServe(":8080", mux))
}
