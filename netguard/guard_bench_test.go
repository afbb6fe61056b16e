package netguard_test

import (
	"context"
	"net/netip"
	"net/url"
	"testing"

	"github.com/waybillhq/waybill/netguard"
)

// BenchmarkGuardCheckURL measures the check of a URL whose host is a
// public IP address — every block of the guard is looked at, the most
// work an address takes — against its floor: parsing the URL and the
// address, which any check needs.
func BenchmarkGuardCheckURL(b *testing.B) {
	var g netguard.Guard
	for _, u := range []string{"https://93.184.216.34/hooks/waybill", "https://[2606:2800:220:1:248:1893:25c8:1946]/hooks/waybill"} {
		name := "ipv4"
		if u[8] == '[' {
			name = "ipv6"
		}
		b.Run("guard/"+name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if err := g.CheckURL(context.Background(), u); err != nil {
					b.Fatal(err)
				}
			}
		})
		b.Run("floor/"+name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				p, err := url.Parse(u)
				if err != nil {
					b.Fatal(err)
				}
				if _, err := netip.ParseAddr(p.Hostname()); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
