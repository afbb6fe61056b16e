package tenancy_test

import (
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/waybillhq/waybill/internal/depstest"
)

// The middleware links in what checking a token needs (oauth/bearer), not
// the token service: not package oauth, nor the templates of its login and
// consent pages.
func TestDependencies(t *testing.T) {
	deps := depstest.Deps(t)

	cases := []struct {
		pkg  string
		want bool
	}{
		{"github.com/waybillhq/waybill/oauth/bearer", true},
		{"github.com/waybillhq/waybill/oauth", false},
		{"github.com/waybillhq/waybill/oauth/sqlstore", false},
		{"html/template", false},
		{"github.com/waybillhq/waybill/query", false},
		{"github.com/Masterminds/squirrel", false},
		{"text/template", false},
	}
	for _, tc := range cases {
		t.Run(tc.pkg, func(t *testing.T) {
			assert.Equal(t, tc.want, deps[tc.pkg], "go list -deps ./tenancy lists %s", tc.pkg)
		})
	}
	for p := range deps {
		if strings.HasPrefix(p, "github.com/waybillhq/waybill/oauth/") && p != "github.com/waybillhq/waybill/oauth/bearer" {
			t.Errorf("tenancy depends on %s; only oauth/bearer of the oauth tree is allowed", p)
		}
	}
}
