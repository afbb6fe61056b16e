// Command filteronly is a small parcels API that uses Waybill's query
// package and its subpackage query/sqlbuild, and nothing else of Waybill,
// to parse and compile the list parameters of a plain net/http +
// database/sql handler:
//
//	GET /parcels?filter=status:eq:in_transit&sort=weight_kg:desc&limit=10&offset=0
//
// The table, the handler, the JSON envelope and the error body are all this
// program's own. The only other Waybill package it imports is errors, as
// apierrors, because query's errors are *apierrors.Error values: the handler
// reads their Status, Code and Description and writes the body itself.
//
// Run it from the root of the module; it creates ./parcels.db and seeds a few
// parcels on first start:
//
//	go run ./examples/filteronly
//	curl 'http://127.0.0.1:8081/parcels?filter=status:in:registered,in_transit&sort=weight_kg:desc'
//
// Flags: -addr (default 127.0.0.1:8081) and -db (default ./parcels.db).
package main

import (
	"database/sql"
	"flag"
	"log"
	"net/http"
	"time"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8081", "`address` to listen on")
	path := flag.String("db", "parcels.db", "SQLite database `file`, created when missing")
	flag.Parse()
	if err := run(*addr, *path); err != nil {
		log.Fatal(err)
	}
}

// run opens the database and serves the API on addr until the server fails.
func run(addr, path string) error {
	db, err := openDB(path)
	if err != nil {
		return err
	}
	defer db.Close()
	h, err := newHandler(db)
	if err != nil {
		return err
	}
	srv := &http.Server{Addr: addr, Handler: h, ReadHeaderTimeout: 10 * time.Second}
	log.Printf("listening on http://%s/parcels", addr)
	return srv.ListenAndServe()
}

// newHandler returns the API's routes over db: just GET /parcels.
func newHandler(db *sql.DB) (http.Handler, error) {
	list, err := listParcels(db)
	if err != nil {
		return nil, err
	}
	mux := http.NewServeMux()
	mux.HandleFunc("GET /parcels", list)
	return mux, nil
}
