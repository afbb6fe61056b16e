package redislimit

import "testing"

// The hash slots of Redis Cluster's specification and of its CLUSTER
// KEYSLOT.
func TestSlot(t *testing.T) {
	tests := []struct {
		key  string
		want uint16
	}{
		{"123456789", 0x31C3},
		{"foo", 12182},
		{"{user1000}.following", slot("user1000")},
		{"foo{}{bar}", slot("foo{}{bar}")},
		{"foo{{bar}}zap", slot("{bar")},
		{"foo{bar}{zap}", slot("bar")},
		{"", 0},
	}
	for _, tt := range tests {
		if got := slot(tt.key); got != tt.want {
			t.Errorf("slot(%q) = %d, want %d", tt.key, got, tt.want)
		}
	}
	groups := slotGroups([]string{"a{x}", "b", "c{x}", "b"})
	if len(groups) != 2 || len(groups[0]) != 2 || groups[0][1] != 2 || len(groups[1]) != 2 || groups[1][1] != 3 {
		t.Errorf("slotGroups = %v", groups)
	}
}
