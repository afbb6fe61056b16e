package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// The receiver links Waybill's webhook/signature and nothing of the server:
// a receiver's build needs no database driver, OAuth, resources or JWT.
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
	deps := map[string]bool{}
	for _, p := range strings.Fields(string(out)) {
		deps[p] = true
	}
	assert.True(t, deps["github.com/waybillhq/waybill/webhook/signature"], "the receiver verifies with webhook/signature")
	for _, p := range []string{
		"github.com/waybillhq/waybill/webhook", "github.com/waybillhq/waybill/resource", "github.com/waybillhq/waybill/tenancy",
		"github.com/waybillhq/waybill/events", "github.com/waybillhq/waybill/query", "github.com/waybillhq/waybill/oauth",
		"github.com/waybillhq/waybill/oauth/bearer", "github.com/Masterminds/squirrel", "github.com/golang-jwt/jwt/v5",
		"database/sql",
	} {
		assert.False(t, deps[p], "the receiver links %s", p)
	}
}
