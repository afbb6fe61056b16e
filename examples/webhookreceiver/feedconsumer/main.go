// Command feedconsumer follows the change feed of a Waybill server, the
// pull alternative to webhooks: it reads the quotation events of one
// scope in commit order, page after page, and keeps its place in a file.
//
//	WAYBILL_TOKEN=... WAYBILL_SCOPE_ID=<a branch id> go run ./examples/webhookreceiver/feedconsumer
//
// WAYBILL_URL is the server (default http://127.0.0.1:8080). Quotations
// belong to branches, so WAYBILL_SCOPE_ID is a branch's id; the feed of a
// branch holds that branch's events. The token needs svc:events:read and
// svc:quotations:read, and the branch among those it may use.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"math/rand/v2"
	"net/http"
	"net/url"
	"os"
	"os/signal"
	"strconv"
	"time"
)

func main() {
	cursorFile := flag.String("cursor-file", "feed.cursor", "`file` that keeps the position in the feed")
	flag.Parse()
	c := &consumer{
		base:       os.Getenv("WAYBILL_URL"),
		token:      os.Getenv("WAYBILL_TOKEN"),
		scope:      os.Getenv("WAYBILL_SCOPE_ID"),
		cursorFile: *cursorFile,
		client:     &http.Client{Timeout: 30 * time.Second},
		poll:       5 * time.Second,
	}
	if c.base == "" {
		c.base = "http://127.0.0.1:8080"
	}
	if c.token == "" || c.scope == "" {
		slog.Error("set WAYBILL_TOKEN and WAYBILL_SCOPE_ID")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	err := c.run(ctx) // returns only when ctx ends (Ctrl-C) or on an error waiting does not cure
	if ctx.Err() == nil {
		slog.Error("feedconsumer", "err", err)
		os.Exit(1)
	}
}

// consumer follows the feed of one scope.
type consumer struct {
	base, token, scope string
	cursorFile         string
	client             *http.Client
	poll               time.Duration // the wait after an empty page
}

// event is a CloudEvent of the feed: the fields this program uses.
type event struct {
	ID      string `json:"id"`
	Type    string `json:"type"`    // quotation.created, quotation.updated, ...
	Subject string `json:"subject"` // the record's id
	Data    struct {
		Record  json.RawMessage `json:"record"` // the record after the write; {"id"} for a delete
		Changed []string        `json:"changed"`
	} `json:"data"`
}

// errCursorExpired is the feed's 410: the cursor points before the
// events the server still keeps.
var errCursorExpired = errors.New("the cursor is older than the events the server keeps")

// errNotFound is a 404: the scope is no branch of the token's organization.
var errNotFound = errors.New("not found")

// run follows the feed from the stored cursor until ctx ends or an error
// that waiting does not cure.
func (c *consumer) run(ctx context.Context) error {
	cursor, found, err := c.loadCursor()
	if err != nil {
		return err
	}
	if !found {
		// The first start: read the records as they are, then follow the
		// feed from the oldest event the server keeps.
		if err := c.snapshot(ctx); err != nil {
			return err
		}
	}
	for {
		q := url.Values{"types": {"quotation.*"}, "limit": {"100"}}
		if cursor != "" {
			q.Set("after", cursor)
		}
		var page struct {
			Data       []event `json:"data"`
			NextCursor string  `json:"next_cursor"` // always set: where to continue, also after an empty page
		}
		err := c.get(ctx, "/v1/"+c.scope+"/events?"+q.Encode(), &page)
		if errors.Is(err, errCursorExpired) {
			// Events were missed: start again from a snapshot of the
			// records, then follow the feed from the oldest event kept.
			slog.Warn("cursor expired; reading the records again", "err", err)
			if err := c.snapshot(ctx); err != nil {
				return err
			}
			cursor = ""
			if err := c.saveCursor(cursor); err != nil {
				return err
			}
			continue
		}
		if err != nil {
			return err
		}
		for _, e := range page.Data {
			if err := c.apply(ctx, e); err != nil {
				return err
			}
		}
		// Store the cursor after handling the page: a crash before this
		// line handles the page again on the next start, never skips it.
		// (A database-backed consumer stores it in the same transaction
		// as the page's work.)
		if page.NextCursor != cursor {
			cursor = page.NextCursor
			if err := c.saveCursor(cursor); err != nil {
				return err
			}
		}
		if len(page.Data) == 0 {
			if err := sleep(ctx, c.poll); err != nil {
				return err
			}
		}
	}
}

// apply handles one event. An event carries the whole record after the
// write, so applying it sets the local copy to data.record (or deletes
// it): handling an event twice, or an event older than a snapshot, does
// no harm once the events are applied in order.
func (c *consumer) apply(_ context.Context, e event) error {
	slog.Info("event", "type", e.Type, "subject", e.Subject, "id", e.ID, "changed", e.Data.Changed)
	return nil
}

// snapshot reads every quotation through the list, as the starting state
// before following the feed from its start.
func (c *consumer) snapshot(ctx context.Context) error {
	after := ""
	for {
		q := url.Values{"limit": {"1000"}}
		if after != "" {
			q.Set("after", after)
		}
		var page struct {
			Data       []json.RawMessage `json:"data"`
			Pagination struct {
				NextCursor *string `json:"next_cursor"` // null on the last page
			} `json:"pagination"`
		}
		err := c.get(ctx, "/v1/"+c.scope+"/quotations?"+q.Encode(), &page)
		if errors.Is(err, errNotFound) {
			return fmt.Errorf("%w; quotations belong to branches: set WAYBILL_SCOPE_ID to the id of a branch "+
				"(waybill admin branch list --org ORG lists them), not to the organization's id", err)
		}
		if err != nil {
			return err
		}
		slog.Info("snapshot page", "records", len(page.Data)) // store each record here
		if page.Pagination.NextCursor == nil {
			return nil
		}
		after = *page.Pagination.NextCursor
	}
}

// get fetches path into v. It waits and tries again on 429 and 503 (as
// long as Retry-After says), on other 5xx answers and on network errors;
// it returns errCursorExpired on 410 and an error on other answers.
func (c *consumer) get(ctx context.Context, path string, v any) error {
	for attempt := 0; ; attempt++ {
		req, err := http.NewRequestWithContext(ctx, http.MethodGet, c.base+path, nil)
		if err != nil {
			return err
		}
		req.Header.Set("Authorization", "Bearer "+c.token)
		resp, err := c.client.Do(req)
		if err != nil {
			if ctx.Err() != nil {
				return ctx.Err()
			}
			slog.Warn("request failed; trying again", "err", err)
			if err := sleep(ctx, backoff(attempt)); err != nil {
				return err
			}
			continue
		}
		var body struct {
			Error       string `json:"error"`
			Description string `json:"error_description"`
		}
		switch {
		case resp.StatusCode == http.StatusOK:
			err := json.NewDecoder(resp.Body).Decode(v)
			resp.Body.Close()
			return err
		case resp.StatusCode == http.StatusGone:
			_ = json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			return fmt.Errorf("%w: %s", errCursorExpired, body.Description)
		case resp.StatusCode == http.StatusTooManyRequests || resp.StatusCode >= 500:
			resp.Body.Close()
			wait := backoff(attempt)
			// Retry-After in seconds, as Waybill sends it.
			if s, err := strconv.Atoi(resp.Header.Get("Retry-After")); err == nil && s >= 0 {
				wait = time.Duration(s) * time.Second
			}
			slog.Warn("server busy; trying again", "status", resp.StatusCode, "wait", wait)
			if err := sleep(ctx, wait); err != nil {
				return err
			}
		default: // 400, 401, 403, 404: waiting will not help
			_ = json.NewDecoder(resp.Body).Decode(&body)
			resp.Body.Close()
			err := fmt.Errorf("GET %s: %s %s: %s", path, resp.Status, body.Error, body.Description)
			if resp.StatusCode == http.StatusNotFound {
				err = fmt.Errorf("%w: %w", errNotFound, err)
			}
			return err
		}
	}
}

// backoff is the wait before the attempt after attempt: exponential from
// one second up to a minute, with jitter so that many consumers do not
// come back at once.
func backoff(attempt int) time.Duration {
	d := time.Second << min(attempt, 6)
	return min(d, time.Minute)/2 + rand.N(min(d, time.Minute)/2)
}

// sleep waits d, or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-t.C:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

// loadCursor reads the stored cursor. found is false when there is none
// yet; an empty cursor is stored after a snapshot, and both start at the
// oldest event the server keeps.
func (c *consumer) loadCursor() (cursor string, found bool, err error) {
	b, err := os.ReadFile(c.cursorFile)
	if errors.Is(err, os.ErrNotExist) {
		return "", false, nil
	}
	return string(b), err == nil, err
}

// saveCursor stores cursor, replacing the file at once so that a crash
// leaves the old cursor or the new one, never half of one.
func (c *consumer) saveCursor(cursor string) error {
	tmp := c.cursorFile + ".tmp"
	if err := os.WriteFile(tmp, []byte(cursor), 0o600); err != nil {
		return err
	}
	return os.Rename(tmp, c.cursorFile)
}
