package signature_test

import (
	"bytes"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/waybillhq/waybill/webhook/signature"
)

// A receiver reads the body whole, checks it with Verify before it trusts
// any of it, and only then does its work and answers 2xx.
func ExampleVerify() {
	secret := signature.NewSecret() // a receiver keeps the secret the endpoint's registration answered with

	receiver := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
		if err != nil {
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			return
		}
		if err := signature.Verify(secret, r.Header, body); err != nil {
			http.Error(w, "bad signature", http.StatusUnauthorized)
			return
		}
		// Handle the event once per webhook-id: a retried delivery has
		// the same one.
		fmt.Println("handled", r.Header.Get(signature.HeaderID))
		w.WriteHeader(http.StatusNoContent)
	})

	deliver := func(secret string) int {
		body := []byte(`{"specversion":"1.0","id":"0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b","type":"quotation.created"}`)
		h, err := signature.Sign(secret, "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", time.Now(), body)
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
	fmt.Println(deliver(signature.NewSecret()))
	// Output:
	// handled 0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b
	// 204
	// 401
}

// Sign gives the three headers of a delivery. This is the test vector of
// the Standard Webhooks specification.
func ExampleSign() {
	h, err := signature.Sign(
		"whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw",
		"msg_p5jXN8AQM9LWM0D4loKWxJek",
		time.Unix(1614265330, 0),
		[]byte(`{"test": 2432232314}`),
	)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(signature.HeaderID+":", h.Get(signature.HeaderID))
	fmt.Println(signature.HeaderTimestamp+":", h.Get(signature.HeaderTimestamp))
	fmt.Println(signature.HeaderSignature+":", h.Get(signature.HeaderSignature))
	// Output:
	// webhook-id: msg_p5jXN8AQM9LWM0D4loKWxJek
	// webhook-timestamp: 1614265330
	// webhook-signature: v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=
}

// During the grace of a rotation, a delivery carries one signature per
// secret, the new one first; a receiver that still has the old secret, and
// one that has the new one, both verify it.
func ExampleSignAll() {
	newSecret, oldSecret := signature.NewSecret(), signature.NewSecret()
	body := []byte(`{"specversion":"1.0","id":"0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b","type":"quotation.created"}`)
	h, err := signature.SignAll([]string{newSecret, oldSecret}, "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", time.Now(), body)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(len(strings.Fields(h.Get(signature.HeaderSignature))), "signatures")
	fmt.Println("new secret:", signature.Verify(newSecret, h, body) == nil)
	fmt.Println("old secret:", signature.Verify(oldSecret, h, body) == nil)
	fmt.Println("another:", signature.Verify(signature.NewSecret(), h, body) == nil)
	// Output:
	// 2 signatures
	// new secret: true
	// old secret: true
	// another: false
}
