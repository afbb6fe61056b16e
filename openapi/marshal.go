package openapi

import (
	"bytes"
	"encoding/json"
	"fmt"
)

// Marshal returns the document as indented JSON that ends in a newline.
// The same document always gives the same bytes: struct fields keep their
// order, map keys are sorted, properties keep theirs. <, > and & are
// written as they are, not escaped for HTML.
func Marshal(doc *Document) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	enc.SetIndent("", "  ")
	if err := enc.Encode(doc); err != nil {
		return nil, fmt.Errorf("openapi: %w", err)
	}
	return buf.Bytes(), nil
}

// marshal is json.Marshal without the escaping of <, > and &.
func marshal(v any) ([]byte, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(buf.Bytes(), []byte("\n")), nil
}
