package conditional_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/internal/conditional"
)

func TestCheckIfMatch(t *testing.T) {
	t.Parallel()
	current := []byte(`{"id":"a","n":1}`)
	tag := conditional.ETag(current)
	tests := []struct {
		name    string
		ifMatch []string
		stale   bool
	}{
		{name: "no If-Match"},
		{name: "the current tag", ifMatch: []string{tag}},
		{name: "the current tag in a list", ifMatch: []string{`"other", ` + tag}},
		{name: "any", ifMatch: []string{"*"}},
		{name: "another tag", ifMatch: []string{`"other"`}, stale: true},
		{name: "the current tag, weak", ifMatch: []string{"W/" + tag}, stale: true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			r := httptest.NewRequest(http.MethodPatch, "/", nil)
			for _, v := range tt.ifMatch {
				r.Header.Add("If-Match", v)
			}
			err := conditional.CheckIfMatch(r, current)
			if !tt.stale {
				assert.NoError(t, err)
				return
			}
			var s *conditional.Stale
			require.ErrorAs(t, err, &s)
			assert.Equal(t, current, s.Current)
			assert.Equal(t, tag, s.ETag)
		})
	}
}

func TestWriteStale(t *testing.T) {
	t.Parallel()
	current := []byte(`{"id":"a","note":"<b>"}`)
	w := httptest.NewRecorder()
	conditional.WriteStale(w, &conditional.Stale{Current: current, ETag: `"t1"`}, "the record has changed", "v1")
	assert.Equal(t, http.StatusPreconditionFailed, w.Code)
	assert.Equal(t, `"t1"`, w.Header().Get("ETag"))
	assert.Equal(t, "application/json", w.Header().Get("Content-Type"))
	assert.Equal(t, strconv.Itoa(w.Body.Len()), w.Header().Get("Content-Length"))
	// data is the record byte for byte, as the API shows it.
	assert.Equal(t, `{"error":"precondition_failed","error_description":"the record has changed","data":{"id":"a","note":"<b>"},"version":"v1"}`+"\n", w.Body.String())
	assert.True(t, json.Valid(w.Body.Bytes()))
}
