package excerpt_test

import (
	"fmt"

	"github.com/waybillhq/waybill/internal/excerpt"
)

func ExampleCut() {
	fmt.Println(excerpt.Cut("colour", 64))
	fmt.Println(excerpt.Cut("a-very-long-member-name", 6))
	fmt.Println(excerpt.Cut("crème brûlée", 3)) // è is two bytes: the cut keeps it out
	// Output:
	// colour
	// a-very…
	// cr…
}
