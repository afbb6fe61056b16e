package webhook

import (
	"context"
	"errors"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/events"
	"github.com/waybillhq/waybill/resource"
	"github.com/waybillhq/waybill/tenancy"
)

// noDNS is a resolver that answers no name, so that fuzzing never waits
// for the network.
var noDNS = &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
	return nil, errors.New("no DNS while fuzzing")
}}

// FuzzEndpointBody checks the reader of the bodies of POST and PATCH of an
// endpoint: any body is an endpoint's settings within the rules, or a 4xx
// in the error shape; nothing panics.
func FuzzEndpointBody(f *testing.F) {
	reg := &resource.Registry{}
	if err := reg.Register(&resource.Resource{Name: "quotations", ScopeType: tenancy.Branch}, &resource.Resource{Name: "accounts", ScopeType: tenancy.Branch}); err != nil {
		f.Fatal(err)
	}
	a := &API{Registry: reg, Guard: Guard{Resolver: noDNS}}
	for _, s := range []string{
		`{"url": "https://93.184.216.34/hook", "event_types": ["quotation.*"]}`,
		`{"url": "https://93.184.216.34/hook", "event_types": ["*"], "branch_ids": ["0a000000-0000-4000-8000-0000000000a1"]}`,
		`{"status": "disabled"}`, `{"url": "http://127.0.0.1/"}`, `{"event_types": []}`, `{"branch_ids": null}`,
		`{"url": 1}`, `{"url": "x", "url": "y"}`, `[]`, `{`, ``, `{"secret": "whsec_x"}`,
		`{"url": "https://93.184.216.34/hook", "event_types": ["quotation.*"], "filter": ["status:eq:x"], "rate_limit": 5}`,
		`{"filter": null, "rate_limit": null}`, `{"rate_limit": 1.5}`, `{"rate_limit": -1}`, `{"filter": [1]}`, `{"filter": []}`,
	} {
		f.Add(s, true)
		f.Add(s, false)
	}
	f.Fuzz(func(t *testing.T, body string, create bool) {
		r := httptest.NewRequest(http.MethodPost, "/", strings.NewReader(body))
		r.Header.Set("Content-Type", "application/json")
		ctx, cancel := context.WithTimeout(r.Context(), time.Second)
		defer cancel()
		in, err := a.readEndpoint(httptest.NewRecorder(), r.WithContext(ctx), create)
		if err != nil {
			e, ok := apierrors.As(err)
			if !ok || e.Status < 400 || e.Status >= 500 {
				t.Fatalf("%q: %v is not a client error", body, err)
			}
			return
		}
		if create && (in.url == nil || in.eventTypes == nil) {
			t.Fatalf("%q: a create without url or event_types", body)
		}
		if in.url != nil {
			if err := (Guard{Resolver: noDNS}).CheckURL(ctx, *in.url); err != nil {
				t.Fatalf("%q: url %q taken: %v", body, *in.url, err)
			}
		}
		if in.rateLimit != nil && (*in.rateLimit < 1 || *in.rateLimit > MaxRateLimit) {
			t.Fatalf("%q: rate_limit %d taken", body, *in.rateLimit)
		}
		if len(in.eventTypes) > MaxEventTypes {
			t.Fatalf("%q: %d event types", body, len(in.eventTypes))
		}
		for _, p := range in.eventTypes {
			if _, ok := events.ParsePattern(p, []string{"quotations", "accounts"}); !ok {
				t.Fatalf("%q: event type %q taken", body, p)
			}
		}
	})
}

// FuzzDeliveryCursor checks the cursor of the deliveries list: any text
// is a cursor that encodes back to one that reads the same, or a 400.
func FuzzDeliveryCursor(f *testing.F) {
	good := deliveryCursor{createdAt: time.Date(2026, 11, 24, 1, 2, 3, 4000, time.UTC), id: "0a000000-0000-4000-8000-0000000000a1", status: "failed"}
	f.Add(good.encode(), "failed")
	f.Add(good.encode(), "")
	f.Add("", "")
	f.Add("MjAyNnx4fA", "pending")
	f.Fuzz(func(t *testing.T, s, status string) {
		c, err := decodeCursor(s, status)
		if err != nil {
			if e, ok := apierrors.As(err); !ok || e.Status != http.StatusBadRequest {
				t.Fatalf("%q: %v is not a 400", s, err)
			}
			return
		}
		again, err := decodeCursor(c.encode(), status)
		if err != nil || !again.createdAt.Equal(c.createdAt) || again.id != c.id || again.status != c.status {
			t.Fatalf("%q: %+v encodes to a cursor that reads %+v, %v", s, c, again, err)
		}
	})
}
