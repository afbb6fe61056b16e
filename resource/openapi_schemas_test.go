package resource_test

import (
	"sort"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/resource"
	"github.com/waybillhq/waybill/tenancy"
)

// The schemas of a resource in its OpenAPI document: the record, whole
// and partial, and the bodies of its writes.

// oaTypes is the expected type and format of a field type.
var oaTypes = map[query.Type][2]string{
	query.UUID:      {"string", "uuid"},
	query.String:    {"string", ""},
	query.Enum:      {"string", ""},
	query.Integer:   {"integer", "int64"},
	query.Number:    {"number", "double"},
	query.Date:      {"string", "date"},
	query.Timestamp: {"string", "date-time"},
	query.Boolean:   {"boolean", ""},
}

// TestOpenAPIRecordSchemas checks the two schemas of a record: the whole
// record, which writes answer, with every field required, and the partial
// one, which the GETs answer (they take fields=), with only id required. A
// read-only resource, which has no writes, has only the partial one.
func TestOpenAPIRecordSchemas(t *testing.T) {
	_, doc := openAPIDoc(t, resource.OpenAPIInfo{})
	reg := openAPIRegistry(t)
	for _, r := range reg.Resources() {
		partial := oaRecord(t, doc, r.Name)
		if !r.ReadOnly {
			full := oaFullRecord(t, doc, r.Name)
			t.Run(r.Name, func(t *testing.T) {
				checkOARecordSchema(t, r, full, false)
			})
		}
		t.Run(r.Name+" partial", func(t *testing.T) {
			checkOARecordSchema(t, r, partial, true)
		})
		t.Run(r.Name+" answers", func(t *testing.T) {
			n := oaAt(t, doc, "paths", "/v1/{scopeId}/"+r.Name, "get", "operationId").(string)
			fullRef := strings.TrimSuffix(oaRecordRef(t, doc, "/v1/{scopeId}/"+r.Name, "get", "200", "items"), "Partial")
			assert.Equal(t, fullRef+"Partial", oaRecordRef(t, doc, "/v1/{scopeId}/"+r.Name+"/{id}", "get", "200"), n)
			listed := oaObj(t, doc, "paths", "/v1/{scopeId}/"+r.Name, "get", "responses", "200")
			assert.Equal(t, fullRef+"Partial", oaAt(t, listed, "content", resource.NDJSON, "schema", "$ref"), "%s: an export line is a record", n)
			assert.Equal(t, "string", oaAt(t, listed, "content", resource.CSV, "schema", "type"), n)
			assert.Contains(t, oaObj(t, listed, "headers"), resource.FeedCursorHeader, n)
			if r.ReadOnly {
				return
			}
			created := oaObj(t, doc, "paths", "/v1/{scopeId}/"+r.Name, "post", "responses", "201", "content", "application/json", "schema")
			envelopes := oaAt(t, created, "oneOf").([]any)
			require.Len(t, envelopes, 2)
			assert.Equal(t, fullRef, oaAt(t, oaResolve(t, doc, oaAt(t, envelopes[0].(map[string]any), "$ref").(string)), "properties", "data", "$ref"), n)
			assert.Equal(t, fullRef, oaAt(t, oaResolve(t, doc, oaAt(t, envelopes[1].(map[string]any), "$ref").(string)), "properties", "data", "items", "$ref"), n)
			assert.Equal(t, fullRef, oaRecordRef(t, doc, "/v1/{scopeId}/"+r.Name, "patch", "200", "items"), n)
			for _, m := range []string{"patch", "delete"} {
				assert.Equal(t, fullRef, oaRecordRef(t, doc, "/v1/{scopeId}/"+r.Name+"/{id}", m, "200"), "%s %s", n, m)
				assert.Equal(t, fullRef, oaRecordRef(t, doc, "/v1/{scopeId}/"+r.Name+"/{id}", m, "412"), "%s %s", n, m)
			}
		})
	}
}

// checkOARecordSchema checks a record schema s of r against its fields,
// whole or partial.
func checkOARecordSchema(t *testing.T, r *resource.Resource, s map[string]any, partial bool) {
	t.Helper()
	props := oaObj(t, s, "properties")
	var names []string
	for _, f := range r.AllFields() {
		names = append(names, f.Name)
		p := oaObj(t, props, f.Name)
		want := oaTypes[f.Type]
		if f.Nullable {
			assert.Equal(t, []any{want[0], "null"}, p["type"], f.Name)
		} else {
			assert.Equal(t, want[0], p["type"], f.Name)
		}
		if want[1] != "" {
			assert.Equal(t, want[1], p["format"], f.Name)
		} else {
			assert.NotContains(t, p, "format", f.Name)
		}
		if f.Type == query.Enum {
			values := []any{}
			for _, v := range f.Values {
				values = append(values, v)
			}
			if f.Nullable {
				values = append(values, nil)
			}
			assert.Equal(t, values, p["enum"], f.Name)
		}
		if f.Min != nil {
			assert.Equal(t, *f.Min, p["minimum"], f.Name)
		}
		if f.Max != nil {
			assert.Equal(t, *f.Max, p["maximum"], f.Name)
		}
		assert.Equal(t, !f.Create && !f.Update, p["readOnly"] == true, "%s readOnly", f.Name)
	}
	names = append(names, resource.OrganizationColumn)
	if r.ScopeType != tenancy.Organization {
		names = append(names, resource.BranchColumn)
	}
	assert.Len(t, props, len(names))
	if partial {
		assert.Equal(t, []any{"id"}, s["required"], "with fields=, only id is sure to be present")
		assert.Contains(t, s["description"], "`fields`")
	} else {
		assert.ElementsMatch(t, names, s["required"], "every column is always present")
	}
	org := oaObj(t, props, resource.OrganizationColumn)
	assert.Equal(t, "uuid", org["format"])
	assert.Equal(t, true, org["readOnly"])
	if r.ScopeType != tenancy.Organization {
		branch := oaObj(t, props, resource.BranchColumn)
		assert.Equal(t, true, branch["readOnly"])
		if r.ScopeType == tenancy.BranchOrNull {
			assert.Equal(t, []any{"string", "null"}, branch["type"])
		} else {
			assert.Equal(t, "string", branch["type"])
		}
	}
}

