package query_test

import (
	"database/sql"
	"encoding/json"
	"fmt"
	"log"
	"net/http"
	"net/http/httptest"

	sq "github.com/Masterminds/squirrel"
	_ "modernc.org/sqlite"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/query/sqlbuild"
)

// The parser and its SQL, inside a plain net/http handler over
// database/sql: query parses, query/sqlbuild compiles, and no other part of
// Waybill is needed. sqlbuild's own Example shows the SQL that such a
// handler runs.
func Example_handler() {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // one connection: one in-memory database
	if _, err := db.Exec(`CREATE TABLE accounts (id TEXT PRIMARY KEY, company_name TEXT, account_type TEXT);
		INSERT INTO accounts VALUES
			('00000000-0000-4000-8000-000000000001', 'Acme Freight', 'customer'),
			('00000000-0000-4000-8000-000000000002', 'Bolt Haulage', 'carrier'),
			('00000000-0000-4000-8000-000000000003', 'Acme_Logistics', 'carrier')`); err != nil {
		log.Fatal(err)
	}

	accounts := &query.Schema{
		Fields: []query.Field{
			{Name: "id", Type: query.UUID, Filterable: true, Sortable: true},
			{Name: "company_name", Type: query.String, Filterable: true, Sortable: true},
			{Name: "account_type", Type: query.Enum, Values: []string{"customer", "carrier"}, Filterable: true},
		},
		DefaultSort: "company_name:asc",
	}
	if err := accounts.Validate(); err != nil {
		log.Fatal(err)
	}

	list := func(w http.ResponseWriter, r *http.Request) {
		q, err := accounts.ParseQuery(r.URL.RawQuery)
		if err != nil {
			apierrors.Write(w, r, err) // 400 invalid_request naming the field
			return
		}
		text, args, err := sqlbuild.SQL(query.SQLite, sqlbuild.Page(query.SQLite, q, sq.Select("id", "company_name").From("accounts")))
		if err != nil {
			apierrors.Write(w, r, err)
			return
		}
		rows, err := db.QueryContext(r.Context(), text, args...)
		if err != nil {
			apierrors.Write(w, r, err)
			return
		}
		defer rows.Close()
		names := []string{}
		for rows.Next() {
			var id, name string
			if err := rows.Scan(&id, &name); err != nil {
				apierrors.Write(w, r, err)
				return
			}
			names = append(names, name)
		}
		json.NewEncoder(w).Encode(map[string]any{"data": names})
	}

	mux := http.NewServeMux()
	mux.HandleFunc("GET /accounts", list)
	for _, target := range []string{
		"/accounts?filter=company_name:like:Acme%25",
		"/accounts?filter=account_type:in:carrier&sort=company_name:desc",
		"/accounts?filter=company_name:like:Acme_%25", // _ is no wildcard
		"/accounts?filter=account_type:eq:shipper",
	} {
		rec := httptest.NewRecorder()
		mux.ServeHTTP(rec, httptest.NewRequest("GET", target, nil))
		fmt.Print(rec.Code, " ", rec.Body.String())
	}
	// Output:
	// 200 {"data":["Acme Freight","Acme_Logistics"]}
	// 200 {"data":["Bolt Haulage","Acme_Logistics"]}
	// 200 {"data":["Acme_Logistics"]}
	// 400 {"error":"invalid_request","error_description":"filter on \"account_type\": \"shipper\" is not one of customer, carrier"}
}

// A walk with cursors over SQLite: the last row of each page makes the
// cursor of the next, which the client sends back as after with the same
// filters and sort. A cursor used with another sort is refused.
func Example_cursorWalk() {
	db, err := sql.Open("sqlite", ":memory:")
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(`CREATE TABLE accounts (id TEXT PRIMARY KEY, company_name TEXT NOT NULL);
		INSERT INTO accounts VALUES
			('00000000-0000-4000-8000-000000000001', 'Acme Freight'),
			('00000000-0000-4000-8000-000000000002', 'Bolt Haulage'),
			('00000000-0000-4000-8000-000000000003', 'Acme_Logistics'),
			('00000000-0000-4000-8000-000000000004', 'Cargo Co'),
			('00000000-0000-4000-8000-000000000005', 'Delta Lines')`); err != nil {
		log.Fatal(err)
	}
	accounts := &query.Schema{
		Name: "accounts",
		// In a server: 32 random bytes from its secrets, the same on every
		// instance.
		CursorKey: []byte("an example key, 32 bytes or more"),
		Fields: []query.Field{
			{Name: "id", Type: query.UUID, Sortable: true},
			{Name: "company_name", Type: query.String, Sortable: true},
		},
	}

	const list = "sort=company_name:desc&limit=2"
	after := ""
	for page := 1; ; page++ {
		q, err := accounts.ParseQuery(list + after)
		if err != nil {
			log.Fatal(err)
		}
		text, args, err := sqlbuild.SQL(query.SQLite, sqlbuild.Page(query.SQLite, q, sq.Select("id", "company_name").From("accounts")))
		if err != nil {
			log.Fatal(err)
		}
		rows, err := db.Query(text, args...)
		if err != nil {
			log.Fatal(err)
		}
		var names []string
		var last []any // the values of q.Sort: company_name, then id
		for rows.Next() {
			var id, name string
			if err := rows.Scan(&id, &name); err != nil {
				log.Fatal(err)
			}
			names = append(names, name)
			last = []any{name, id}
		}
		rows.Close()
		fmt.Println(page, names)
		if len(names) < q.Limit {
			break
		}
		cursor, err := q.NextCursor(last)
		if err != nil {
			log.Fatal(err)
		}
		after = "&after=" + cursor
	}

	_, err = accounts.ParseQuery("sort=company_name:asc&limit=2" + after)
	fmt.Println(err)
	// Output:
	// 1 [Delta Lines Cargo Co]
	// 2 [Bolt Haulage Acme_Logistics]
	// 3 [Acme Freight]
	// invalid_request: after: the cursor does not belong to this query: it was issued for other filters, another sort or another list; repeat the filter and sort of the request that returned it, or start again without after
}
