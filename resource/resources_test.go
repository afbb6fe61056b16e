package resource_test

import (
	"github.com/waybillhq/waybill/internal/apitest/fixture"
	"github.com/waybillhq/waybill/resource"
)

// testResources declares the resources of the tests, as the tests in
// internal/integration/resource serve them from a database.
func testResources() []*resource.Resource { return fixture.Resources() }
