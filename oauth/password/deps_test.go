package password_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/waybillhq/waybill/internal/depstest"
)

// The package links argon2 and package errors, and none of the token
// service: a host that hashes passwords need not link package oauth.
func TestDependencies(t *testing.T) {
	deps := depstest.Deps(t)
	assert.True(t, deps["golang.org/x/crypto/argon2"], "go list -deps ./oauth/password lists golang.org/x/crypto/argon2")
	for p := range deps {
		if depstest.Standard(p) || p == "github.com/waybillhq/waybill/oauth/password" || p == "github.com/waybillhq/waybill/errors" {
			continue
		}
		if !strings.HasPrefix(p, "golang.org/x/crypto/") && !strings.HasPrefix(p, "golang.org/x/sys/") {
			t.Errorf("oauth/password depends on %s; it should need only argon2 and package errors", p)
		}
	}
}
