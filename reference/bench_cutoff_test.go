package main

import (
	"context"
	"net/http"
	"testing"
	"time"

	"github.com/waybillhq/waybill/oauth/bearer"
	"github.com/waybillhq/waybill/query"
)

// benchCutOffs is a cut-off source of n cut-offs of other apps, so that the
// deny list the API checks is not empty.
type benchCutOffs int

func (n benchCutOffs) CutOffs(context.Context, time.Time) ([]bearer.CutOff, error) {
	out := make([]bearer.CutOff, n)
	for i := range out {
		out[i] = bearer.CutOff{OrganizationID: newID(), ClientID: newID(), At: time.Now()}
	}
	return out, nil
}

// BenchmarkCutOff measures the API path, a page of quotations through the
// reference's handler in process, with the check of the cut-offs of
// disconnected apps (1,000 of them, none of the token's app) and without
// it; and the verification of a token alone, with and without.
func BenchmarkCutOff(b *testing.B) {
	d := loadQuotations(b, 10_000)
	cutoffs := &bearer.CutOffList{Source: benchCutOffs(1000)}
	if err := cutoffs.Refresh(context.Background()); err != nil {
		b.Fatal(err)
	}
	store := newOAuthStore(d.db, query.Postgres)
	key, err := store.SigningKey(context.Background())
	if err != nil {
		b.Fatal(err)
	}
	keys, err := bearer.NewKeySet(key)
	if err != nil {
		b.Fatal(err)
	}
	const issuer = "https://bench.test"
	now := time.Now()
	token, err := keys.Sign(&bearer.Claims{Issuer: issuer, Subject: newID(), Audience: bearer.Audience, Role: bearer.Role,
		IssuedAt: now.Unix(), ExpiresAt: now.Add(time.Hour).Unix(), ID: newID(), OrganizationID: d.org,
		ClientID: "bench", Scopes: []string{"svc:quotations:read"}, BranchIDs: []string{d.branch}, AppName: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	list := "/v1/" + d.branch + "/quotations?limit=50"
	noCount := func() map[string]string { return map[string]string{"Prefer": "count=none"} }
	// One API whose verifier's CutOffs is switched between runs: the
	// runs differ in the check alone.
	v := &bearer.Verifier{Keys: keys, Issuer: issuer, Families: store}
	api, err := newAPI(d.db, query.Postgres, v, testLogger(b))
	if err != nil {
		b.Fatal(err)
	}
	h := newHandler(d.db, newOAuthServer(d.db, store, keys, issuer, testLogger(b)), api)
	call := benchCall(b, h, token, http.MethodGet, list, http.StatusOK, nil, noCount)
	set := func(on bool) {
		v.CutOffs = nil
		if on {
			v.CutOffs = cutoffs
		}
	}
	for _, on := range []bool{false, true} {
		name := map[bool]string{false: "off", true: "on"}[on]
		b.Run("api/cutoffs="+name, func(b *testing.B) {
			set(on)
			measure(b, false, call)
		})
		b.Run("verify/cutoffs="+name, func(b *testing.B) {
			set(on)
			measure(b, false, func() {
				if _, err := v.Verify(context.Background(), token); err != nil {
					b.Fatal(err)
				}
			})
		})
	}
	// Both in turn, each call timed, in alternating order: the ratio holds
	// while the machine's load drifts.
	b.Run("api/interleaved", func(b *testing.B) {
		b.ReportAllocs()
		var spent [2]time.Duration
		flip := false
		for b.Loop() {
			flip = !flip
			for _, on := range []bool{flip, !flip} {
				set(on)
				start := time.Now()
				call()
				spent[map[bool]int{false: 0, true: 1}[on]] += time.Since(start)
			}
		}
		b.ReportMetric(float64(spent[0].Nanoseconds())/float64(b.N), "off-ns/op")
		b.ReportMetric(float64(spent[1].Nanoseconds())/float64(b.N), "on-ns/op")
		b.ReportMetric(float64(spent[1])/float64(spent[0]), "on/off")
	})
}
