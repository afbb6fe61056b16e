package main

import (
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/waybillhq/waybill/internal/depstest"
)

// The receiver links Waybill's webhook/signature and nothing of the server:
// a receiver's build needs no database driver, OAuth, resources or JWT.
func TestDependencies(t *testing.T) {
	deps := depstest.Deps(t)
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
