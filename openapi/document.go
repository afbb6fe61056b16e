package openapi

// The document's shapes. Structs keep the key order of the output fixed;
// the maps among them are written with sorted keys by encoding/json.

// Version is the OpenAPI version the documents declare.
const Version = "3.1.0"

// Document is an OpenAPI document.
type Document struct {
	// OpenAPI is the OpenAPI version, Version.
	OpenAPI string `json:"openapi"`
	// Info says what the API is.
	Info Info `json:"info"`
	// Servers are the base URLs of the API.
	Servers []Server `json:"servers"`
	// Tags group the operations, in the order documentation shows them.
	Tags []Tag `json:"tags"`
	// Paths are the path items by path.
	Paths map[string]*PathItem `json:"paths"`
	// Webhooks are the requests the API sends, by name: what a receiver
	// of its webhooks is called with.
	Webhooks map[string]*PathItem `json:"webhooks,omitempty"`
	// Components are what the document refers to by name.
	Components Components `json:"components"`
}

// New returns an empty document with the given info: no servers, tags or
// paths, and empty component maps.
func New(info Info) *Document {
	return &Document{
		OpenAPI: Version,
		Info:    info,
		Servers: []Server{},
		Tags:    []Tag{},
		Paths:   map[string]*PathItem{},
		Components: Components{
			Schemas:         map[string]*Schema{},
			Responses:       map[string]*Response{},
			Headers:         map[string]*Header{},
			SecuritySchemes: map[string]*SecurityScheme{},
		},
	}
}

// Info is what a document says about the API as a whole.
type Info struct {
	Title       string `json:"title"`
	Version     string `json:"version"`
	Description string `json:"description,omitempty"`
}

// Server is a base URL of the API.
type Server struct {
	URL         string `json:"url"`
	Description string `json:"description,omitempty"`
}

// Tag names a group of operations.
type Tag struct {
	Name        string `json:"name"`
	Description string `json:"description,omitempty"`
}

// PathItem is the operations of one path, with the parameters they share.
// It has the methods Waybill's endpoints use.
type PathItem struct {
	Parameters []*Parameter `json:"parameters,omitempty"`
	Get        *Operation   `json:"get,omitempty"`
	Post       *Operation   `json:"post,omitempty"`
	Put        *Operation   `json:"put,omitempty"`
	Patch      *Operation   `json:"patch,omitempty"`
	Delete     *Operation   `json:"delete,omitempty"`
}

// Operations returns the operations of the item in the order GET, POST,
// PUT, PATCH, DELETE; a method the item has not is nil.
func (p *PathItem) Operations() []*Operation {
	return []*Operation{p.Get, p.Post, p.Put, p.Patch, p.Delete}
}

// SecurityRequirement names security schemes and the scopes each needs;
// the empty requirement means no authentication.
type SecurityRequirement map[string][]string

// Operation is one method of a path.
type Operation struct {
	Tags        []string             `json:"tags"`
	Summary     string               `json:"summary"`
	Description string               `json:"description,omitempty"`
	OperationID string               `json:"operationId"`
	Parameters  []*Parameter         `json:"parameters,omitempty"`
	RequestBody *RequestBody         `json:"requestBody,omitempty"`
	Responses   map[string]*Response `json:"responses"`
	// Security is required: an operation without authentication says so
	// with an empty list.
	Security []SecurityRequirement `json:"security"`
}

// Parameter is a path, query or header parameter.
type Parameter struct {
	Name        string  `json:"name"`
	In          string  `json:"in"`
	Description string  `json:"description,omitempty"`
	Required    bool    `json:"required,omitempty"`
	Style       string  `json:"style,omitempty"`
	Explode     *bool   `json:"explode,omitempty"`
	Schema      *Schema `json:"schema"`
	Example     any     `json:"example,omitempty"`
}

// RequestBody is the body an operation takes.
type RequestBody struct {
	Description string                `json:"description,omitempty"`
	Required    bool                  `json:"required"`
	Content     map[string]*MediaType `json:"content"`
}

// MediaType is the schema and examples of one media type of a body.
type MediaType struct {
	Schema   *Schema             `json:"schema"`
	Examples map[string]*Example `json:"examples,omitempty"`
}

// Example is a named example of a body.
type Example struct {
	Summary string `json:"summary,omitempty"`
	Value   any    `json:"value"`
}

