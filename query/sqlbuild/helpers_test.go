package sqlbuild_test

import "github.com/waybillhq/waybill/internal/querytest"

// The tests of sqlbuild use the standard library only, besides squirrel,
// which sqlbuild itself links: an importer's go mod tidy resolves the
// modules of these files too.

const anID = "0a1b2c3d-0000-4000-8000-00000000abcd"

// The fixtures and checks shared with query's tests; testSchema has cursors
// on.
var (
	testSchema         = querytest.CursorSchema
	mustParse          = querytest.MustParse
	cursorFor          = querytest.CursorFor
	checkErrorContains = querytest.CheckErrorContains
	checkEqual         = querytest.CheckEqual
)
