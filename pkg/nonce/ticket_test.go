package nonce

import (
	"errors"
	"strings"
	"testing"
)

// A ticket carries both cluster IDs beside the nonce; any edit of an ID shows, a bare nonce still reads.
func TestTicket(t *testing.T) {
	n, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	tk := Ticket{ProviderID: "gpu-farm", ConsumerID: "edge-1", Nonce: n}
	text := tk.String()
	if !strings.HasPrefix(text, "federate-nonce.v1.gpu-farm.edge-1."+n+".") || strings.ContainsAny(text, " \n") {
		t.Fatalf("ticket text %q", text)
	}
	got, err := ParseTicket(text)
	if err != nil || got != tk || got.Bare() {
		t.Fatalf("ParseTicket(%q) = %+v, %v", text, got, err)
	}

	// Changing an ID, moving the boundary between them, or swapping them shows.
	for _, edited := range []string{
		strings.Replace(text, "edge-1", "edge-2", 1),
		strings.Replace(text, "gpu-farm", "gpu-farn", 1),
		strings.Replace(text, "gpu-farm.edge-1", "edge-1.gpu-farm", 1),
	} {
		if _, err := ParseTicket(edited); !errors.Is(err, ErrTicketChanged) {
			t.Errorf("ParseTicket(%q): %v, want ErrTicketChanged", edited, err)
		}
	}
	// A MAC for another nonce does not verify.
	other, _ := New(nil)
	if _, err := ParseTicket(strings.Replace(text, n, other, 1)); !errors.Is(err, ErrTicketChanged) {
		t.Errorf("a ticket with another nonce: %v", err)
	}

	bare, err := ParseTicket(n)
	if err != nil || !bare.Bare() || bare.Nonce != n || bare.String() != n {
		t.Fatalf("a bare nonce: %+v, %v", bare, err)
	}
	for _, tc := range []struct{ in, want string }{
		{"federate-nonce.v2.a.b." + n + ".x", "unknown version"},
		{"federate-nonce.v1.a.b." + n, "want federate-nonce.v1.PROVIDER.CONSUMER.NONCE.MAC"},
		{"federate-nonce.v1.A.b." + n + ".x", `provider cluster ID "A" is not a DNS label`},
		{"federate-nonce.v1.a.b.short.x", "nonce must be 43 characters"},
		{"abc", "not a nonce: want the one line kubectl federate get nonce prints (federate-nonce.v1.PROVIDER.CONSUMER.NONCE.MAC), got 3 characters"},
		{"nonce/edge-1 created (expires 2026-11-27T04:23:42Z)", "is create nonce's result line, not the nonce"},
	} {
		if _, err := ParseTicket(tc.in); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseTicket(%q): %v, want %q", tc.in, err, tc.want)
		}
	}
}
