package openapi

import (
	"bytes"
	"fmt"
	"maps"
	"slices"
)

// AddPath adds the item at path. It is an error when the document already
// describes path, or when an operation of item has the operationId of one
// the document has.
func (d *Document) AddPath(path string, item *PathItem) error {
	if _, ok := d.Paths[path]; ok {
		return fmt.Errorf("openapi: path %s is described twice", path)
	}
	ids := d.operationIDs()
	for _, op := range item.Operations() {
		if op == nil {
			continue
		}
		if ids[op.OperationID] {
			return fmt.Errorf("openapi: two operations have the operationId %s", op.OperationID)
		}
		ids[op.OperationID] = true
	}
	if d.Paths == nil {
		d.Paths = map[string]*PathItem{}
	}
	d.Paths[path] = item
	return nil
}

// operationIDs returns the set of the operationIds of the document.
func (d *Document) operationIDs() map[string]bool {
	ids := map[string]bool{}
	for _, item := range d.Paths {
		for _, op := range item.Operations() {
			if op != nil {
				ids[op.OperationID] = true
			}
		}
	}
	return ids
}

// AddSchema adds the schema component name. It is an error when the
// document has a schema of that name with another content.
func (d *Document) AddSchema(name string, s *Schema) error {
	if d.Components.Schemas == nil {
		d.Components.Schemas = map[string]*Schema{}
	}
	return add(d.Components.Schemas, "schema", name, s)
}

// Merge adds the paths, webhooks, tags and components of section to d: the
// description of other endpoints of the same server, for one document of
// them all. Tags are appended in section's order, paths and components
// added by name; d's info and servers stay. Section's parts are shared,
// not copied.
//
// It is an error when both describe a path, when an operationId would be
// used twice, or when a tag or component of one name has another content
// in each; one of the same name and content is kept once. On error d may
// have taken part of section.
func (d *Document) Merge(section *Document) error {
	for _, t := range section.Tags {
		i := slices.IndexFunc(d.Tags, func(u Tag) bool { return u.Name == t.Name })
		switch {
		case i < 0:
			d.Tags = append(d.Tags, t)
		case d.Tags[i] != t:
			return fmt.Errorf("openapi: two tags are named %s", t.Name)
		}
	}
	for _, p := range slices.Sorted(maps.Keys(section.Paths)) {
		if err := d.AddPath(p, section.Paths[p]); err != nil {
			return err
		}
	}
	for _, name := range slices.Sorted(maps.Keys(section.Webhooks)) {
		if _, ok := d.Webhooks[name]; ok {
			return fmt.Errorf("openapi: webhook %s is described twice", name)
		}
		if d.Webhooks == nil {
			d.Webhooks = map[string]*PathItem{}
		}
		d.Webhooks[name] = section.Webhooks[name]
	}
	c := &d.Components
	if c.Schemas == nil {
		c.Schemas = map[string]*Schema{}
	}
	if c.Responses == nil {
		c.Responses = map[string]*Response{}
	}
	if c.Headers == nil {
		c.Headers = map[string]*Header{}
	}
	if c.SecuritySchemes == nil {
		c.SecuritySchemes = map[string]*SecurityScheme{}
	}
	if err := addAll(c.Schemas, "schema", section.Components.Schemas); err != nil {
		return err
	}
	if err := addAll(c.Responses, "response", section.Components.Responses); err != nil {
		return err
	}
	if err := addAll(c.Headers, "header", section.Components.Headers); err != nil {
		return err
	}
	return addAll(c.SecuritySchemes, "security scheme", section.Components.SecuritySchemes)
}

func addAll[T any](into map[string]*T, kind string, from map[string]*T) error {
	for _, name := range slices.Sorted(maps.Keys(from)) {
		if err := add(into, kind, name, from[name]); err != nil {
			return err
		}
	}
	return nil
}

// add puts v into m as name unless m has it already with the same JSON.
func add[T any](m map[string]*T, kind, name string, v *T) error {
	old, ok := m[name]
	if !ok {
		m[name] = v
		return nil
	}
	a, err := marshal(old)
	if err != nil {
		return fmt.Errorf("openapi: %s %s: %w", kind, name, err)
	}
	b, err := marshal(v)
	if err != nil {
		return fmt.Errorf("openapi: %s %s: %w", kind, name, err)
	}
	if !bytes.Equal(a, b) {
		return fmt.Errorf("openapi: two %ss are named %s", kind, name)
	}
	return nil
}
