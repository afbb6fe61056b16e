package errors_test

import (
	"net/http"
	"net/http/httptest"
	"testing"

	apierrors "github.com/waybillhq/waybill/errors"
)

// Handle answers the error a handler returns, and leaves alone the answer
// of a handler that returns nil.
func TestWriterHandle(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name       string
		h          apierrors.HandlerFunc
		wantStatus int
		wantBody   string
	}{
		{
			name:       "error",
			h:          func(http.ResponseWriter, *http.Request) error { return apierrors.Conflict("taken") },
			wantStatus: http.StatusConflict,
			wantBody:   `{"error":"conflict","error_description":"taken"}` + "\n",
		},
		{
			name: "answered",
			h: func(w http.ResponseWriter, _ *http.Request) error {
				w.WriteHeader(http.StatusAccepted)
				return nil
			},
			wantStatus: http.StatusAccepted,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			rec := httptest.NewRecorder()
			apierrors.Writer{}.Handle(tt.h).ServeHTTP(rec, httptest.NewRequest(http.MethodGet, "/", nil))
			checkEqual(t, "status", rec.Code, tt.wantStatus)
			checkEqual(t, "body", rec.Body.String(), tt.wantBody)
		})
	}
}
