// Package signature signs and verifies webhook deliveries as the Standard
// Webhooks specification has them: the headers webhook-id,
// webhook-timestamp and webhook-signature ("v1," and the base64 of the
// HMAC-SHA256 of "id.timestamp.body" under the key of a "whsec_" secret).
//
// It is what a receiver needs and nothing more: it links none of the
// server (no database, no OAuth, no resources). A receiver reads the body
// whole, calls Verify with the secret its endpoint's registration answered
// with, and handles each webhook-id once:
//
//	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, 1<<20))
//	if err != nil || signature.Verify(secret, r.Header, body) != nil {
//		http.Error(w, "bad delivery", http.StatusUnauthorized)
//		return
//	}
//
// Deliveries are CloudEvents in structured mode (Content-Type
// application/cloudevents+json, ContentType).
package signature

import (
	"crypto/rand"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"

	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
)

// ContentType is the Content-Type of deliveries: the body is one
// CloudEvent in the CloudEvents JSON format, structured mode.
const ContentType = "application/cloudevents+json"

// The headers of a delivery, as the Standard Webhooks specification names
// them.
const (
	HeaderID        = "webhook-id"
	HeaderTimestamp = "webhook-timestamp"
	HeaderSignature = "webhook-signature"
)

// SecretPrefix starts every signing secret: "whsec_" and the base64 of the
// key.
const SecretPrefix = "whsec_"

// secretKeySize is the size of the key of a new secret in bytes.
const secretKeySize = 32

// NewSecret returns a new signing secret: "whsec_" followed by the base64
// (standard encoding) of 32 random bytes.
func NewSecret() string {
	key := make([]byte, secretKeySize)
	_, _ = rand.Read(key) // never fails (crypto/rand.Read documents it)
	return SecretPrefix + base64.StdEncoding.EncodeToString(key)
}

// ErrBadSecret is the error of a secret that is not "whsec_" and base64.
var ErrBadSecret = errors.New("signature: a secret is whsec_ followed by a base64 key")

func signer(secret string) (*standardwebhooks.Webhook, error) {
	key, ok := strings.CutPrefix(secret, SecretPrefix)
	if !ok {
		return nil, ErrBadSecret
	}
	raw, err := base64.StdEncoding.DecodeString(key)
	if err != nil || len(raw) == 0 {
		return nil, ErrBadSecret
	}
	return standardwebhooks.NewWebhookRaw(raw)
}

// Sign returns the headers of a delivery of body with id at ts, signed with
// secret: webhook-id, webhook-timestamp (Unix seconds) and
// webhook-signature ("v1," and the base64 of the HMAC-SHA256 of
// "id.timestamp.body" under the key of secret).
func Sign(secret, id string, ts time.Time, body []byte) (http.Header, error) {
	wh, err := signer(secret)
	if err != nil {
		return nil, err
	}
	sig, err := wh.Sign(id, ts, body)
	if err != nil {
		return nil, err
	}
	h := http.Header{}
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	h.Set(HeaderSignature, sig)
	return h, nil
}

// SignAll returns the headers of a delivery of body with id at ts signed
// with every secret of secrets, in their order: webhook-signature holds
// one "v1,<signature>" per secret, separated by spaces, as the Standard
// Webhooks specification allows. A server that rotates an endpoint's
// secret signs with the new secret and the previous one during the grace,
// so that a receiver that still has the previous secret goes on verifying
// until it has the new one. It needs at least one secret.
func SignAll(secrets []string, id string, ts time.Time, body []byte) (http.Header, error) {
	if len(secrets) == 0 {
		return nil, ErrBadSecret
	}
	sigs := make([]string, len(secrets))
	for i, secret := range secrets {
		wh, err := signer(secret)
		if err != nil {
			return nil, err
		}
		if sigs[i], err = wh.Sign(id, ts, body); err != nil {
			return nil, err
		}
	}
	h := http.Header{}
	h.Set(HeaderID, id)
	h.Set(HeaderTimestamp, strconv.FormatInt(ts.Unix(), 10))
	h.Set(HeaderSignature, strings.Join(sigs, " "))
	return h, nil
}

// Verify checks that a delivery a receiver got — its headers and its body,
// read whole and unchanged — was signed with secret, and that its
// timestamp is within five minutes of now, so that a captured delivery
// cannot be replayed later. webhook-signature may hold several
// space-separated signatures (see SignAll); one made with secret is
// enough. A receiver answers 2xx only after Verify
// returns nil, and treats webhook-id as the key of the delivery: a retry
// of a delivery it already handled carries the same webhook-id.
func Verify(secret string, h http.Header, body []byte) error {
	wh, err := signer(secret)
	if err != nil {
		return err
	}
	if err := wh.Verify(body, h); err != nil {
		return fmt.Errorf("signature: %w", err)
	}
	return nil
}
