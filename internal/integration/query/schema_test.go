package query_test

import "github.com/waybillhq/waybill/query"

// testSchema is the schema of the fixture table used by every test here,
// the same as the one of query's own tests.
func testSchema() *query.Schema {
	return &query.Schema{
		Fields: []query.Field{
			{Name: "id", Type: query.UUID, Filterable: true, Sortable: true},
			{Name: "name", Type: query.String, Filterable: true, Sortable: true},
			{Name: "status", Type: query.Enum, Values: []string{"draft", "sent", "accepted"}, Filterable: true, Sortable: true},
			{Name: "packages", Type: query.Integer, Filterable: true, Sortable: true},
			{Name: "weight", Type: query.Number, Filterable: true, Sortable: true},
			{Name: "day", Type: query.Date, Filterable: true, Sortable: true, Nullable: true},
			{Name: "created_at", Type: query.Timestamp, Filterable: true, Sortable: true},
			{Name: "active", Type: query.Boolean, Filterable: true, Sortable: true},
			{Name: "comment", Type: query.String, Filterable: true, Nullable: true},
			{Name: "code", Column: "ref_code", Type: query.String, Filterable: true, Ops: []query.Op{query.Eq, query.In}},
			{Name: "secret", Type: query.String},
		},
		DefaultSort: "created_at:desc",
		Reserved:    []string{"organization_id", "branch_id"},
	}
}

// cursorSchema is testSchema with cursors on and comment sortable, so that
// a nullable string can be a sort key.
func cursorSchema() *query.Schema {
	s := testSchema()
	s.Name = "items"
	s.CursorKey = []byte("test cursor key, 32 bytes or more")
	for i := range s.Fields {
		if s.Fields[i].Name == "comment" {
			s.Fields[i].Sortable = true
		}
	}
	return s
}
