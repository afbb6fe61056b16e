package webhook_test

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"time"

	"github.com/waybillhq/waybill/webhook"
)

// A receiver reads the body whole, checks it with Verify before it trusts
// any of it, and only then does its work and answers 2xx.
func ExampleVerify() {
	secret := webhook.NewSecret() // a receiver keeps the secret the endpoint's registration answered with

	receiver := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			return
		}
		if err := webhook.Verify(secret, r.Header, body); err != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		// Handle the event once per webhook-id: a retried delivery has
		// the same one.
		fmt.Println("handled", r.Header.Get(webhook.HeaderID))
		w.WriteHeader(http.StatusNoContent)
	})

	deliver := func(secret string) int {
		body := []byte(`{"specversion":"1.0","id":"0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b","type":"quotation.created"}`)
		h, err := webhook.Sign(secret, "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", time.Now(), body)
		if err != nil {
			log.Fatal(err)
		}
		r := httptest.NewRequest(http.MethodPost, "/", bytes.NewReader(body))
		for k, v := range h {
			r.Header[k] = v
		}
		w := httptest.NewRecorder()
		receiver.ServeHTTP(w, r)
		return w.Code
	}
	fmt.Println(deliver(secret))
	fmt.Println(deliver(webhook.NewSecret()))
	// Output:
	// handled 0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b
	// 204
	// 401
}

// Sign gives the three headers of a delivery. This is the test vector of
// the Standard Webhooks specification.
func ExampleSign() {
	h, err := webhook.Sign(
		"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
		"msg_p5jXN8AQM9LWM0D4loKWxJek",
		time.Unix(1614265330, 0),
		[]byte(`{"test": 2432232314}`),
	)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(webhook.HeaderID+":", h.Get(webhook.HeaderID))
	fmt.Println(webhook.HeaderTimestamp+":", h.Get(webhook.HeaderTimestamp))
	fmt.Println(webhook.HeaderSignature+":", h.Get(webhook.HeaderSignature))
	// Output:
	// webhook-id: msg_p5jXN8AQM9LWM0D4loKWxJek
	// webhook-timestamp: 1614265330
	// webhook-signature: v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=
}

// CheckURL explains to the client why it refuses an endpoint's URL.
func ExampleGuard_CheckURL() {
	var g webhook.Guard // refuses addresses that are not public
	for _, u := range []string{
		"https://93.184.216.34/hooks/waybill",
		"http://169.254.169.254/latest/meta-data/",
		"http://[::1]:8080/hook",
		"https://user:password@93.184.216.34/hook",
	} {
		err := g.CheckURL(context.Background(), u)
		fmt.Printf("%v (private address: %t)\n", err, errors.Is(err, webhook.ErrPrivateAddress))
	}
	// Output:
	// <nil> (private address: false)
	// the URL's host is a link-local address (169.254.169.254) (private address: true)
	// the URL's host is a loopback address (::1) (private address: true)
	// the URL must not contain a user name or password (private address: false)
}

// A dispatcher delivers through Client, so that a host name that resolves
// to a private address at delivery, though not at registration, is
// refused too.
func ExampleGuard_Client() {
	client := webhook.Guard{}.Client(10 * time.Second)
	req, err := http.NewRequest(http.MethodPost, "http://localhost:8081/", bytes.NewReader([]byte(`{}`)))
	if err != nil {
		log.Fatal(err)
	}
	_, err = client.Do(req)
	fmt.Println(errors.Is(err, webhook.ErrPrivateAddress))
	// Output:
	// true
}
