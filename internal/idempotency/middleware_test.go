package idempotency_test

import (
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/internal/idempotency"
)

// mwFixture is a Middleware over a handler that records what reached it,
// with a store of answers in a map.
type mwFixture struct {
	stored    map[string]*idempotency.Answer
	lookupErr error
	lookups   int
	reached   bool
	body      string
	keyed     *idempotency.Keyed
	handler   http.Handler
}

func newMWFixture(replay func(http.ResponseWriter, *http.Request, *idempotency.Keyed, *idempotency.Answer)) *mwFixture {
	f := &mwFixture{stored: map[string]*idempotency.Answer{}}
	next := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		f.reached = true
		b, _ := io.ReadAll(r.Body)
		f.body = string(b)
		f.keyed, _ = idempotency.FromContext(r.Context())
		w.WriteHeader(http.StatusCreated)
	})
	f.handler = idempotency.Middleware(idempotency.Options{
		Limit: 16,
		Fingerprint: func(r *http.Request, body []byte) string {
			return idempotency.Fingerprint(body, r.Method, r.URL.Path)
		},
		Lookup: func(r *http.Request, key string) (*idempotency.Answer, error) {
			f.lookups++
			return f.stored[key], f.lookupErr
		},
		Replay: replay,
		Error: func(w http.ResponseWriter, r *http.Request, err error) {
			apierrors.Writer{}.Write(w, r, err)
		},
	})(next)
	return f
}

func (f *mwFixture) do(key []string, body string) *httptest.ResponseRecorder {
	r := httptest.NewRequest(http.MethodPost, "/things", strings.NewReader(body))
	for _, k := range key {
		r.Header.Add("Idempotency-Key", k)
	}
	w := httptest.NewRecorder()
	f.handler.ServeHTTP(w, r)
	return w
}

func TestMiddleware(t *testing.T) {
	t.Parallel()
	fp := idempotency.Fingerprint([]byte(`{"a":1}`), http.MethodPost, "/things")

	t.Run("no key", func(t *testing.T) {
		t.Parallel()
		f := newMWFixture(nil)
		w := f.do(nil, `{"a":1}`)
		assert.Equal(t, http.StatusCreated, w.Code)
		assert.Equal(t, `{"a":1}`, f.body, "the handler reads the body")
		assert.Nil(t, f.keyed)
		assert.Zero(t, f.lookups)
	})
	t.Run("a new key", func(t *testing.T) {
		t.Parallel()
		f := newMWFixture(nil)
		w := f.do([]string{`"k1"`}, `{"a":1}`)
		assert.Equal(t, http.StatusCreated, w.Code)
		assert.Equal(t, `{"a":1}`, f.body, "the handler reads the body unchanged")
		require.NotNil(t, f.keyed)
		assert.Equal(t, idempotency.Keyed{Key: "k1", Fingerprint: fp}, *f.keyed)
		assert.Equal(t, 1, f.lookups)
	})
	t.Run("a malformed key", func(t *testing.T) {
		t.Parallel()
		f := newMWFixture(nil)
		w := f.do([]string{"a b"}, `{"a":1}`)
		assert.Equal(t, http.StatusBadRequest, w.Code)
		assert.Contains(t, w.Body.String(), `"invalid_request"`)
		assert.False(t, f.reached)
		assert.Zero(t, f.lookups)
	})
	t.Run("a key sent twice", func(t *testing.T) {
		t.Parallel()
		f := newMWFixture(nil)
		w := f.do([]string{"k1", "k2"}, `{"a":1}`)
		assert.Equal(t, http.StatusBadRequest, w.Code)
		assert.False(t, f.reached)
	})
	t.Run("a body over the limit goes on without its key", func(t *testing.T) {
		t.Parallel()
		f := newMWFixture(nil)
		f.stored["k1"] = &idempotency.Answer{Fingerprint: "other", Status: http.StatusCreated, Body: []byte(`{}`)}
		long := `{"a":"` + strings.Repeat("x", 32) + `"}`
		w := f.do([]string{"k1"}, long)
		assert.Equal(t, http.StatusCreated, w.Code)
		assert.True(t, f.reached)
		assert.Equal(t, long, f.body, "the handler reads the whole body, to refuse it")
		assert.Nil(t, f.keyed)
		assert.Zero(t, f.lookups, "nothing is looked up")
	})
	t.Run("a stored answer is replayed", func(t *testing.T) {
		t.Parallel()
		f := newMWFixture(nil)
		f.stored["k1"] = &idempotency.Answer{Fingerprint: fp, Status: http.StatusCreated, Headers: map[string]string{"Location": "/things/1"}, Body: []byte(`{"data":{}}`)}
		w := f.do([]string{"k1"}, `{"a":1}`)
		assert.False(t, f.reached)
		assert.Equal(t, http.StatusCreated, w.Code)
		assert.Equal(t, "true", w.Header().Get("Idempotent-Replayed"))
		assert.Equal(t, "/things/1", w.Header().Get("Location"))
		assert.Equal(t, "{\"data\":{}}\n", w.Body.String())
	})
	t.Run("another request with the key is 422", func(t *testing.T) {
		t.Parallel()
		f := newMWFixture(nil)
		f.stored["k1"] = &idempotency.Answer{Fingerprint: fp, Status: http.StatusCreated, Body: []byte(`{}`)}
		w := f.do([]string{"k1"}, `{"a":2}`)
		assert.False(t, f.reached)
		assert.Equal(t, http.StatusUnprocessableEntity, w.Code)
		assert.Contains(t, w.Body.String(), `"idempotency_key_reused"`)
	})
	t.Run("a custom replay", func(t *testing.T) {
		t.Parallel()
		var got *idempotency.Keyed
		f := newMWFixture(func(w http.ResponseWriter, r *http.Request, k *idempotency.Keyed, a *idempotency.Answer) {
			got = k
			w.WriteHeader(http.StatusTeapot)
		})
		f.stored["k1"] = &idempotency.Answer{Fingerprint: fp, Status: http.StatusCreated, Body: []byte(`{}`)}
		w := f.do([]string{"k1"}, `{"a":1}`)
		assert.Equal(t, http.StatusTeapot, w.Code)
		require.NotNil(t, got)
		assert.Equal(t, idempotency.Keyed{Key: "k1", Fingerprint: fp}, *got)
	})
	t.Run("a failed lookup is 500", func(t *testing.T) {
		t.Parallel()
		f := newMWFixture(nil)
		f.lookupErr = errors.New("database down")
		w := f.do([]string{"k1"}, `{"a":1}`)
		assert.False(t, f.reached)
		assert.Equal(t, http.StatusInternalServerError, w.Code)
		assert.NotContains(t, w.Body.String(), "database down")
	})
}