// Response is a response of an operation, or a reference to a response
// component (Ref alone).
type Response struct {
	Ref         string                `json:"$ref,omitempty"`
	Description string                `json:"description,omitempty"`
	Headers     map[string]*Header    `json:"headers,omitempty"`
	Content     map[string]*MediaType `json:"content,omitempty"`
}

// Header is a response header, or a reference to a header component (Ref
// alone).
type Header struct {
	Ref         string  `json:"$ref,omitempty"`
	Description string  `json:"description,omitempty"`
	Required    bool    `json:"required,omitempty"`
	Schema      *Schema `json:"schema,omitempty"`
}

// Components are the named parts a document refers to with $ref.
type Components struct {
	Schemas         map[string]*Schema         `json:"schemas"`
	Responses       map[string]*Response       `json:"responses"`
	Headers         map[string]*Header         `json:"headers"`
	SecuritySchemes map[string]*SecurityScheme `json:"securitySchemes"`
}

// SecurityScheme is a way to authenticate: "oauth2" with Flows, or "http"
// with Scheme ("bearer", "basic").
type SecurityScheme struct {
	Type         string      `json:"type"`
	Description  string      `json:"description,omitempty"`
	Scheme       string      `json:"scheme,omitempty"`
	BearerFormat string      `json:"bearerFormat,omitempty"`
	Flows        *OAuthFlows `json:"flows,omitempty"`
}

// OAuthFlows are the OAuth flows of an oauth2 security scheme.
type OAuthFlows struct {
	AuthorizationCode *OAuthFlow `json:"authorizationCode,omitempty"`
	ClientCredentials *OAuthFlow `json:"clientCredentials,omitempty"`
}

// OAuthFlow is one OAuth flow: its endpoints and the scopes it grants, each
// with its description.
type OAuthFlow struct {
	AuthorizationURL string            `json:"authorizationUrl,omitempty"`
	TokenURL         string            `json:"tokenUrl"`
	RefreshURL       string            `json:"refreshUrl,omitempty"`
	Scopes           map[string]string `json:"scopes"`
}

// Schema is a JSON Schema (2020-12, as OpenAPI 3.1 uses it), or a reference
// to a schema component (Ref alone). Type is a string, or a list of strings
// for a nullable value ([T, "null"]).
type Schema struct {
	Ref                  string         `json:"$ref,omitempty"`
	Description          string         `json:"description,omitempty"`
	Type                 any            `json:"type,omitempty"`
	Format               string         `json:"format,omitempty"`
	Const                any            `json:"const,omitempty"`
	Enum                 []any          `json:"enum,omitempty"`
	Default              any            `json:"default,omitempty"`
	Minimum              *float64       `json:"minimum,omitempty"`
	Maximum              *float64       `json:"maximum,omitempty"`
	MinLength            *int           `json:"minLength,omitempty"`
	MaxLength            *int           `json:"maxLength,omitempty"`
	Pattern              string         `json:"pattern,omitempty"`
	Items                *Schema        `json:"items,omitempty"`
	MinItems             *int           `json:"minItems,omitempty"`
	MaxItems             *int           `json:"maxItems,omitempty"`
	Properties           Properties     `json:"properties,omitempty"`
	Required             []string       `json:"required,omitempty"`
	AdditionalProperties *bool          `json:"additionalProperties,omitempty"`
	OneOf                []*Schema      `json:"oneOf,omitempty"`
	Discriminator        *Discriminator `json:"discriminator,omitempty"`
	ReadOnly             bool           `json:"readOnly,omitempty"`
	WriteOnly            bool           `json:"writeOnly,omitempty"`
	Examples             []any          `json:"examples,omitempty"`
}

// Discriminator says which property picks the schema of a oneOf.
type Discriminator struct {
	PropertyName string            `json:"propertyName"`
	Mapping      map[string]string `json:"mapping,omitempty"`
}

// Properties are the properties of an object schema, written in their
// declared order.
type Properties []Property

// Property is a named property of an object schema.
type Property struct {
	Name   string
	Schema *Schema
}

// MarshalJSON writes the properties as one JSON object in their order.
func (p Properties) MarshalJSON() ([]byte, error) {
	var b []byte
	b = append(b, '{')
	for i, pr := range p {
		if i > 0 {
			b = append(b, ',')
		}
		name, err := marshal(pr.Name)
		if err != nil {
			return nil, err
		}
		b = append(b, name...)
		b = append(b, ':')
		v, err := marshal(pr.Schema)
		if err != nil {
			return nil, err
		}
		b = append(b, v...)
	}
	return append(b, '}'), nil
}
