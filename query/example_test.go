package query_test

import (
	"fmt"
	"log"
	"net/http/httptest"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/query"
)

// The parser alone, for a list endpoint: parse the request's query string
// against the resource's schema and read the typed result, every value
// checked against its field's type. The subpackage sqlbuild adds a Query to
// a squirrel SELECT (see its examples); a handler may as well read the
// Query and build its statement another way, writing only the columns
// (Filter.Column, Order.Column) into SQL and binding every value. A refusal
// is an invalid_request, which errors.Write answers with a 400.
func Example() {
	accounts := &query.Schema{
		Fields: []query.Field{
			{Name: "id", Type: query.UUID, Filterable: true, Sortable: true},
			{Name: "company_name", Column: "name", Type: query.String, Filterable: true, Sortable: true},
			{Name: "account_type", Type: query.Enum, Values: []string{"customer", "carrier"}, Filterable: true},
			{Name: "credit_limit", Type: query.Number, Filterable: true, Sortable: true},
		},
		DefaultSort: "company_name:asc",
	}
	if err := accounts.Validate(); err != nil {
		log.Fatal(err)
	}

	q, err := accounts.ParseQuery(`filter=account_type:in:carrier,customer&filter=company_name:like:Acme_%25&filter=credit_limit:gte:1e4&sort=credit_limit:desc&limit=10`)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println("limit", q.Limit, "offset", q.Offset)
	for _, f := range q.Filters {
		fmt.Printf("filter %s (column %s) %s %#v\n", f.Field, f.Column(), f.Op, f.Values)
	}
	for _, o := range q.Sort {
		fmt.Printf("sort %s (column %s) desc=%v\n", o.Field, o.Column(), o.Desc)
	}

	req := httptest.NewRequest("GET", "/accounts?filter=account_type:eq:shipper", nil)
	rec := httptest.NewRecorder()
	if _, err := accounts.ParseQuery(req.URL.RawQuery); err != nil {
		apierrors.Write(rec, req, err)
	}
	fmt.Print(rec.Code, " ", rec.Body.String())
	// Output:
	// limit 10 offset 0
	// filter account_type (column account_type) in []interface {}{"carrier", "customer"}
	// filter company_name (column name) like []interface {}{"Acme_%"}
	// filter credit_limit (column credit_limit) gte []interface {}{10000}
	// sort credit_limit (column credit_limit) desc=true
	// sort id (column id) desc=true
	// 400 {"error":"invalid_request","error_description":"filter on \"account_type\": \"shipper\" is not one of customer, carrier"}
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
// sort. The parsed query holds the last row's position in After; the next
// page is the rows after that one in the list's order, a condition on the
// sort keys in place of OFFSET (sqlbuild.Page writes it). A cursor used
// with another sort is refused.
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
	fmt.Println(first.Limit, first.After)

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
	fmt.Println(next.Limit, next.After)

	_, err = accounts.ParseQuery("sort=company_name:asc&limit=2&after=" + cursor)
	fmt.Println(err)
	// Output:
	// 2 []
	// 2 [Cargo Co 00000000-0000-4000-8000-000000000004]
	// invalid_request: after: the cursor does not belong to this query: it was issued for other filters, another sort or another list; repeat the filter and sort of the request that returned it, or start again without after
}
