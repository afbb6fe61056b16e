package sqlbuild_test

import (
	"fmt"
	"log"

	sq "github.com/Masterminds/squirrel"

	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/query/sqlbuild"
)

// A list endpoint: parse the request's query string against the
// resource's schema with query, then add it to the SELECT the handler
// starts, for PostgreSQL or SQLite; the handler runs the statement with
// database/sql. Values never become SQL text: they are bound arguments,
// and a like pattern is rewritten so that only % is a wildcard (GLOB on
// SQLite, where like is case-sensitive).
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
			text, args, err := sqlbuild.SQL(d, sqlbuild.Page(d, q, sq.Select("id", "company_name").From("accounts")))
			if err != nil {
				log.Fatal(err)
			}
			fmt.Println(d, text)
			fmt.Println(d, args)
		}
	}
	// Output:
	// postgres SELECT id, company_name FROM accounts WHERE company_name LIKE $1 ESCAPE '!' ORDER BY company_name ASC, id ASC LIMIT $2 OFFSET $3
	// postgres [Acme% 50 0]
	// sqlite SELECT id, company_name FROM accounts WHERE company_name GLOB ? ORDER BY company_name ASC, id ASC LIMIT ? OFFSET ?
	// sqlite [Acme* 50 0]
	// postgres SELECT id, company_name FROM accounts WHERE account_type IN ($1) AND company_name LIKE $2 ESCAPE '!' ORDER BY company_name DESC, id DESC LIMIT $3 OFFSET $4
	// postgres [carrier Acme!_% 10 0]
	// sqlite SELECT id, company_name FROM accounts WHERE account_type IN (?) AND company_name GLOB ? ORDER BY company_name DESC, id DESC LIMIT ? OFFSET ?
	// sqlite [carrier Acme_* 10 0]
}

// Page and Count add a parsed query to SELECTs that carry the caller's own
// conditions, such as the tenant; SQL converts the placeholders once, at
// the top.
func ExamplePage() {
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

	page, args, _ := sqlbuild.SQL(query.Postgres, sqlbuild.Page(query.Postgres, q, sq.Select("id", "status").From("quotations").Where(tenant)))
	fmt.Println(page)
	fmt.Println(args)
	count, args, _ := sqlbuild.SQL(query.Postgres, sqlbuild.Count(query.Postgres, q, sq.Select("COUNT(*)").From("quotations").Where(tenant)))
	fmt.Println(count)
	fmt.Println(args)
	// Output:
	// SELECT id, status FROM quotations WHERE branch_id = $1 AND status = $2 AND quotation_number ILIKE $3 ESCAPE '!' ORDER BY created_at DESC, id DESC LIMIT $4 OFFSET $5
	// [b1 draft %Q-2026!_% 20 0]
	// SELECT COUNT(*) FROM quotations WHERE branch_id = $1 AND status = $2 AND quotation_number ILIKE $3 ESCAPE '!'
	// [b1 draft %Q-2026!_%]
}

// A walk with cursors: the last row of a page makes the cursor of the
// next (query's Query.NextCursor), and the page after it is the rows after
// that one in the list's order, a condition on the sort keys in place of
// OFFSET.
func ExamplePage_cursor() {
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
	text, args, err := sqlbuild.SQL(query.SQLite, sqlbuild.Page(query.SQLite, first, sq.Select("id", "company_name").From("accounts")))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(text)
	fmt.Println(args)

	// The values of first.Sort in the page's last row, as the handler
	// scanned them: company_name, then the tiebreaker id.
	cursor, err := first.NextCursor([]any{"Cargo Co", "00000000-0000-4000-8000-000000000004"})
	if err != nil {
		log.Fatal(err)
	}
	next, err := accounts.ParseQuery(list + "&after=" + cursor)
	if err != nil {
		log.Fatal(err)
	}
	for _, d := range []query.Dialect{query.Postgres, query.SQLite} {
		text, args, err := sqlbuild.SQL(d, sqlbuild.Page(d, next, sq.Select("id", "company_name").From("accounts")))
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(d, text)
		fmt.Println(d, args)
	}
	// Output:
	// SELECT id, company_name FROM accounts ORDER BY company_name DESC, id DESC LIMIT ? OFFSET ?
	// [2 0]
	// postgres SELECT id, company_name FROM accounts WHERE (company_name, id) < ($1, $2) ORDER BY company_name DESC, id DESC LIMIT $3
	// postgres [Cargo Co 00000000-0000-4000-8000-000000000004 2]
	// sqlite SELECT id, company_name FROM accounts WHERE (company_name, id) < (?, ?) ORDER BY company_name DESC, id DESC LIMIT ?
	// sqlite [Cargo Co 00000000-0000-4000-8000-000000000004 2]
}

// Where, OrderBy and Keyset are the parts of Page for a statement that is
// not a page: here an export of every matching row after a cursor, in the
// list's order, without a limit. On SQLite a Nullable sort key gets the
// NULLS placement of PostgreSQL.
func ExampleWhere() {
	parcels := &query.Schema{
		Name:      "parcels",
		CursorKey: []byte("an example key, 32 bytes or more"),
		Fields: []query.Field{
			{Name: "id", Type: query.UUID, Sortable: true},
			{Name: "status", Type: query.Enum, Values: []string{"ready", "shipped"}, Filterable: true},
			{Name: "shipped_on", Type: query.Date, Filterable: true, Sortable: true, Nullable: true},
		},
		DefaultSort: "shipped_on:asc",
	}
	first, err := parcels.ParseQuery("filter=status:eq:shipped&filter=shipped_on:gte:2026-03-01")
	if err != nil {
		log.Fatal(err)
	}
	cursor, err := first.NextCursor([]any{"2026-03-02", "00000000-0000-4000-8000-000000000009"})
	if err != nil {
		log.Fatal(err)
	}
	q, err := parcels.ParseQuery("filter=status:eq:shipped&filter=shipped_on:gte:2026-03-01&after=" + cursor)
	if err != nil {
		log.Fatal(err)
	}

	d := query.SQLite
	b := sq.Select("id").From("parcels").Where(sqlbuild.Where(d, q)).Where(sqlbuild.Keyset(d, q)).OrderBy(sqlbuild.OrderBy(d, q)...)
	text, args, err := sqlbuild.SQL(d, b)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(text)
	fmt.Println(args)
	// Output:
	// SELECT id FROM parcels WHERE status = ? AND shipped_on >= ? AND ((shipped_on > ? OR shipped_on IS NULL) OR (shipped_on = ? AND (id > ?))) ORDER BY shipped_on ASC NULLS LAST, id ASC
	// [shipped 2026-03-01 2026-03-02 2026-03-02 00000000-0000-4000-8000-000000000009]
}

// Placeholders is the placeholder format of a dialect, for a statement
// that a caller renders with squirrel itself: set it once, on the
// outermost builder.
func ExamplePlaceholders() {
	for _, d := range []query.Dialect{query.Postgres, query.SQLite} {
		text, _, err := sq.Update("parcels").Set("status", "shipped").Where("id = ?", "p1").
			PlaceholderFormat(sqlbuild.Placeholders(d)).ToSql()
		if err != nil {
			log.Fatal(err)
		}
		fmt.Println(d, text)
	}
	// Output:
	// postgres UPDATE parcels SET status = $1 WHERE id = $2
	// sqlite UPDATE parcels SET status = ? WHERE id = ?
}
