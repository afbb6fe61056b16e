package bearer

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// CutOffChecker tells whether an app was cut off from an organization
// after a token was issued: Verifier.CutOffs asks it of every OAuth token,
// on the request path, so it must answer from memory. A CutOffList is one.
type CutOffChecker interface {
	// CutOff reports whether the tokens of the app clientID for the
	// organization organizationID that were issued at issuedAt (to the
	// second, the token's iat) are cut off.
	CutOff(organizationID, clientID string, issuedAt time.Time) bool
}

// CutOff records that an app was disconnected from an organization at At:
// its tokens for the organization issued at or before At, to the second,
// are refused.
type CutOff struct {
	OrganizationID string
	ClientID       string
	At             time.Time
}

// CutOffSource lists the cut-offs recorded since a time: the token
// service's store (package oauth/sqlstore) is one.
type CutOffSource interface {
	CutOffs(ctx context.Context, since time.Time) ([]CutOff, error)
}

// DefaultCutOffWindow is how far back a CutOffList loads cut-offs when its
// Window is zero: the default lifetime of an access token, past which
// every token issued before a cut-off has expired anyway.
const DefaultCutOffWindow = time.Hour

// CutOffList is an in-memory deny list of cut-offs, loaded from a
// CutOffSource: Refresh loads it once, Run keeps reloading it. CutOff
// answers from memory, without locks, so a Verifier may ask it on every
// request. Set Source (and Window) before the first Refresh; a CutOffList
// must not be copied after its first use.
//
// Every process that verifies tokens holds its own list: a cut-off
// recorded by one replica takes effect on another at its next refresh,
// within the interval given to Run.
type CutOffList struct {
	// Source lists the cut-offs. Required.
	Source CutOffSource
	// Window is how far back cut-offs are loaded; it must be at least the
	// lifetime of an access token, past which a cut-off refuses nothing.
	// Zero means DefaultCutOffWindow.
	Window time.Duration
	// OnCutOff, when set, is called by Refresh once for every cut-off it
	// loads that it did not hand to OnCutOff before (the latest of each
	// app and organization), after the list is updated: what else a
	// cut-off must end, such as the app's webhook endpoints, ends there.
	// A cut-off whose call fails is handed again at the next Refresh. The
	// first Refresh hands every cut-off of the window, so OnCutOff must be
	// idempotent: every process runs it, and a restart runs it again.
	OnCutOff func(ctx context.Context, c CutOff) error

	cutoffs atomic.Pointer[map[cutOffKey]time.Time]

	mu      sync.Mutex              // serializes the calls of OnCutOff
	handled map[cutOffKey]time.Time // what OnCutOff was given, and took
}

type cutOffKey struct{ organizationID, clientID string }

var _ CutOffChecker = (*CutOffList)(nil)

// CutOff reports whether a token of the app for the organization issued at
// issuedAt was issued at or before the latest cut-off of the app from the
// organization, compared to the second. Before the first Refresh nothing
// is cut off.
func (l *CutOffList) CutOff(organizationID, clientID string, issuedAt time.Time) bool {
	m := l.cutoffs.Load()
	if m == nil || len(*m) == 0 {
		return false
	}
	at, ok := (*m)[cutOffKey{organizationID, clientID}]
	return ok && issuedAt.Unix() <= at.Unix()
}

// Refresh reloads the list from Source, then hands the cut-offs new to it
// to OnCutOff. On an error of Source the list it had stays; the errors of
// OnCutOff are returned joined, after the list was updated.
func (l *CutOffList) Refresh(ctx context.Context) error {
	if l.Source == nil {
		return errors.New("bearer: a CutOffList needs a Source")
	}
	window := l.Window
	if window <= 0 {
		window = DefaultCutOffWindow
	}
	list, err := l.Source.CutOffs(ctx, time.Now().Add(-window))
	if err != nil {
		return err
	}
	m := make(map[cutOffKey]time.Time, len(list))
	for _, c := range list {
		k := cutOffKey{c.OrganizationID, c.ClientID}
		if c.At.After(m[k]) {
			m[k] = c.At
		}
	}
	l.cutoffs.Store(&m)
	if l.OnCutOff == nil {
		return nil
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.handled == nil {
		l.handled = map[cutOffKey]time.Time{}
	}
	var errs []error
	for k, at := range m {
		if !at.After(l.handled[k]) {
			continue
		}
		if err := l.OnCutOff(ctx, CutOff{OrganizationID: k.organizationID, ClientID: k.clientID, At: at}); err != nil {
			errs = append(errs, err)
			continue
		}
		l.handled[k] = at
	}
	return errors.Join(errs...)
}

// Run refreshes the list every interval until ctx is done, passing each
// failure to onError when it is not nil (the list it had stays). It does
// not refresh first: call Refresh before serving, so that a failure to
// load stops the start.
func (l *CutOffList) Run(ctx context.Context, interval time.Duration, onError func(error)) {
	t := time.NewTicker(interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-t.C:
			if err := l.Refresh(ctx); err != nil && onError != nil && ctx.Err() == nil {
				onError(err)
			}
		}
	}
}
