// Command webhookreceiver receives the webhooks of a Waybill server: it
// checks each delivery's signature with signature.Verify, handles each event
// once however often it is delivered, and logs it.
//
// Run it from the root of the module with the secret the server answered
// when the endpoint was registered:
//
//	WEBHOOK_SECRET=whsec_... go run ./examples/webhookreceiver -addr 127.0.0.1:8081
//
// It answers a delivery with
//   - 204 once the event is handled, or when it was handled before (a
//     retry of a delivery that succeeded but whose answer was lost);
//   - 401 when the signature does not verify (wrong secret, changed body,
//     or a timestamp more than five minutes away: a replay);
//   - 409 while the same delivery is still being handled, so the sender
//     tries again later;
//   - 500 when handling fails, so the sender tries again later.
//
// The README next to this file explains how to register the endpoint.
package main

import (
	"container/list"
	"context"
	"encoding/json"
	"errors"
	"flag"
	"io"
	"log/slog"
	"net/http"
	"os"
	"os/signal"
	"sync"
	"syscall"
	"time"

	"github.com/waybillhq/waybill/webhook/signature"
)

func main() {
	addr := flag.String("addr", "127.0.0.1:8081", "`address` to listen on")
	flag.Parse()
	if err := run(*addr, os.Getenv("WEBHOOK_SECRET")); err != nil {
		slog.Error("webhookreceiver", "err", err)
		os.Exit(1)
	}
}

