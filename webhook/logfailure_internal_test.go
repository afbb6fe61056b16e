package webhook

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"strings"
	"testing"

	"github.com/stretchr/testify/assert"
)

// A step that fails because the database cannot be reached is an outage,
// logged as a warning; any other failure is an error.
func TestLogFailureLevel(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		err  error
		want string
	}{
		{"connection cut", fmt.Errorf("webhook: claim: %w", io.ErrUnexpectedEOF), "level=WARN"},
		{"deadline", fmt.Errorf("webhook: fan-out: %w", context.DeadlineExceeded), "level=WARN"},
		{"other", fmt.Errorf("webhook: claim: %w", errors.New("syntax error at or near")), "level=ERROR"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			var buf bytes.Buffer
			d := &Dispatcher{Logger: slog.New(slog.NewTextHandler(&buf, nil))}
			d.logFailure("webhook: claim deliveries", tt.err, "delivery", "d-1")
			line := buf.String()
			assert.True(t, strings.Contains(line, tt.want), "%s", line)
			assert.Contains(t, line, "delivery=d-1")
			assert.Contains(t, line, "error=")
		})
	}
}
