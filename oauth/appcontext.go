package oauth

import "context"

// appKey is the context key of an app authenticated for the request.
type appKey struct{}

// withAuthenticatedApp returns a copy of ctx that carries app, the client
// that a step in front of the token endpoints authenticated for this
// request with the request's own credentials (to key a rate limit by
// client, say). Server.AuthenticateClient then checks the secret it is
// given against app instead of loading the app again, so such a step costs
// the request no second lookup. The secret is still checked.
func withAuthenticatedApp(ctx context.Context, app *App) context.Context {
	return context.WithValue(ctx, appKey{}, app)
}

// AuthenticatedApp returns the app that IdentifyClient authenticated for
// the request of ctx.
func AuthenticatedApp(ctx context.Context) (*App, bool) {
	app, ok := ctx.Value(appKey{}).(*App)
	return app, ok && app != nil
}
