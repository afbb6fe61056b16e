package main

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"

	apierrors "github.com/waybillhq/waybill/errors"
	"github.com/waybillhq/waybill/oauth"
	"github.com/waybillhq/waybill/openapi"
	"github.com/waybillhq/waybill/resource"
)

// openAPIInfo describes the reference API for its OpenAPI document, served
// under the issuer of tokens, whose endpoints it describes too: those of
// the token service (tokens.OpenAPI) and the product's other token paths.
func openAPIInfo(tokens *oauth.Server, api *resource.Registry) (resource.OpenAPIInfo, error) {
	section := tokens.OpenAPI()
	for _, alias := range []struct{ path, id, summary string }{
		{pathEdgeToken, "requestEdgeFunctionToken", "Request a client-credentials token (edge function path)"},
		{pathV1Token, "requestV1Token", "Request a client-credentials token (/v1 path)"},
	} {
		if err := section.AddPath(alias.path, tokens.OpenAPIClientCredentials(alias.id, alias.summary)); err != nil {
			return resource.OpenAPIInfo{}, err
		}
	}
	return resource.OpenAPIInfo{
		Title:   "Waybill transport management API",
		Version: "v1",
		Description: "The API of Waybill's reference server: accounts, orders, quotations, shipments, trips, " +
			"vehicles, invoices, pricing and the organization's reference data, per organization and branch, " +
			"behind OAuth 2.1.",
		ServerURL: strings.TrimSuffix(tokens.Issuer, "/"),
		Sections:  []*openapi.Document{section, newFeed(api).OpenAPI(), newWebhookAPI(api, nil, false).OpenAPI()},
	}, nil
}

// mountOpenAPI serves the OpenAPI document of api and tokens at
// /v1/openapi.json and its /api/v1 alias. A document that cannot be built
// is answered 500, as resource.Registry.OpenAPIHandler answers one (the
// openapi command and its test report why).
func mountOpenAPI(mux *http.ServeMux, api *resource.Registry, tokens *oauth.Server) {
	var h http.Handler
	if info, err := openAPIInfo(tokens, api); err != nil {
		h = http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { apierrors.Write(w, r, apierrors.Internal(err)) })
	} else {
		h = api.OpenAPIHandler(info)
	}
	mux.Handle("/v1/openapi.json", h)
	mux.Handle("/api/v1/openapi.json", h)
}

// runOpenAPI is the openapi command: it prints the OpenAPI 3.1 document of
// the API, the one serve answers at /v1/openapi.json. It needs no database.
func runOpenAPI(args []string, getenv func(string) string, stdout io.Writer) error {
	fs := flag.NewFlagSet("openapi", flag.ContinueOnError)
	issuer := fs.String("issuer", "http://127.0.0.1:8080", "issuer `URL`, the document's server")
	if err := parseFlags(fs, args, getenv, stdout); err != nil {
		if err == flag.ErrHelp {
			return nil
		}
		return err
	}
	// The registry as newAPI sets it up, without a database: what the
	// document depends on is its resources and that it keeps history.
	api := &resource.Registry{History: &resource.SQLHistory{}}
	if err := api.Register(resources()...); err != nil {
		return fmt.Errorf("openapi: %w", err)
	}
	// The token service as serve sets it up (newOAuthServer), without what
	// the document does not depend on: keys, store, directory.
	tokens := &oauth.Server{Issuer: *issuer, ScopesSupported: knownScopes()}
	info, err := openAPIInfo(tokens, api)
	if err != nil {
		return fmt.Errorf("openapi: %w", err)
	}
	doc, err := api.OpenAPI(info)
	if err != nil {
		return fmt.Errorf("openapi: %w", err)
	}
	_, err = stdout.Write(append(doc, '\n'))
	return err
}
