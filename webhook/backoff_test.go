package webhook_test

import (
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/waybillhq/waybill/webhook"
)

func TestDefaultBackoff(t *testing.T) {
	t.Parallel()
	want := []time.Duration{5 * time.Second, 20 * time.Second, 80 * time.Second, 320 * time.Second,
		1280 * time.Second, 5120 * time.Second, 20480 * time.Second, 10 * time.Hour, 10 * time.Hour, 10 * time.Hour}
	var total time.Duration
	for i, base := range want {
		attempt := i + 1
		for range 200 {
			got := webhook.DefaultBackoff(attempt)
			require.GreaterOrEqual(t, got, base*8/10, "attempt %d", attempt)
			require.Less(t, got, base*12/10, "attempt %d", attempt)
		}
		if attempt < 10 {
			total += base
		}
	}
	// The nine delays between ten attempts: about a day.
	assert.InDelta(t, 27.6, total.Hours(), 0.1)
	assert.Less(t, webhook.DefaultBackoff(0), 6*time.Second)
	assert.Less(t, webhook.DefaultBackoff(1000), 12*time.Hour)
}

func TestOutcomeString(t *testing.T) {
	t.Parallel()
	for o, s := range map[webhook.Outcome]string{
		webhook.Delivered: "delivered", webhook.Retried: "retried", webhook.Failed: "failed",
		webhook.Disabled: "disabled", webhook.Outcome(0): "Outcome(0)",
	} {
		assert.Equal(t, s, o.String())
	}
}

func TestExponentialBackoff(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name  string
		first time.Duration
		want  []time.Duration // without jitter, attempts 1, 2, ...
	}{
		{"100ms", 100 * time.Millisecond, []time.Duration{100 * time.Millisecond, 400 * time.Millisecond, 1600 * time.Millisecond, 6400 * time.Millisecond}},
		{"1h", time.Hour, []time.Duration{time.Hour, 4 * time.Hour, 10 * time.Hour, 10 * time.Hour}},
		{"above the cap", 20 * time.Hour, []time.Duration{10 * time.Hour, 10 * time.Hour}},
		{"zero is the default", 0, []time.Duration{5 * time.Second, 20 * time.Second}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			b := webhook.ExponentialBackoff(tt.first)
			for i, base := range tt.want {
				for range 50 {
					got := b(i + 1)
					require.GreaterOrEqual(t, got, base*8/10, "attempt %d", i+1)
					require.Less(t, got, base*12/10, "attempt %d", i+1)
				}
			}
		})
	}
}
