package httpbody_test

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
	"github.com/waybillhq/waybill/internal/httpbody"
)

type failingReader struct{}

func (failingReader) Read([]byte) (int, error) { return 0, errors.New("connection reset") }

func TestRead(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		body   io.Reader
		want   string
		status int
		code   string
	}{
		{name: "empty", body: strings.NewReader(""), want: ""},
		{name: "under", body: strings.NewReader("abc"), want: "abc"},
		{name: "at the limit", body: strings.NewReader("abcdefgh"), want: "abcdefgh"},
		{name: "one byte over", body: strings.NewReader("abcdefghi"), status: http.StatusRequestEntityTooLarge, code: apierrors.CodePayloadTooLarge},
		{name: "unreadable", body: failingReader{}, status: http.StatusBadRequest, code: apierrors.CodeInvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest(http.MethodPost, "/", tt.body)
			got, err := httpbody.Read(httptest.NewRecorder(), r, 8)
			if tt.code == "" {
				require.NoError(t, err)
				assert.Equal(t, tt.want, string(got))
				return
			}
			var e *apierrors.Error
			require.ErrorAs(t, err, &e)
			assert.Equal(t, tt.code, e.Code)
			assert.Equal(t, tt.status, e.Status)
			if tt.code == apierrors.CodePayloadTooLarge {
				assert.Equal(t, "request body is larger than 8 bytes", e.Description)
			}
		})
	}
}

func TestReadNilWriter(t *testing.T) {
	t.Parallel()
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader("too long"))
	_, err := httpbody.Read(nil, r, 3)
	assert.True(t, apierrors.HasCode(err, apierrors.CodePayloadTooLarge), "err = %v", err)
}

func TestJSON(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name        string
		contentType string
		body        string
		code        string
	}{
		{name: "json", contentType: "application/json", body: `{"a":1}`},
		{name: "json with charset", contentType: "application/json; charset=utf-8", body: `{}`},
		{name: "upper case", contentType: "Application/JSON", body: `{}`},
		{name: "no content type", body: `{}`, code: apierrors.CodeInvalidRequest},
		{name: "form", contentType: "application/x-www-form-urlencoded", body: "a=1", code: apierrors.CodeInvalidRequest},
		{name: "malformed content type", contentType: "application/json; =", body: `{}`, code: apierrors.CodeInvalidRequest},
		{name: "too large", contentType: "application/json", body: `{"a":"` + strings.Repeat("x", 16) + `"}`, code: apierrors.CodePayloadTooLarge},
		// The Content-Type is checked first: a large body of the wrong
		// type is refused for its type, unread.
		{name: "too large, wrong type", contentType: "text/plain", body: strings.Repeat("x", 64), code: apierrors.CodeInvalidRequest},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(tt.body))
			if tt.contentType != "" {
				r.Header.Set("Content-Type", tt.contentType)
			}
			got, err := httpbody.JSON(httptest.NewRecorder(), r, 16)
			if tt.code == "" {
				require.NoError(t, err)
				assert.Equal(t, tt.body, string(got))
				return
			}
			assert.True(t, apierrors.HasCode(err, tt.code), "err = %v, want %s", err, tt.code)
		})
	}
}

func TestMediaType(t *testing.T) {
	t.Parallel()
	for header, want := range map[string]string{
		"":                                  "",
		"application/json":                  "application/json",
		"APPLICATION/X-WWW-FORM-URLENCODED": "application/x-www-form-urlencoded",
		"text/plain; charset=utf-8":         "text/plain",
		"text/plain; =":                     "",
	} {
		r := httptest.NewRequest(http.MethodPost, "/", nil)
		r.Header.Set("Content-Type", header)
		assert.Equal(t, want, httpbody.MediaType(r), "Content-Type %q", header)
	}
}

func TestLimit(t *testing.T) {
	t.Parallel()
	r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader("a=1&b="+strings.Repeat("x", 32)))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	httpbody.Limit(httptest.NewRecorder(), r, 16)
	err := r.ParseForm()
	require.Error(t, err)
	assert.True(t, httpbody.TooLarge(err))

	r = httptest.NewRequest(http.MethodPost, "/", strings.NewReader("a=1&b=2"))
	r.Header.Set("Content-Type", "application/x-www-form-urlencoded")
	httpbody.Limit(httptest.NewRecorder(), r, 16)
	require.NoError(t, r.ParseForm())
	assert.Equal(t, "2", r.PostForm.Get("b"))
}

func TestTooLarge(t *testing.T) {
	t.Parallel()
	assert.False(t, httpbody.TooLarge(nil))
	assert.False(t, httpbody.TooLarge(errors.New("other")))
	assert.True(t, httpbody.TooLarge(&http.MaxBytesError{Limit: 1}))
	assert.True(t, httpbody.TooLarge(errors.Join(errors.New("read"), &http.MaxBytesError{Limit: 1})))
}

// closeCounter counts the Close calls of a body.
type closeCounter struct {
	io.Reader
	closed int
}

func (c *closeCounter) Close() error { c.closed++; return nil }

// Peek reads at most limit bytes and one more, and the handler then reads
// the whole body as it was sent; closing it closes the original.
func TestPeek(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name, body string
		limit      int
		wantPeek   string
	}{
		{"empty", "", 4, ""},
		{"under the limit", "abc", 4, "abc"},
		{"at the limit", "abcd", 4, "abcd"},
		{"over the limit", "abcdefgh", 4, "abcde"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			orig := &closeCounter{Reader: strings.NewReader(tt.body)}
			r := httptest.NewRequest(http.MethodPost, "/", nil)
			r.Body = orig
			got, err := httpbody.Peek(r, tt.limit)
			require.NoError(t, err)
			assert.Equal(t, tt.wantPeek, string(got))
			all, err := io.ReadAll(r.Body)
			require.NoError(t, err)
			assert.Equal(t, tt.body, string(all), "the handler reads the whole body")
			require.NoError(t, r.Body.Close())
			assert.Equal(t, 1, orig.closed)
		})
	}

	r := httptest.NewRequest(http.MethodPost, "/", failingReader{})
	_, err := httpbody.Peek(r, 4)
	assert.EqualError(t, err, "connection reset")
}
