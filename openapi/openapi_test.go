package openapi_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/openapi"
)

func section(t *testing.T, path, id string) *openapi.Document {
	t.Helper()
	d := openapi.New(openapi.Info{Title: "t", Version: "1"})
	d.Tags = append(d.Tags, openapi.Tag{Name: "T"})
	require.NoError(t, d.AddSchema("Error", openapi.ErrorSchema()))
	d.Components.Headers = openapi.Headers()
	d.Paths[path] = &openapi.PathItem{Get: &openapi.Operation{OperationID: id, Tags: []string{"T"}, Summary: "s",
		Responses: map[string]*openapi.Response{"429": openapi.ResponseRef("RateLimited")}, Security: []openapi.SecurityRequirement{}}}
	d.Components.Responses["RateLimited"] = openapi.RateLimitedResponse()
	return d
}

func TestMerge(t *testing.T) {
	d := section(t, "/a", "getA")
	require.NoError(t, d.Merge(section(t, "/b", "getB")))
	assert.Len(t, d.Paths, 2)
	assert.Len(t, d.Tags, 1, "a tag of the same name and content is kept once")
	assert.Len(t, d.Components.Schemas, 1)
	hooks := section(t, "/c", "getC")
	hooks.Webhooks = map[string]*openapi.PathItem{"event": {}}
	require.NoError(t, d.Merge(hooks))
	assert.Contains(t, d.Webhooks, "event", "a section's webhooks are merged")

	for _, tc := range []struct {
		name    string
		section func(t *testing.T) *openapi.Document
		want    string
	}{
		{"path twice", func(t *testing.T) *openapi.Document { return section(t, "/a", "getOther") }, "path /a is described twice"},
		{"operationId twice", func(t *testing.T) *openapi.Document { return section(t, "/c", "getA") }, "operationId getA"},
		{"tag with another description", func(t *testing.T) *openapi.Document {
			s := section(t, "/c", "getC")
			s.Tags[0].Description = "other"
			return s
		}, "two tags are named T"},
		{"webhook twice", func(t *testing.T) *openapi.Document {
			s := section(t, "/c", "getC")
			s.Webhooks = map[string]*openapi.PathItem{"event": {}}
			return s
		}, "webhook event is described twice"},
		{"schema with another content", func(t *testing.T) *openapi.Document {
			s := section(t, "/c", "getC")
			s.Components.Schemas["Error"] = openapi.String("not the error")
			return s
		}, "two schemas are named Error"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			d := section(t, "/a", "getA")
			d.Webhooks = map[string]*openapi.PathItem{"event": {}}
			err := d.Merge(tc.section(t))
			require.Error(t, err)
			assert.Contains(t, err.Error(), tc.want)
		})
	}
}

func TestMarshal(t *testing.T) {
	d := section(t, "/a", "getA")
	d.Components.Schemas["Thing"] = openapi.Object([]string{"z"},
		openapi.Prop("z", openapi.String("<z> & more")), openapi.Prop("a", openapi.String("")))
	first, err := openapi.Marshal(d)
	require.NoError(t, err)
	second, err := openapi.Marshal(section(t, "/a", "getA"))
	require.NoError(t, err)
	assert.NotEqual(t, first, second)
	again, err := openapi.Marshal(d)
	require.NoError(t, err)
	assert.Equal(t, first, again, "the same document gives the same bytes")
	s := string(first)
	assert.Contains(t, s, `"<z> & more"`, "no HTML escaping")
	assert.Less(t, strings.Index(s, `"z": {`), strings.Index(s, `"a": {`), "properties keep their order")
	assert.True(t, strings.HasSuffix(s, "}\n"))
}
