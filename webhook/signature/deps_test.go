package signature_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/waybillhq/waybill/internal/depstest"
)

// A receiver that imports this package links the standard library and the
// Standard Webhooks library, and none of the server: no database, no OAuth,
// no resources, no squirrel, no JWT.
func TestDependencies(t *testing.T) {
	allowed := map[string]bool{
		"github.com/standard-webhooks/standard-webhooks/libraries/go": true,
		"github.com/waybillhq/waybill/webhook/signature":              true,
	}
	for p := range depstest.Deps(t) {
		if !depstest.Standard(p) {
			assert.True(t, allowed[p], "webhook/signature depends on %s", p)
		}
	}
}
