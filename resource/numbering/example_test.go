package numbering_test

import (
	"fmt"

	"github.com/waybillhq/waybill/resource/numbering"
)

// Numbers count per branch, kind and year, and show with at least six
// digits.
func ExampleFormat() {
	fmt.Println(numbering.Format("Q", 2026, 42))
	fmt.Println(numbering.Format("INV", 2026, 1234567))
	// Output:
	// Q-2026-000042
	// INV-2026-1234567
}

// A resource numbers its records with the hooks of a field; the host
// creates the counters' table once at start, beside the registry's own.
func ExampleHooks() {
	quotations := numbering.Hooks("quotation_number", "Q", "quotation")
	// The first quotation of a branch in 2026 gets Q-2026-000001, the
	// next Q-2026-000002; another branch counts from 1 again.
	//
	//	if err := numbering.Migrate(ctx, db, dialect); err != nil { ... }
	//	registry.Register(resource.Resource{Name: "quotations", ..., Hooks: quotations})
	fmt.Println(quotations.BeforeCreate != nil)
	// Output:
	// true
}