func TestOpenAPIWriteSchemas(t *testing.T) {
	_, doc := openAPIDoc(t, resource.OpenAPIInfo{})
	// body returns the schema of one record of the request body: the
	// first of a POST's one-or-many.
	body := func(path, method string) map[string]any {
		op := oaObj(t, doc, "paths", path, method)
		schema := oaObj(t, op, "requestBody", "content", "application/json", "schema")
		if method == "post" {
			many := oaAt(t, schema, "oneOf").([]any)
			require.Len(t, many, 2)
			assert.Equal(t, oaAt(t, many[0].(map[string]any), "$ref"), oaAt(t, many[1].(map[string]any), "items", "$ref"), "a batch is an array of the same")
			assert.EqualValues(t, resource.MaxBatchItems, oaAt(t, many[1].(map[string]any), "maxItems"))
			schema = many[0].(map[string]any)
		}
		return oaResolve(t, doc, oaAt(t, schema, "$ref").(string))
	}
	oaKeys := func(m map[string]any) []string {
		var ks []string
		for k := range m {
			ks = append(ks, k)
		}
		sort.Strings(ks)
		return ks
	}
	readOnly := func(s map[string]any) []string {
		var ks []string
		for k, p := range oaObj(t, s, "properties") {
			if p.(map[string]any)["readOnly"] == true {
				ks = append(ks, k)
			}
		}
		sort.Strings(ks)
		return ks
	}

	t.Run("quotations", func(t *testing.T) {
		writable := []string{"account_id", "quotation_date", "status", "total_packages", "total_weight_kg", "valid_until"}
		create := body("/v1/{scopeId}/quotations", "post")
		assert.Equal(t, writable, oaKeys(oaObj(t, create, "properties")))
		assert.ElementsMatch(t, []any{"account_id", "quotation_date", "valid_until"}, create["required"])
		assert.Equal(t, false, create["additionalProperties"])
		update := body("/v1/{scopeId}/quotations/{id}", "patch")
		assert.Equal(t, writable, oaKeys(oaObj(t, update, "properties")))
		assert.NotContains(t, update, "required")
		assert.Equal(t, false, update["additionalProperties"])
		assert.Equal(t, []any{"integer", "null"}, oaAt(t, create, "properties", "total_packages", "type"))
		assert.Equal(t, 0.0, oaAt(t, create, "properties", "total_packages", "minimum"))
		assert.Equal(t, "date", oaAt(t, create, "properties", "valid_until", "format"))
		assert.Contains(t, oaAt(t, create, "properties", "account_id", "description"), "accounts of the record's branch")

		record := oaFullRecord(t, doc, "quotations")
		assert.Equal(t, []string{"branch_id", "created_at", "id", "organization_id", "quotation_number", "updated_at"}, readOnly(record))
		assert.Equal(t, []any{"id", "quotation_number", "account_id", "quotation_date", "valid_until", "status",
			"total_weight_kg", "total_packages", "created_at", "updated_at", "organization_id", "branch_id"}, record["required"])
	})

	t.Run("accounts", func(t *testing.T) {
		writable := []string{"account_type", "comment", "company_name", "email", "status"}
		create := body("/v1/{scopeId}/accounts", "post")
		assert.Equal(t, writable, oaKeys(oaObj(t, create, "properties")))
		assert.ElementsMatch(t, []any{"company_name", "account_type"}, create["required"])
		assert.Equal(t, 200.0, oaAt(t, create, "properties", "company_name", "maxLength"))
		assert.Equal(t, 1000.0, oaAt(t, create, "properties", "email", "maxLength"), "String fields default to 1000 characters")
		assert.Equal(t, []any{"string", "null"}, oaAt(t, create, "properties", "comment", "type"))
		assert.Equal(t, "string", oaAt(t, create, "properties", "company_name", "type"))
		assert.Equal(t, []any{"active", "inactive", "blocked"}, oaAt(t, create, "properties", "status", "enum"))
		update := body("/v1/{scopeId}/accounts/{id}", "patch")
		assert.Equal(t, writable, oaKeys(oaObj(t, update, "properties")))
		assert.NotContains(t, update, "required")

		record := oaRecord(t, doc, "accounts")
		assert.Equal(t, []string{"branch_id", "created_at", "id", "organization_id", "updated_at"}, readOnly(record))
		assert.Equal(t, []any{"string", "null"}, oaAt(t, record, "properties", "email", "type"))
	})

	t.Run("read-only resources have no write schemas", func(t *testing.T) {
		schemas := oaObj(t, doc, "components", "schemas")
		assert.Contains(t, schemas, "BranchPartial")
		assert.Contains(t, schemas, "BranchPartialEnvelope")
		for _, unused := range []string{"Branch", "BranchItemEnvelope"} {
			assert.NotContains(t, schemas, unused, "no answer carries a whole branch: every answer is a GET's")
		}
		assert.NotContains(t, schemas, "BranchCreate")
		assert.NotContains(t, schemas, "BranchUpdate")
		assert.Contains(t, oaAt(t, doc, "paths", "/v1/{scopeId}/branches", "get", "description"), "405 `method_not_allowed`")
	})
}
