package bearer_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/waybillhq/waybill/oauth/bearer"
)

type cutOffs []bearer.CutOff

func (c cutOffs) CutOffs(context.Context, time.Time) ([]bearer.CutOff, error) { return c, nil }

// BenchmarkCutOffCheck measures the check a Verifier with CutOffs adds to
// each request: a lookup in a list of 1,000 cut-offs, of an app that is not
// cut off and of one that is.
func BenchmarkCutOffCheck(b *testing.B) {
	now := time.Now()
	src := make(cutOffs, 1000)
	for i := range src {
		src[i] = bearer.CutOff{OrganizationID: fmt.Sprintf("org-%d", i), ClientID: fmt.Sprintf("app-%d", i), At: now}
	}
	l := &bearer.CutOffList{Source: src}
	if err := l.Refresh(context.Background()); err != nil {
		b.Fatal(err)
	}
	b.Run("miss", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if l.CutOff("org-1", "app-2", now) {
				b.Fatal("cut off")
			}
		}
	})
	b.Run("hit", func(b *testing.B) {
		b.ReportAllocs()
		for b.Loop() {
			if !l.CutOff("org-1", "app-1", now) {
				b.Fatal("not cut off")
			}
		}
	})
}

// BenchmarkVerifyCutOffs is BenchmarkVerify without and with a list of
// 1,000 cut-offs (none of the token's app).
func BenchmarkVerifyCutOffs(b *testing.B) {
	ks := mustKeySet(b, testKey("k1", 1))
	now := time.Now()
	token, err := ks.Sign(ccClaims(now))
	if err != nil {
		b.Fatal(err)
	}
	src := make(cutOffs, 1000)
	for i := range src {
		src[i] = bearer.CutOff{OrganizationID: fmt.Sprintf("org-%d", i), ClientID: fmt.Sprintf("app-%d", i), At: now}
	}
	l := &bearer.CutOffList{Source: src}
	if err := l.Refresh(context.Background()); err != nil {
		b.Fatal(err)
	}
	for _, tc := range []struct {
		name    string
		cutoffs bearer.CutOffChecker
	}{{"off", nil}, {"on", l}} {
		b.Run(tc.name, func(b *testing.B) {
			v := &bearer.Verifier{Keys: ks, Issuer: testIssuer, CutOffs: tc.cutoffs}
			b.ReportAllocs()
			for b.Loop() {
				if _, err := v.Verify(context.Background(), token); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}

func TestCutOffVerify(t *testing.T) {
	ks := mustKeySet(t, testKey("k1", 1))
	now := time.Now()
	claims := ccClaims(now)
	token, err := ks.Sign(claims)
	if err != nil {
		t.Fatal(err)
	}
	l := &bearer.CutOffList{Source: cutOffs{{OrganizationID: claims.OrganizationID, ClientID: claims.ClientID, At: now}}}
	v := &bearer.Verifier{Keys: ks, Issuer: testIssuer, CutOffs: l}
	if _, err := v.Verify(context.Background(), token); err != nil {
		t.Fatalf("before the list is loaded: %v", err)
	}
	if err := l.Refresh(context.Background()); err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(context.Background(), token); err == nil || !strings.Contains(err.Error(), "disconnected") {
		t.Fatalf("a token of a cut-off app: %v", err)
	}
	later, err := ks.Sign(ccClaims(now.Add(time.Second)))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := v.Verify(context.Background(), later); err != nil {
		t.Fatalf("a token issued after the cut-off: %v", err)
	}
	if err := (&bearer.CutOffList{}).Refresh(context.Background()); err == nil {
		t.Fatal("a list without a source refreshes")
	}
}

// mutableCutOffs is a CutOffSource whose list a test changes.
type mutableCutOffs struct{ list []bearer.CutOff }

func (m *mutableCutOffs) CutOffs(context.Context, time.Time) ([]bearer.CutOff, error) {
	return append([]bearer.CutOff(nil), m.list...), nil
}

// OnCutOff gets each cut-off once, the latest of an app and organization,
// and again after it failed or when a later cut-off of the same app comes.
func TestCutOffListOnCutOff(t *testing.T) {
	t.Parallel()
	t0 := time.Now().Add(-time.Minute).Truncate(time.Second)
	src := &mutableCutOffs{list: []bearer.CutOff{
		{OrganizationID: "org-1", ClientID: "app-1", At: t0},
		{OrganizationID: "org-1", ClientID: "app-1", At: t0.Add(-time.Second)}, // an older one of the same app
		{OrganizationID: "org-2", ClientID: "app-1", At: t0},
	}}
	var got []string
	fail := "org-2"
	l := &bearer.CutOffList{Source: src, OnCutOff: func(_ context.Context, c bearer.CutOff) error {
		got = append(got, fmt.Sprintf("%s/%s@%d", c.OrganizationID, c.ClientID, c.At.Unix()-t0.Unix()))
		if c.OrganizationID == fail {
			return fmt.Errorf("cannot end what %s gave", c.OrganizationID)
		}
		return nil
	}}
	ctx := context.Background()
	err := l.Refresh(ctx)
	if err == nil || !strings.Contains(err.Error(), "cannot end what org-2 gave") {
		t.Fatalf("Refresh: %v, want the error of OnCutOff", err)
	}
	if !l.CutOff("org-2", "app-1", t0) {
		t.Fatal("a failing OnCutOff must not keep the list from taking the cut-off")
	}
	assertSameSet(t, got, "org-1/app-1@0", "org-2/app-1@0")

	got, fail = nil, ""
	if err := l.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	assertSameSet(t, got, "org-2/app-1@0") // only the one that failed

	got = nil
	if err := l.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	assertSameSet(t, got) // nothing new

	src.list = append(src.list, bearer.CutOff{OrganizationID: "org-1", ClientID: "app-1", At: t0.Add(5 * time.Second)},
		bearer.CutOff{OrganizationID: "org-3", ClientID: "app-2", At: t0})
	if err := l.Refresh(ctx); err != nil {
		t.Fatal(err)
	}
	assertSameSet(t, got, "org-1/app-1@5", "org-3/app-2@0")
}

func assertSameSet(t *testing.T, got []string, want ...string) {
	t.Helper()
	g := map[string]int{}
	for _, s := range got {
		g[s]++
	}
	w := map[string]int{}
	for _, s := range want {
		w[s]++
	}
	if fmt.Sprint(g) != fmt.Sprint(w) {
		t.Fatalf("OnCutOff got %v, want %v", got, want)
	}
}
