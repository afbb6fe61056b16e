package main

import (
	"flag"
	"fmt"
	"io"
	"net/http"
	"strings"

	"github.com/waybillhq/waybill/resource"
)

// openAPIInfo describes the reference API for its OpenAPI document, served
// under issuer.
func openAPIInfo(issuer string) resource.OpenAPIInfo {
	return resource.OpenAPIInfo{
		Title:   "Waybill transport management API",
		Version: "v1",
		Description: "The API of Waybill's reference server: accounts, orders, quotations, shipments, trips, " +
			"vehicles, invoices, pricing and the organization's reference data, per organization and branch, " +
			"behind OAuth 2.1.",
		ServerURL: strings.TrimSuffix(issuer, "/"),
	}
}

// mountOpenAPI serves the OpenAPI document of api at /v1/openapi.json and
// its /api/v1 alias.
func mountOpenAPI(mux *http.ServeMux, api *resource.Registry, issuer string) {
	h := api.OpenAPIHandler(openAPIInfo(issuer))
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
	api := &resource.Registry{}
	if err := api.Register(resources()...); err != nil {
		return fmt.Errorf("openapi: %w", err)
	}
	doc, err := api.OpenAPI(openAPIInfo(*issuer))
	if err != nil {
		return fmt.Errorf("openapi: %w", err)
	}
	_, err = stdout.Write(append(doc, '\n'))
	return err
}
