package netguard_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"log"
	"net/http"
	"time"

	"github.com/waybillhq/waybill/netguard"
)

// CheckURL explains to the client why it refuses a URL it gave.
func ExampleGuard_CheckURL() {
	var g netguard.Guard // refuses addresses that are not public
	for _, u := range []string{
		"https://93.184.216.34/hooks/waybill",
		"http://169.254.169.254/latest/meta-data/",
		"http://[::1]:8080/hook",
		"https://user:password@93.184.216.34/hook",
	} {
		err := g.CheckURL(context.Background(), u)
		fmt.Printf("%v (private address: %t)\n", err, errors.Is(err, netguard.ErrPrivateAddress))
	}
	// Output:
	// <nil> (private address: false)
	// the URL's host is a link-local address (169.254.169.254) (private address: true)
	// the URL's host is a loopback address (::1) (private address: true)
	// the URL must not contain a user name or password (private address: false)
}

// A server sends its requests to the URLs clients give through Client, so that a host name that resolves
// to a private address at delivery, though not at registration, is
// refused too.
func ExampleGuard_Client() {
	client := netguard.Guard{}.Client(10 * time.Second)
	req, err := http.NewRequest(http.MethodPost, "http://localhost:8081/", bytes.NewReader([]byte(`{}`)))
	if err != nil {
		log.Fatal(err)
	}
	_, err = client.Do(req)
	fmt.Println(errors.Is(err, netguard.ErrPrivateAddress))
	// Output:
	// true
}
