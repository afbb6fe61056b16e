package events_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/waybillhq/waybill/events"
	"github.com/waybillhq/waybill/resource"
)

// TestOpenAPIPrefixes: the feed is described where Mount serves it, under
// the registry's first prefix, and nowhere when the registry has none.
func TestOpenAPIPrefixes(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct {
		name     string
		prefixes []string
		want     []string
	}{
		{name: "default", want: []string{"/v1/{scopeId}/events"}},
		{name: "others", prefixes: []string{"/api/v2", "/v2"}, want: []string{"/api/v2/{scopeId}/events"}},
		{name: "none", prefixes: []string{}},
	} {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			d := (&events.Feed{Registry: &resource.Registry{Prefixes: tt.prefixes}}).OpenAPI()
			var got []string
			for p := range d.Paths {
				got = append(got, p)
			}
			assert.ElementsMatch(t, tt.want, got)
		})
	}
}
