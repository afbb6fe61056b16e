package signature_test

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/webhook/signature"
)

// The test vector the Standard Webhooks specification publishes (its
// libraries test against it).
const (
	specVectorSecret    = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"
	specVectorID        = "msg_p5jXN8AQM9LWM0D4loKWxJek"
	specVectorTimestamp = 1614265330
	specVectorBody      = `{"test": 2432232314}`
	specVectorSignature = "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
)

// independentSign is an implementation of the Standard Webhooks scheme written
// from its text, independent of the library package signature uses: the
// HMAC-SHA256, under the base64-decoded key after "whsec_", of
// "id.timestamp.body", as "v1," and standard base64.
func independentSign(t *testing.T, secret, id string, ts int64, body []byte) string {
	t.Helper()
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(secret, "whsec_"))
	require.NoError(t, err)
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(id + "." + strconv.FormatInt(ts, 10) + "."))
	mac.Write(body)
	return "v1," + base64.StdEncoding.EncodeToString(mac.Sum(nil))
}

// independentHeaders returns the headers of a delivery built without package
// signature.
func independentHeaders(t *testing.T, secret, id string, ts int64, body []byte) http.Header {
	t.Helper()
	h := http.Header{}
	h.Set("webhook-id", id)
	h.Set("webhook-timestamp", strconv.FormatInt(ts, 10))
	h.Set("webhook-signature", independentSign(t, secret, id, ts, body))
	return h
}

func TestSignTestVector(t *testing.T) {
	assert.Equal(t, specVectorSignature, independentSign(t, specVectorSecret, specVectorID, specVectorTimestamp, []byte(specVectorBody)),
		"the independent implementation gives the published signature")

	h, err := signature.Sign(specVectorSecret, specVectorID, time.Unix(specVectorTimestamp, 0), []byte(specVectorBody))
	require.NoError(t, err)
	assert.Equal(t, specVectorID, h.Get(signature.HeaderID))
	assert.Equal(t, strconv.Itoa(specVectorTimestamp), h.Get(signature.HeaderTimestamp))
	assert.Equal(t, specVectorSignature, h.Get(signature.HeaderSignature))

	// The vector's timestamp is years old: Verify refuses it as a replay.
	assert.Error(t, signature.Verify(specVectorSecret, h, []byte(specVectorBody)))
}

func TestSignMatchesIndependentImplementation(t *testing.T) {
	secret := signature.NewSecret()
	ts := time.Now()
	tests := []struct {
		name string
		id   string
		body []byte
	}{
		{"event", "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b", []byte(`{"specversion":"1.0","type":"quotation.created"}`)},
		{"empty body", "msg_1", nil},
		{"unicode", "msg_2", []byte(`{"name":"Zürich – Łódź 🚚"}`)},
		{"binary", "msg_3", []byte{0, 1, 2, 0xff, '.', '\n'}},
		{"dots in id", "a.b.c", []byte(`{}`)},
		{"large", "msg_4", []byte(strings.Repeat("x", 1<<20))},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			h, err := signature.Sign(secret, tt.id, ts, tt.body)
			require.NoError(t, err)
			assert.Equal(t, independentSign(t, secret, tt.id, ts.Unix(), tt.body), h.Get(signature.HeaderSignature))
			assert.Equal(t, tt.id, h.Get(signature.HeaderID))
			assert.Equal(t, strconv.FormatInt(ts.Unix(), 10), h.Get(signature.HeaderTimestamp))

			require.NoError(t, signature.Verify(secret, h, tt.body), "Verify accepts what Sign signs")
			require.NoError(t, signature.Verify(secret, independentHeaders(t, secret, tt.id, ts.Unix(), tt.body), tt.body),
				"Verify accepts what the independent implementation signs")
		})
	}
}

