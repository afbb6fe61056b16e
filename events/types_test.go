package events_test

import (
	"strconv"
	"testing"

	"github.com/stretchr/testify/assert"

	"github.com/waybillhq/waybill/events"
)

// TestTypeNames checks the record names of event types.
func TestTypeNames(t *testing.T) {
	for resource, name := range map[string]string{
		"quotations": "quotation", "branches": "branch", "master_data": "master_data", "tariffs": "tariff",
		"addresses": "address", "companies": "company", "invoices": "invoice", "statuses": "status", "glass": "glass",
	} {
		assert.Equal(t, name, events.TypeName(resource), resource)
	}
	resources := []string{"quotations", "accounts"}
	for s, ok := range map[string]bool{
		"*": true, "quotation.*": true, "quotation.created": true, "quotation.status_changed": true,
		"quotations.created": false, "quotation.": false, "quotation": false, "order.*": false, "quotation.moved": false, "": false, "quotation.created*": false,
	} {
		_, got := events.ParsePattern(s, resources)
		assert.Equal(t, ok, got, strconv.Quote(s))
	}
	assert.True(t, events.Pattern("quotation.*").Matches("quotation.status_changed"))
	assert.False(t, events.Pattern("quotation.*").Matches("account.created"))
	assert.True(t, events.Pattern("*").Matches("account.created"))
}
