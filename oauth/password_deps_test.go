package oauth_test

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/waybillhq/waybill/internal/depstest"
)

// The token service does not link password hashing: a host that signs
// users in with passwords imports oauth/password itself, and only then
// links argon2.
func TestNoPasswordHashing(t *testing.T) {
	deps := depstest.Deps(t)
	for _, p := range []string{"github.com/waybillhq/waybill/oauth/password", "golang.org/x/crypto/argon2"} {
		assert.False(t, deps[p], "go list -deps ./oauth lists %s", p)
	}
}
