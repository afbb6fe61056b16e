package signature_test

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// A receiver that imports this package links the standard library and the
// Standard Webhooks library, and none of the server: no database, no OAuth,
// no resources, no squirrel, no JWT.
func TestDependencies(t *testing.T) {
	gobin, err := exec.LookPath("go")
	if err != nil {
		if os.Getenv("CI") != "" {
			t.Fatalf("the go command is needed to list the dependencies: %v", err)
		}
		t.Skipf("skipped: the go command is not on PATH (%v)", err)
	}
	out, err := exec.Command(gobin, "list", "-deps", ".").Output()
	require.NoError(t, err, "go list -deps")
	allowed := map[string]bool{
		"github.com/standard-webhooks/standard-webhooks/libraries/go": true,
		"github.com/waybillhq/waybill/webhook/signature":              true,
	}
	for _, p := range strings.Fields(string(out)) {
		first, _, _ := strings.Cut(p, "/")
		if !strings.Contains(first, ".") {
			continue // the standard library
		}
		assert.True(t, allowed[p], "webhook/signature depends on %s", p)
	}
}
