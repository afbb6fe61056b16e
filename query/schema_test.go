package query_test

import (
	"net/url"
	"strings"
	"sync"
	"testing"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/query"
)

// TestParseValidatesLazily checks that Parse is safe on a schema whose
// Validate never ran: a valid one parses, an invalid one fails every Parse
// with an internal error that wraps Validate's, before any value is read.
func TestParseValidatesLazily(t *testing.T) {
	tests := []struct {
		name    string
		schema  func() *query.Schema
		values  url.Values
		wantErr string // "" means Parse succeeds
	}{
		{
			name:   "valid",
			schema: testSchema,
			values: url.Values{"filter": {"status:eq:draft"}, "sort": {"name"}},
		},
		{
			name: "column not an identifier",
			schema: func() *query.Schema {
				return &query.Schema{Fields: []query.Field{{Name: "id", Type: query.UUID}, {Name: "x", Column: "x; DROP TABLE t", Type: query.String, Filterable: true}}}
			},
			values:  url.Values{"filter": {"x:eq:a"}},
			wantErr: "not a plain identifier",
		},
		{
			name: "no tiebreaker",
			schema: func() *query.Schema {
				return &query.Schema{Fields: []query.Field{{Name: "name", Type: query.String, Sortable: true}}}
			},
			values:  url.Values{},
			wantErr: "tiebreaker",
		},
		{
			name: "enum without values",
			schema: func() *query.Schema {
				return &query.Schema{Fields: []query.Field{{Name: "id", Type: query.UUID}, {Name: "s", Type: query.Enum, Filterable: true}}}
			},
			values:  url.Values{"filter": {"s:eq:a"}},
			wantErr: "has no values",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s := tt.schema()
			// Concurrent first Parses validate once, without a race.
			var wg sync.WaitGroup
			errs := make([]error, 4)
			for i := range errs {
				wg.Go(func() { _, errs[i] = s.Parse(tt.values) })
			}
			wg.Wait()
			for i, err := range errs {
				if tt.wantErr == "" {
					if err != nil {
						t.Errorf("Parse #%d(%v) = %v, want no error", i, tt.values, err)
					}
					continue
				}
				e, ok := apierrors.As(err)
				if !ok {
					t.Fatalf("Parse #%d(%v) = %#v (%T), want an *apierrors.Error", i, tt.values, err, err)
				}
				if e.Code != apierrors.CodeServerError {
					t.Errorf("Parse #%d(%v) code = %q, want %q", i, tt.values, e.Code, apierrors.CodeServerError)
				}
				if cause := e.Unwrap(); cause == nil || !strings.Contains(cause.Error(), tt.wantErr) {
					t.Errorf("Parse #%d(%v) wraps %v, want Validate's error containing %q", i, tt.values, cause, tt.wantErr)
				}
			}
		})
	}
}
