package password_test

import (
	"context"
	"fmt"
	"strings"

	"github.com/waybillhq/waybill/oauth/password"
)

// A password is hashed once, when it is set, and verified at each sign-in.
func Example() {
	hash, err := password.Hash("correct horse battery staple")
	if err != nil {
		panic(err)
	}
	fmt.Println(strings.HasPrefix(hash, "$argon2id$v=19$m=19456,t=2,p=1$"))

	ok, _ := password.Verify(hash, "correct horse battery staple")
	fmt.Println(ok)
	ok, _ = password.Verify(hash, "Tr0ub4dor&3")
	fmt.Println(ok)
	// Output:
	// true
	// true
	// false
}

// A sign-in verifies within a Pool shared by the whole process; a
// password whose hash was written at an earlier cost gets a new hash to
// store, and a sign-in of an unknown user costs what a wrong password
// costs.
func ExamplePool() {
	hashes := password.NewPool(password.PoolOptions{}) // one hash per core
	ctx := context.Background()

	// A hash written at the cost of an earlier version.
	old, _ := password.HashWith(password.Params{Memory: 64 * 1024, Time: 3, Threads: 2}, "correct horse")

	ok, rehash, err := hashes.Verify(ctx, old, "correct horse")
	fmt.Println(ok, err)
	fmt.Println(strings.HasPrefix(rehash, "$argon2id$v=19$m=19456,t=2,p=1$"))

	ok, rehash, _ = hashes.Verify(ctx, rehash, "correct horse")
	fmt.Printf("%v %q\n", ok, rehash)

	// No such user: answer as a wrong password, after as long.
	fmt.Println(hashes.VerifyUnknown(ctx, "correct horse"))
	// Output:
	// true <nil>
	// true
	// true ""
	// <nil>
}
