package resource

import (
	"strconv"
	"strings"

	"github.com/waybillhq/waybill/openapi"
	"github.com/waybillhq/waybill/query"
)

// This file describes the list parameters of a resource: paging, sort and
// filter, from its query schema.

func oaListParameters(r *Resource) []*openapi.Parameter {
	s := r.Schema()
	maxLimit := s.MaxLimit
	if maxLimit <= 0 {
		maxLimit = query.MaxLimit
	}
	defaultLimit := s.DefaultLimit
	if defaultLimit <= 0 {
		defaultLimit = min(query.DefaultLimit, maxLimit)
	}
	explode := true
	return []*openapi.Parameter{
		{
			Name: "limit", In: "query",
			Description: "The page size: an integer from 1 to " + strconv.Itoa(maxLimit) + ". Anything else gives 400 `invalid_request`.",
			Schema:      &openapi.Schema{Type: "integer", Format: "int32", Minimum: openapi.Ptr(1.0), Maximum: openapi.Ptr(float64(maxLimit)), Default: defaultLimit},
		},
		{
			Name: "offset", In: "query",
			Description: "The number of records to skip: an integer of at least 0. The database still reads the skipped records, so a deep page costs what it skips, and records written meanwhile shift the pages: to walk a whole list, follow `after` instead.",
			Schema:      &openapi.Schema{Type: "integer", Format: "int64", Minimum: openapi.Ptr(0.0), Default: 0},
		},
		{
			Name: "after", In: "query",
			Description: "A cursor: the `pagination.next_cursor` of the previous page (also in its `Link: <...>; rel=\"next\"` header), for the records after that page's last one in the same filters and sort. " +
				"The database seeks to the position in index order, so every page costs what the first does, and records written meanwhile are neither skipped nor repeated (a record whose sort value changes moves). " +
				"Not with `offset`. A cursor is opaque and authenticated: one that was altered, or made for other filters, another sort or another resource, gives 400 `invalid_request`; start the walk again without `after`.",
			Schema: &openapi.Schema{Type: "string", MaxLength: openapi.Ptr(query.MaxCursorLength)},
		},
		{
			Name: "sort", In: "query", Style: "form", Explode: &explode,
			Description: oaSortDescription(s),
			Schema:      &openapi.Schema{Type: "array", Items: &openapi.Schema{Type: "string"}},
			Example:     oaSortExample(s),
		},
		{
			Name: "filter", In: "query", Style: "form", Explode: &explode,
			Description: oaFilterDescription(s),
			Schema:      &openapi.Schema{Type: "array", Items: &openapi.Schema{Type: "string"}, MaxItems: openapi.Ptr(query.MaxFilters)},
			Example:     oaFilterExample(s),
		},
	}
}

func oaSortDescription(s *query.Schema) string {
	var sortable []string
	for _, f := range s.Fields {
		if f.Sortable {
			sortable = append(sortable, "`"+f.Name+"`")
		}
	}
	tiebreaker := s.Tiebreaker
	if tiebreaker == "" {
		tiebreaker = "id"
	}
	def := "`" + s.DefaultSort + "`"
	if s.DefaultSort == "" {
		def = "by `" + tiebreaker + "` alone"
	}
	return "The order: `field:asc` or `field:desc` (a key without a direction is ascending), repeated or comma-separated for several keys, at most " +
		strconv.Itoa(query.MaxSortKeys) + ". Sortable fields: " + strings.Join(sortable, ", ") + ". " +
		"`" + tiebreaker + "` is always appended as the last key, in the direction of the key before it, so that pages are stable. " +
		"Without `sort` the order is " + def + ". `organization_id` and `branch_id` cannot be sorted on."
}

func oaSortExample(s *query.Schema) any {
	if s.DefaultSort != "" {
		return []string{s.DefaultSort}
	}
	return nil
}

// oaFilterValue says how a filter value of type t is written.
func oaFilterValue(f *query.Field) string {
	switch f.Type {
	case query.UUID:
		return "a UUID"
	case query.String:
		return "text"
	case query.Enum:
		return "one of " + strings.Join(f.Values, ", ")
	case query.Integer:
		return "an integer"
	case query.Number:
		return "a decimal number"
	case query.Date:
		return "`YYYY-MM-DD`"
	case query.Timestamp:
		return "RFC 3339, or `YYYY-MM-DD` for midnight UTC"
	case query.Boolean:
		return "`true` or `false`"
	}
	return f.Type.String()
}

func oaFilterDescription(s *query.Schema) string {
	var b strings.Builder
	b.WriteString("Filters, `field:operator:value`, repeatable (at most " + strconv.Itoa(query.MaxFilters) + "); every filter must match. ")
	b.WriteString("A filter is split on its first two colons only, so `created_at:gte:2026-01-01T10:00:00Z` works. ")
	b.WriteString("`eq`, `ne`, `gt`, `gte`, `lt`, `lte` compare typed values (`ne` never matches null); ")
	b.WriteString("`in` takes a comma-separated list of at most " + strconv.Itoa(query.MaxInValues) + " values, where a value that holds a comma is written in double quotes (a quote inside doubled: `\"a, \"\"b\"\"\"`); ")
	b.WriteString("`like` (case-sensitive) and `ilike` (case-insensitive) match a pattern where `%` is the only wildcard and every other character, `_` and `\\` included, matches itself (in a URL the `%` is written `%25`: `filter=company_name:ilike:acme%25`); ")
	b.WriteString("`isnull` takes `true` (is null) or `false` (is not null). ")
	b.WriteString("A value is at most " + strconv.Itoa(query.MaxValueLength) + " bytes. ")
	b.WriteString("An unknown field or operator, an operator the field does not allow, or a value that does not parse as the field's type gives 400 `invalid_request` naming the field; `organization_id` and `branch_id` cannot be filtered.\n\n")
	b.WriteString("Filterable fields, with their type and operators:\n")
	for i := range s.Fields {
		f := &s.Fields[i]
		if !f.Filterable {
			continue
		}
		ops := f.Ops
		if ops == nil {
			ops = query.DefaultOps(f.Type)
		}
		opNames := make([]string, len(ops))
		for j, op := range ops {
			opNames[j] = string(op)
		}
		b.WriteString("\n- `" + f.Name + "` (" + f.Type.String() + ": " + oaFilterValue(f) + "): " + strings.Join(opNames, ", "))
	}
	return b.String()
}

func oaFilterExample(s *query.Schema) any {
	for i := range s.Fields {
		f := &s.Fields[i]
		if f.Filterable && f.Name == "created_at" {
			return []string{"created_at:gte:2026-01-01T00:00:00Z"}
		}
	}
	return nil
}
