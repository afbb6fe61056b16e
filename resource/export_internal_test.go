package resource

import (
	"net/http"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	apierrors "github.com/waybillhq/waybill/errors"
)

// Three organizations share the export slots of a registry: none takes
// more than half of them, and together they take no more than all.
func TestExportSlots(t *testing.T) {
	t.Parallel()
	g := &Registry{ExportsAtOnce: 4}
	take := func(org string, want int) func() {
		t.Helper()
		release, err := g.takeExport(org)
		if want == http.StatusOK {
			require.NoError(t, err, org)
			return release
		}
		e, ok := apierrors.As(err)
		require.True(t, ok, "%s: %v", org, err)
		assert.Equal(t, want, e.Status, "%s: %v", org, err)
		assert.NotEmpty(t, e.Header.Get("Retry-After"))
		return nil
	}
	a1 := take("a", http.StatusOK)
	take("a", http.StatusOK)
	take("a", http.StatusTooManyRequests) // half of the four is a's
	take("b", http.StatusOK)
	take("c", http.StatusOK)
	take("b", http.StatusServiceUnavailable) // all four run
	take("c", http.StatusServiceUnavailable)
	a1()
	c2 := take("c", http.StatusOK) // a's ended export freed a slot for c
	take("a", http.StatusServiceUnavailable)
	c2()
	take("a", http.StatusOK)

	var d Registry // the default: four, two an organization
	for range DefaultExportsAtOnce / 2 {
		_, err := d.takeExport("a")
		require.NoError(t, err)
	}
	_, err := d.takeExport("a")
	assert.Equal(t, apierrors.CodeRateLimited, apierrors.CodeOf(err))
}
