package query_test

import (
	"fmt"
	"log"
	"net/http/httptest"

	sq "github.com/Masterminds/squirrel"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/query"
)

// The parser alone, for a list endpoint: parse the request's query string
// against the resource's schema, then add it to the SELECT the handler
// starts, for PostgreSQL or SQLite; the handler runs the statement with
// database/sql. No other part of Waybill is needed. Values never become SQL
// text: they are bound arguments, and a like pattern is rewritten so that
// only % is a wildcard. A refusal is an invalid_request, which errors.Write
// answers with a 400.
func Example() {
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

	for _, raw := range []string{
		"filter=company_name:like:Acme%25",
		"filter=account_type:in:carrier&filter=company_name:like:Acme_%25&sort=company_name:desc&limit=10", // _ is no wildcard
	} {
		q, err := accounts.ParseQuery(raw)
		if err != nil {
			log.Fatal(err)
		}
		for _, d := range []query.Dialect{query.Postgres, query.SQLite} {
			text, args, err := d.SQL(q.Page(d, sq.Select("id", "company_name").From("accounts")))
			if err != nil {
				log.Fatal(err)
			}
			fmt.Println(d, text)
			fmt.Println(d, args)
		}
	}

	req := httptest.NewRequest("GET", "/accounts?filter=account_type:eq:shipper", nil)
	rec := httptest.NewRecorder()
	if _, err := accounts.ParseQuery(req.URL.RawQuery); err != nil {
		apierrors.Write(rec, req, err)
	}
	fmt.Print(rec.Code, " ", rec.Body.String())
	// Output:
	// postgres SELECT id, company_name FROM accounts WHERE company_name LIKE $1 ESCAPE '!' ORDER BY company_name ASC, id ASC LIMIT $2 OFFSET $3
	// postgres [Acme% 50 0]
	// sqlite SELECT id, company_name FROM accounts WHERE company_name GLOB ? ORDER BY company_name ASC, id ASC LIMIT ? OFFSET ?
	// sqlite [Acme* 50 0]
	// postgres SELECT id, company_name FROM accounts WHERE account_type IN ($1) AND company_name LIKE $2 ESCAPE '!' ORDER BY company_name DESC, id DESC LIMIT $3 OFFSET $4
	// postgres [carrier Acme!_% 10 0]
	// sqlite SELECT id, company_name FROM accounts WHERE account_type IN (?) AND company_name GLOB ? ORDER BY company_name DESC, id DESC LIMIT ? OFFSET ?
	// sqlite [carrier Acme_* 10 0]
	// 400 {"error":"invalid_request","error_description":"filter on \"account_type\": \"shipper\" is not one of customer, carrier"}
}

// Page and Count add a parsed query to SELECTs that carry the caller's own
// conditions, such as the tenant; the placeholders are converted once, at
// the top.
func ExampleQuery_Page() {
	quotations := &query.Schema{
		Fields: []query.Field{
			{Name: "id", Type: query.UUID},
			{Name: "status", Type: query.Enum, Values: []string{"draft", "sent"}, Filterable: true},
			{Name: "quotation_number", Type: query.String, Filterable: true},
			{Name: "created_at", Type: query.Timestamp, Filterable: true, Sortable: true},
		},
		DefaultSort: "created_at:desc",
		Reserved:    []string{"organization_id", "branch_id"},
	}
	q, err := quotations.ParseQuery("filter=status:eq:draft&filter=quotation_number:ilike:%25Q-2026_%25&limit=20")
	if err != nil {
		log.Fatal(err)
	}
	tenant := sq.Eq{"branch_id": "b1"}

	page, args, _ := query.Postgres.SQL(q.Page(query.Postgres, sq.Select("id", "status").From("quotations").Where(tenant)))
	fmt.Println(page)
	fmt.Println(args)
	count, args, _ := query.Postgres.SQL(q.Count(query.Postgres, sq.Select("COUNT(*)").From("quotations").Where(tenant)))
	fmt.Println(count)
	fmt.Println(args)
	// Output:
	// SELECT id, status FROM quotations WHERE branch_id = $1 AND status = $2 AND quotation_number ILIKE $3 ESCAPE '!' ORDER BY created_at DESC, id DESC LIMIT $4 OFFSET $5
	// [b1 draft %Q-2026!_% 20 0]
	// SELECT COUNT(*) FROM quotations WHERE branch_id = $1 AND status = $2 AND quotation_number ILIKE $3 ESCAPE '!'
	// [b1 draft %Q-2026!_%]
}