func TestVerify(t *testing.T) {
	secret := signature.NewSecret()
	other := signature.NewSecret()
	const id = "0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b"
	body := []byte(`{"specversion":"1.0","id":"0193a1b2-c3d4-7e5f-8a9b-0c1d2e3f4a5b","type":"quotation.updated"}`)
	now := time.Now().Unix()
	good := independentSign(t, secret, id, now, body)

	tests := []struct {
		name   string
		secret string
		header func() http.Header
		body   []byte
		ok     bool
	}{
		{"valid", secret, func() http.Header { return independentHeaders(t, secret, id, now, body) }, body, true},
		{"four minutes old", secret, func() http.Header { return independentHeaders(t, secret, id, now-240, body) }, body, true},
		{"four minutes ahead", secret, func() http.Header { return independentHeaders(t, secret, id, now+240, body) }, body, true},
		{"canonical header names", secret, func() http.Header {
			h := http.Header{}
			h["Webhook-Id"] = []string{id}
			h["Webhook-Timestamp"] = []string{strconv.FormatInt(now, 10)}
			h["Webhook-Signature"] = []string{good}
			return h
		}, body, true},
		{"key rotation: second signature matches", secret, func() http.Header {
			h := independentHeaders(t, secret, id, now, body)
			h.Set("webhook-signature", independentSign(t, other, id, now, body)+" "+good)
			return h
		}, body, true},
		{"key rotation: first signature matches", secret, func() http.Header {
			h := independentHeaders(t, secret, id, now, body)
			h.Set("webhook-signature", good+" "+independentSign(t, other, id, now, body))
			return h
		}, body, true},
		{"other versions are skipped", secret, func() http.Header {
			h := independentHeaders(t, secret, id, now, body)
			h.Set("webhook-signature", "v1a,c29tZXRoaW5n "+good)
			return h
		}, body, true},

		{"wrong secret", other, func() http.Header { return independentHeaders(t, secret, id, now, body) }, body, false},
		{"tampered body", secret, func() http.Header { return independentHeaders(t, secret, id, now, body) }, []byte(strings.Replace(string(body), "updated", "deleted", 1)), false},
		{"body with a trailing newline", secret, func() http.Header { return independentHeaders(t, secret, id, now, body) }, append(append([]byte{}, body...), '\n'), false},
		{"empty body", secret, func() http.Header { return independentHeaders(t, secret, id, now, body) }, nil, false},
		{"tampered id", secret, func() http.Header {
			h := independentHeaders(t, secret, id, now, body)
			h.Set("webhook-id", id+"0")
			return h
		}, body, false},
		{"tampered timestamp", secret, func() http.Header {
			h := independentHeaders(t, secret, id, now, body)
			h.Set("webhook-timestamp", strconv.FormatInt(now+1, 10))
			return h
		}, body, false},
		{"older than five minutes", secret, func() http.Header { return independentHeaders(t, secret, id, now-6*60, body) }, body, false},
		{"newer than five minutes", secret, func() http.Header { return independentHeaders(t, secret, id, now+6*60, body) }, body, false},
		{"timestamp not a number", secret, func() http.Header {
			h := independentHeaders(t, secret, id, now, body)
			h.Set("webhook-timestamp", "yesterday")
			return h
		}, body, false},
		{"timestamp in milliseconds", secret, func() http.Header {
			h := independentHeaders(t, secret, id, now, body)
			h.Set("webhook-timestamp", strconv.FormatInt(now*1000, 10))
			return h
		}, body, false},
		{"missing webhook-id", secret, func() http.Header {
			h := independentHeaders(t, secret, id, now, body)
			h.Del("webhook-id")
			return h
		}, body, false},
		{"missing webhook-timestamp", secret, func() http.Header {
			h := independentHeaders(t, secret, id, now, body)
			h.Del("webhook-timestamp")
			return h
		}, body, false},
		{"missing webhook-signature", secret, func() http.Header {
			h := independentHeaders(t, secret, id, now, body)
			h.Del("webhook-signature")
			return h
		}, body, false},
		{"no headers", secret, func() http.Header { return http.Header{} }, body, false},
		{"signature without version", secret, func() http.Header {
			h := independentHeaders(t, secret, id, now, body)
			h.Set("webhook-signature", strings.TrimPrefix(good, "v1,"))
			return h
		}, body, false},
		{"signature of another version", secret, func() http.Header {
			h := independentHeaders(t, secret, id, now, body)
			h.Set("webhook-signature", "v2,"+strings.TrimPrefix(good, "v1,"))
			return h
		}, body, false},
		{"empty signature", secret, func() http.Header {
			h := independentHeaders(t, secret, id, now, body)
			h.Set("webhook-signature", "v1,")
			return h
		}, body, false},
		{"key rotation: no signature matches", secret, func() http.Header {
			h := independentHeaders(t, secret, id, now, body)
			h.Set("webhook-signature", independentSign(t, other, id, now, body)+" "+independentSign(t, signature.NewSecret(), id, now, body))
			return h
		}, body, false},
		{"secret without prefix", strings.TrimPrefix(secret, "whsec_"), func() http.Header { return independentHeaders(t, secret, id, now, body) }, body, false},
		{"secret not base64", "whsec_not*base64!", func() http.Header { return independentHeaders(t, secret, id, now, body) }, body, false},
		{"secret with an empty key", "whsec_", func() http.Header { return independentHeaders(t, secret, id, now, body) }, body, false},
		{"empty secret", "", func() http.Header { return independentHeaders(t, secret, id, now, body) }, body, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := signature.Verify(tt.secret, tt.header(), tt.body)
			if tt.ok {
				require.NoError(t, err)
			} else {
				require.Error(t, err)
			}
		})
	}
}

