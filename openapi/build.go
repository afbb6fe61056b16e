package openapi

// Small constructors, for documents written as Go values.

// Ref returns the local reference to the component name of kind
// ("schemas", "responses", "headers").
func Ref(kind, name string) string { return "#/components/" + kind + "/" + name }

// SchemaRef returns a reference to the schema component name.
func SchemaRef(name string) *Schema { return &Schema{Ref: Ref("schemas", name)} }

// HeaderRef returns a reference to the header component name.
func HeaderRef(name string) *Header { return &Header{Ref: Ref("headers", name)} }

// ResponseRef returns a reference to the response component name.
func ResponseRef(name string) *Response { return &Response{Ref: Ref("responses", name)} }

// Ptr returns a pointer to v, for the optional fields of a Schema.
func Ptr[T any](v T) *T { return &v }

// String returns a string schema with a description.
func String(description string) *Schema {
	return &Schema{Type: "string", Description: description}
}

// Object returns an object schema of props, of which required are
// required.
func Object(required []string, props ...Property) *Schema {
	return &Schema{Type: "object", Properties: props, Required: required}
}

// Prop returns the property name of schema s.
func Prop(name string, s *Schema) Property { return Property{Name: name, Schema: s} }

// JSON returns the content of a body or response that is application/json
// of schema s.
func JSON(s *Schema) map[string]*MediaType {
	return map[string]*MediaType{"application/json": {Schema: s}}
}

// FormOrJSON returns a required request body of the schema component
// schema, sent as application/x-www-form-urlencoded or as application/json.
func FormOrJSON(description, schema string) *RequestBody {
	return &RequestBody{
		Description: description,
		Required:    true,
		Content: map[string]*MediaType{
			"application/x-www-form-urlencoded": {Schema: SchemaRef(schema)},
			"application/json":                  {Schema: SchemaRef(schema)},
		},
	}
}

// WithHeaders adds references to the header components names to r and
// returns r.
func WithHeaders(r *Response, names ...string) *Response {
	if r.Headers == nil {
		r.Headers = map[string]*Header{}
	}
	for _, n := range names {
		r.Headers[n] = HeaderRef(n)
	}
	return r
}