// Every refusal is an invalid_request error that names the field and says
// why; reserved tenant columns can never be filtered or sorted.
func ExampleSchema_Parse() {
	s := &query.Schema{
		Fields: []query.Field{
			{Name: "id", Type: query.UUID},
			{Name: "total_packages", Type: query.Integer, Filterable: true, Sortable: true},
		},
		Reserved: []string{"organization_id", "branch_id"},
	}
	for _, raw := range []string{
		"filter=total_packages:gte:ten",
		"filter=branch_id:eq:00000000-0000-4000-8000-000000000001",
		"sort=total_packages:sideways",
		"page=2",
	} {
		_, err := s.ParseQuery(raw)
		fmt.Println(err)
	}
	// Output:
	// invalid_request: filter on "total_packages": "ten" is not an integer
	// invalid_request: filter on "branch_id": the field is set by the server and cannot be filtered
	// invalid_request: sort on "total_packages": direction must be asc or desc, not "sideways"
	// invalid_request: unknown query parameter "page"; a list takes limit, offset, sort and filter
}

// A walk with cursors: the last row of each page makes the cursor of the
// next, which the client sends back as after with the same filters and
// sort. The next page is the rows after that one in the list's order, a
// condition on the sort keys in place of OFFSET. A cursor used with
// another sort is refused.
func ExampleQuery_NextCursor() {
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
	first, err := accounts.ParseQuery(list)
	if err != nil {
		log.Fatal(err)
	}
	text, args, err := query.SQLite.SQL(first.Page(query.SQLite, sq.Select("id", "company_name").From("accounts")))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(text)
	fmt.Println(args)

	// The values of first.Sort in the page's last row, as the handler
	// scanned them: company_name, then the tiebreaker id.
	last := []any{"Cargo Co", "00000000-0000-4000-8000-000000000004"}
	cursor, err := first.NextCursor(last)
	if err != nil {
		log.Fatal(err)
	}

	next, err := accounts.ParseQuery(list + "&after=" + cursor)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(next.After)
	for _, d := range []query.Dialect{query.Postgres, query.SQLite} {
		text, args, err := d.SQL(next.Page(d, sq.Select("id", "company_name").From("accounts")))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(d, text)
		fmt.Println(d, args)
	}

	_, err = accounts.ParseQuery("sort=company_name:asc&limit=2&after=" + cursor)
	fmt.Println(err)
	// Output:
	// SELECT id, company_name FROM accounts ORDER BY company_name DESC, id DESC LIMIT ? OFFSET ?
	// [2 0]
	// [Cargo Co 00000000-0000-4000-8000-000000000004]
	// postgres SELECT id, company_name FROM accounts WHERE (company_name, id) < ($1, $2) ORDER BY company_name DESC, id DESC LIMIT $3
	// postgres [Cargo Co 00000000-0000-4000-8000-000000000004 2]
	// sqlite SELECT id, company_name FROM accounts WHERE (company_name, id) < (?, ?) ORDER BY company_name DESC, id DESC LIMIT ?
	// sqlite [Cargo Co 00000000-0000-4000-8000-000000000004 2]
	// invalid_request: after: the cursor does not belong to this query: it was issued for other filters, another sort or another list; repeat the filter and sort of the request that returned it, or start again without after
}