func TestBadSecret(t *testing.T) {
	tests := []struct {
		name   string
		secret string
	}{
		{"empty", ""},
		{"no prefix", base64.StdEncoding.EncodeToString(make([]byte, 32))},
		{"other prefix", "whsek_" + base64.StdEncoding.EncodeToString(make([]byte, 32))},
		{"not base64", "whsec_%%%"},
		{"URL-safe base64", "whsec_-_-_"},
		{"empty key", "whsec_"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := signature.Sign(tt.secret, "msg_1", time.Now(), []byte(`{}`))
			assert.ErrorIs(t, err, signature.ErrBadSecret)
			assert.ErrorIs(t, signature.Verify(tt.secret, http.Header{}, []byte(`{}`)), signature.ErrBadSecret)
		})
	}
}

func TestNewSecret(t *testing.T) {
	seen := map[string]bool{}
	for range 100 {
		s := signature.NewSecret()
		key, ok := strings.CutPrefix(s, signature.SecretPrefix)
		require.True(t, ok, "starts with whsec_: %s", s)
		raw, err := base64.StdEncoding.DecodeString(key)
		require.NoError(t, err)
		require.Len(t, raw, 32)
		require.False(t, seen[s], "unique")
		seen[s] = true
	}
	assert.Equal(t, "whsec_", signature.SecretPrefix)
}

// SignAll signs with each secret, in order, space-separated: Verify and the
// independent implementation accept the delivery with either secret, and
// refuse it with a third.
func TestSignAll(t *testing.T) {
	current, previous, other := signature.NewSecret(), signature.NewSecret(), signature.NewSecret()
	ts := time.Now()
	body := []byte(`{"specversion":"1.0","type":"quotation.created"}`)
	h, err := signature.SignAll([]string{current, previous}, "msg_1", ts, body)
	require.NoError(t, err)
	assert.Equal(t, independentSign(t, current, "msg_1", ts.Unix(), body)+" "+independentSign(t, previous, "msg_1", ts.Unix(), body),
		h.Get(signature.HeaderSignature))
	tests := []struct {
		name   string
		secret string
		ok     bool
	}{
		{"current", current, true},
		{"previous", previous, true},
		{"other", other, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := signature.Verify(tt.secret, h, body)
			if tt.ok {
				assert.NoError(t, err)
			} else {
				assert.Error(t, err)
			}
		})
	}
	one, err := signature.SignAll([]string{current}, "msg_1", ts, body)
	require.NoError(t, err)
	alone, err := signature.Sign(current, "msg_1", ts, body)
	require.NoError(t, err)
	assert.Equal(t, alone, one, "one secret signs as Sign does")
	_, err = signature.SignAll(nil, "msg_1", ts, body)
	assert.ErrorIs(t, err, signature.ErrBadSecret)
	_, err = signature.SignAll([]string{current, "nope"}, "msg_1", ts, body)
	assert.ErrorIs(t, err, signature.ErrBadSecret)
}
