package webhook

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/waybillhq/waybill/query"
	"github.com/waybillhq/waybill/webhook/signature"
)

// result is the result of an attempt.
type result struct {
	at       time.Time
	code     int // 0: no HTTP answer
	err      string
	duration time.Duration
	// final: the delivery cannot succeed, whatever the endpoint does; it
	// fails now and does not count against the endpoint.
	final bool
}

// deliver makes one attempt of j and records it. The outcome is 0 when
// nothing was recorded.
func (d *Dispatcher) deliver(ctx context.Context, j job) (Outcome, error) {
	var (
		rawURL, keyID, previousKeyID string
		sealed, previous             []byte
		previousUntil                any
		event, own                   sql.NullString
		rateLimit                    sql.NullInt64
		rateNext                     any
	)
	// A delivery of a test event carries the event (own); the others read
	// theirs from the events table.
	err := d.DB.QueryRowContext(ctx, d.sql(`SELECT p.url, p.secret, p.secret_key_id, p.previous_secret, p.previous_secret_key_id, p.previous_secret_until,
	x.body, e.body, p.rate_limit, p.rate_next
FROM waybill_webhook_deliveries x JOIN waybill_webhook_endpoints p ON p.id = x.endpoint_id
LEFT JOIN waybill_events e ON e.organization_id = x.organization_id AND e.seq = x.event_seq
WHERE x.id = ?`), j.id).
		Scan(&rawURL, &sealed, &keyID, &previous, &previousKeyID, &previousUntil, &own, &event, &rateLimit, &rateNext)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, nil // deleted, with its deliveries
	}
	if err != nil {
		return 0, fmt.Errorf("webhook: read the event and the endpoint: %w", err)
	}
	body, test := event.String, own.Valid
	if test {
		body = own.String
	} else if !event.Valid {
		return d.record(ctx, j, result{at: d.now(), err: errEventRemoved, final: true})
	}
	if rateLimit.Valid && rateLimit.Int64 > 0 {
		at, ok, err := d.takeSlot(ctx, j, rateLimit.Int64, rateNext)
		if err != nil {
			return 0, err
		}
		if !ok {
			// Over the endpoint's rate: the delivery waits for its turn,
			// pending, and costs no attempt.
			return 0, d.postpone(ctx, j, at)
		}
	}
	now := d.now()
	secrets, err := d.secrets(j.endpointID, sealed, keyID, previous, previousKeyID, previousUntil, now)
	var h http.Header
	if err == nil {
		h, err = signature.SignAll(secrets, j.eventID, now, []byte(body))
	}
	if err != nil {
		d.logger().Error("webhook: the signing secret of an endpoint cannot be used", "endpoint", j.endpointID, "error", err)
		return 0, d.release(ctx, j)
	}
	res := d.post(ctx, rawURL, h, []byte(body))
	if test && res.err != "" {
		// A test event gets one attempt, which never counts against the
		// endpoint: its caller sends another when it wants.
		res.final = true
	}
	return d.record(ctx, j, res)
}

// secrets returns the secrets that sign a delivery of the endpoint
// endpointID at now: its secret and, until previousUntil (during the
// grace of a rotation), the previous one after it.
func (d *Dispatcher) secrets(endpointID string, sealed []byte, keyID string, previous []byte, previousKeyID string, previousUntil any, now time.Time) ([]string, error) {
	secret, err := openSecret(d.Sealer, endpointID, sealed, keyID)
	if err != nil {
		return nil, err
	}
	secrets := []string{secret}
	if previous == nil || previousUntil == nil {
		return secrets, nil
	}
	until, err := query.ScanTimestamp(previousUntil)
	if err != nil {
		return nil, err
	}
	if !now.Before(until) {
		return secrets, nil // the grace is over: it is forgotten
	}
	old, err := openSecret(d.Sealer, endpointID, previous, previousKeyID)
	if err != nil {
		return nil, err
	}
	return append(secrets, old), nil
}

// openSecret returns the signing secret of an endpoint, stored sealed by
// sealer under keyID (in clear when keyID is "").
func openSecret(sealer Sealer, endpointID string, sealed []byte, keyID string) (string, error) {
	if keyID == "" {
		return string(sealed), nil
	}
	if sealer == nil {
		return "", fmt.Errorf("webhook: the secret is sealed under key %q and there is no Sealer", keyID)
	}
	secret, err := sealer.Open(sealed, []byte(endpointID), keyID)
	if err != nil {
		return "", fmt.Errorf("webhook: open the secret: %w", err)
	}
	return string(secret), nil
}

// post makes one attempt: it posts body with the signed headers h.
func (d *Dispatcher) post(ctx context.Context, rawURL string, h http.Header, body []byte) result {
	res := result{at: d.now()}
	start := time.Now()
	defer func() { res.duration = time.Since(start) }()
	ctx, cancel := context.WithTimeout(ctx, d.timeout())
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, rawURL, bytes.NewReader(body))
	if err != nil {
		res.err = "the URL cannot be used: " + unwrapURLError(err)
		res.duration = time.Since(start)
		return res
	}
	req.Header = h
	req.Header.Set("Content-Type", signature.ContentType)
	req.Header.Set("User-Agent", UserAgent)
	resp, err := d.client.Do(req)
	if err != nil {
		var timeout interface{ Timeout() bool }
		if errors.Is(err, context.DeadlineExceeded) || errors.As(err, &timeout) && timeout.Timeout() {
			res.err = "no answer within " + d.timeout().String()
		} else {
			res.err = unwrapURLError(err)
		}
		res.duration = time.Since(start)
		return res
	}
	answer, _ := io.ReadAll(io.LimitReader(resp.Body, maxAnswer))
	_ = resp.Body.Close()
	res.code, res.duration = resp.StatusCode, time.Since(start)
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		res.err = "HTTP " + strconv.Itoa(resp.StatusCode)
		if text := printable(answer, maxErrorBody); text != "" {
			res.err += ": " + text
		}
	}
	return res
}

// unwrapURLError returns the text of err without the method and URL that
// *url.Error adds: the URL is the endpoint's, shown elsewhere.
func unwrapURLError(err error) string {
	var ue *url.Error
	if errors.As(err, &ue) {
		err = ue.Err
	}
	return err.Error()
}

// printable returns up to limit bytes of b as printable text: invalid
// UTF-8 and control characters become spaces, runs of spaces one.
func printable(b []byte, limit int) string {
	var sb strings.Builder
	space := false
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		b = b[size:]
		if r == utf8.RuneError || !unicode.IsPrint(r) {
			r = ' '
		}
		if r == ' ' {
			if space {
				continue
			}
			space = true
		} else {
			space = false
		}
		if sb.Len()+utf8.RuneLen(r) > limit {
			break
		}
		sb.WriteRune(r)
	}
	return strings.TrimSpace(sb.String())
}

// release gives j back without an attempt, to be tried after secretRetry.
func (d *Dispatcher) release(ctx context.Context, j job) error {
	return d.releaseUntil(ctx, j, d.now().Add(secretRetry))
}

// releaseUntil gives j back without an attempt, to be tried at at.
func (d *Dispatcher) releaseUntil(ctx context.Context, j job, at time.Time) error {
	_, err := d.DB.ExecContext(ctx, d.sql(`UPDATE waybill_webhook_deliveries SET lease_until = NULL, next_attempt_at = ?
WHERE id = ? AND lease_until = ?`), d.Dialect.Timestamp(at), j.id, d.Dialect.Timestamp(j.lease))
	if err != nil {
		return fmt.Errorf("webhook: release a delivery: %w", err)
	}
	return nil
}
