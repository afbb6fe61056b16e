package httpbody_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/internal/httpbody"
)

func ExampleJSON() {
	handler := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := httpbody.JSON(w, r, 16)
		if err != nil {
			apierrors.Writer{}.Write(w, r, err)
			return
		}
		fmt.Fprintf(w, "read %d bytes", len(body))
	})
	for _, body := range []string{`{"a":1}`, `{"a":"` + strings.Repeat("x", 16) + `"}`} {
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		w := httptest.NewRecorder()
		handler.ServeHTTP(w, r)
		fmt.Println(w.Code, strings.TrimSpace(w.Body.String()))
	}
	// Output:
	// 200 read 7 bytes
	// 413 {"error":"payload_too_large","error_description":"request body is larger than 16 bytes"}
}
