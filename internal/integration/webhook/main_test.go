package webhook_test

import (
	"testing"

	"github.com/waybillhq/waybill/internal/testdb"
)

// TestMain runs the tests with testdb.Main, which says how many skipped for
// want of PostgreSQL.
func TestMain(m *testing.M) { testdb.Main(m) }