// run serves the receiver on addr until SIGINT or SIGTERM.
func run(addr, secret string) error {
	if secret == "" {
		return errors.New("set WEBHOOK_SECRET to the endpoint's signing secret (whsec_...)")
	}
	// Check the secret's form once, at start, instead of answering 401 to
	// every delivery.
	if _, err := signature.Sign(secret, "check", time.Now(), nil); err != nil {
		return errors.New("WEBHOOK_SECRET is not a signing secret: it is whsec_ followed by base64")
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	srv := &http.Server{
		Addr:              addr,
		Handler:           newReceiver(secret, handleEvent),
		ReadHeaderTimeout: 10 * time.Second,
		ReadTimeout:       30 * time.Second,
		WriteTimeout:      30 * time.Second,
	}
	errc := make(chan error, 1)
	go func() { errc <- srv.ListenAndServe() }()
	slog.Info("listening for webhooks", "url", "http://"+addr+"/")
	select {
	case err := <-errc:
		return err
	case <-ctx.Done():
	}
	shutdown, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	return srv.Shutdown(shutdown)
}

// handleEvent is this example's work: it logs the event. A real receiver
// does its own work here — update its copy of the quotation, notify
// someone — and returns an error when that fails, so that the delivery is
// retried.
func handleEvent(ctx context.Context, e event) error {
	attrs := []any{"type", e.Type, "subject", e.Subject, "id", e.ID}
	if len(e.Data.Changed) > 0 {
		attrs = append(attrs, "changed", e.Data.Changed)
	}
	if s := e.Data.Status; s != nil {
		attrs = append(attrs, "status_from", s.From, "status_to", s.To)
	}
	slog.InfoContext(ctx, "event", attrs...)
	return nil
}

// event is the CloudEvent (JSON, structured mode) a delivery's body holds.
type event struct {
	SpecVersion     string    `json:"specversion"`
	ID              string    `json:"id"`     // the same as the webhook-id header
	Source          string    `json:"source"` // the record's path: /v1/{scopeId}/quotations/{id}
	Type            string    `json:"type"`   // quotation.created, quotation.status_changed, ...
	Subject         string    `json:"subject"`
	Time            time.Time `json:"time"`
	DataContentType string    `json:"datacontenttype"`
	OrganizationID  string    `json:"organizationid"`
	BranchID        string    `json:"branchid,omitempty"` // absent for organization-wide records
	ClientID        string    `json:"clientid"`
	UserID          string    `json:"userid,omitempty"` // absent when a client acted on its own
	Data            eventData `json:"data"`
}

// eventData is the data of an event.
type eventData struct {
	// Record is the record after the write, as the API shows it; for a
	// delete only {"id": "..."}.
	Record json.RawMessage `json:"record"`
	// Changed names the fields the write changed (empty for a delete).
	Changed []string `json:"changed"`
	// Status is set on *.status_changed events only.
	Status *statusChange `json:"status,omitempty"`
}

// statusChange is the move of a record's status field.
type statusChange struct {
	Field string `json:"field"`
	From  string `json:"from"`
	To    string `json:"to"`
}

// maxBody is the largest delivery the receiver reads.
const maxBody = 1 << 20

// receiver is the http.Handler of newReceiver.
type receiver struct {
	secret string
	handle func(context.Context, event) error
	seen   *seenSet
}

// newReceiver returns the handler of deliveries signed with secret: it
// verifies each, calls handle once per webhook-id, and answers as the
// package comment says.
func newReceiver(secret string, handle func(ctx context.Context, e event) error) http.Handler {
	return &receiver{secret: secret, handle: handle, seen: newSeenSet(100_000, 48*time.Hour)}
}

func (rc *receiver) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.URL.Path != "/" {
		http.NotFound(w, r)
		return
	}
	if r.Method != http.MethodPost {
		w.Header().Set("Allow", http.MethodPost)
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	body, err := io.ReadAll(http.MaxBytesReader(w, r.Body, maxBody))
	if err != nil {
		var tooLarge *http.MaxBytesError
		if errors.As(err, &tooLarge) {
			http.Error(w, "body too large", http.StatusRequestEntityTooLarge)
			return
		}
		http.Error(w, "cannot read the body", http.StatusBadRequest)
		return
	}
	// Nothing of the request is trusted before this: not the body, not
	// the webhook-id. The log never shows the secret or the signature.
	if err := signature.Verify(rc.secret, r.Header, body); err != nil {
		slog.WarnContext(r.Context(), "delivery refused: bad signature", "err", err, "remote", r.RemoteAddr)
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	}
	id := r.Header.Get(signature.HeaderID)

	switch rc.seen.begin(id) {
	case handled:
		slog.InfoContext(r.Context(), "duplicate delivery acknowledged", "id", id)
		w.WriteHeader(http.StatusNoContent)
		return
	case inFlight:
		http.Error(w, "this delivery is being handled", http.StatusConflict)
		return
	}
	done := false
	defer func() { rc.seen.end(id, done) }()

	var e event
	if err := json.Unmarshal(body, &e); err != nil {
		slog.ErrorContext(r.Context(), "delivery is not a CloudEvent", "id", id, "err", err)
		http.Error(w, "the body is not a CloudEvent", http.StatusBadRequest)
		return
	}
	if err := rc.handle(r.Context(), e); err != nil {
		slog.ErrorContext(r.Context(), "handling failed; the sender will retry", "type", e.Type, "subject", e.Subject, "id", id, "err", err)
		http.Error(w, "handling failed", http.StatusInternalServerError)
		return
	}
	done = true
	w.WriteHeader(http.StatusNoContent)
}

// The states of a webhook-id in a seenSet.
const (
	unseen   = iota // not handled: handle it
	inFlight        // being handled by another request right now
	handled         // handled before: acknowledge without handling again
)

// seenSet remembers the webhook-ids of the deliveries handled, so that a
// retried delivery is acknowledged without being handled twice. A sender
// retries a delivery whose answer it did not get (a timeout, a dropped
// connection), although the receiver may have handled it.
//
// This one is in memory and bounded, which is enough for an example: it
// forgets ids after ttl (longer than the sender retries, about a day) or
// when it holds max of them, and everything on a restart. A real receiver
// keeps the ids in its database, written in the same transaction as its
// own work, so that "handled" and "remembered as handled" cannot differ.
type seenSet struct {
	mu       sync.Mutex
	max      int
	ttl      time.Duration
	now      func() time.Time
	done     map[string]*list.Element // of *seenEntry, oldest at the front
	order    *list.List
	inFlight map[string]bool
}

// seenEntry is an id in a seenSet and when it was handled.
type seenEntry struct {
	id string
	at time.Time
}

// newSeenSet returns an empty set that keeps at most max ids, each for
// ttl.
func newSeenSet(max int, ttl time.Duration) *seenSet {
	return &seenSet{max: max, ttl: ttl, now: time.Now, done: map[string]*list.Element{}, order: list.New(), inFlight: map[string]bool{}}
}

// begin reports whether id was handled or is being handled; when it is
// unseen, it marks it in flight, and the caller must call end.
func (s *seenSet) begin(id string) int {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.expire()
	if _, ok := s.done[id]; ok {
		return handled
	}
	if s.inFlight[id] {
		return inFlight
	}
	s.inFlight[id] = true
	return unseen
}

// end ends the handling of id that begin started: ok says it succeeded,
// and only then is id remembered as handled.
func (s *seenSet) end(id string, ok bool) {
	s.mu.Lock()
	defer s.mu.Unlock()
	delete(s.inFlight, id)
	if !ok {
		return
	}
	s.done[id] = s.order.PushBack(&seenEntry{id: id, at: s.now()})
	for s.order.Len() > s.max {
		s.remove(s.order.Front())
	}
}

// expire forgets the ids handled more than ttl ago.
func (s *seenSet) expire() {
	cutoff := s.now().Add(-s.ttl)
	for f := s.order.Front(); f != nil && f.Value.(*seenEntry).at.Before(cutoff); f = s.order.Front() {
		s.remove(f)
	}
}

func (s *seenSet) remove(e *list.Element) {
	delete(s.done, e.Value.(*seenEntry).id)
	s.order.Remove(e)
}
