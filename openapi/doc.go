// Package openapi holds the shapes of an OpenAPI 3.1 document, as Waybill's
// packages write them, and what they share: package resource describes a
// Registry's API with them and package oauth the endpoints of its token
// service, and a host merges the two (Document.Merge) into the one document
// it serves.
//
// It is a writer's model, not a reader's: each type has the fields Waybill
// uses, in the order the output shows them, and Marshal writes the same
// bytes for the same document every time (struct fields in order, map keys
// sorted, the properties of a schema in their declared order, no HTML
// escaping). It depends on no other package of the module.
//
// Decisions:
//
//   - A document is built from plain values and pointers; nothing is shared
//     between calls, so a caller may change what a constructor returned.
//   - Merging is strict: a path described twice, an operationId used twice,
//     or a component (schema, response, header, security scheme) or tag of
//     the same name with another content is an error. Components of the same
//     name and content, which every section built with ErrorSchema, Headers
//     and the error responses of this package declares, are kept once.
//   - The error model every Waybill endpoint shares (the Error schema, its
//     responses, the challenge and rate limit headers) lives here, so that
//     the sections of a document declare it alike without importing each
//     other. The error codes are the callers' (package errors names them).
package openapi
