package nonce

import (
	"bytes"
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/kubernetes/fake"

	"github.com/federate-dev/kubectl-federate/pkg/kube/kubetest"
)

func TestNewAndParse(t *testing.T) {
	a, err := New(nil)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := New(nil)
	if a == b || len(a) != EncodedLen || EncodedLen < 43 {
		t.Fatalf("nonces %q %q", a, b)
	}
	if _, err := Parse(a); err != nil {
		t.Fatal(err)
	}
	for _, bad := range []string{"", a[:42], a + "A", strings.Repeat("!", EncodedLen), a[:42] + "="} {
		if _, err := Parse(bad); err == nil {
			t.Errorf("Parse(%q) accepted", bad)
		}
	}
}

// Store semantics on a fake clientset (the real-cluster behaviour is covered end to end).
func TestStoreLifecycle(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := Store{Client: kubetest.Fake(), Namespace: "federate-system", Now: func() time.Time { return now }, Rand: bytes.NewReader(bytes.Repeat([]byte{7}, 4*Size))}
	n, created, err := s.Ensure(ctx, "c1", time.Hour)
	if err != nil || !created {
		t.Fatalf("Ensure: %v %v", created, err)
	}
	again, created, err := s.Ensure(ctx, "c1", time.Hour)
	if err != nil || created || again.Value != n.Value {
		t.Fatalf("Ensure kept no existing nonce: %v %v", created, err)
	}
	now = now.Add(2 * time.Hour)
	if _, err := s.Get(ctx, "c1"); !errors.Is(err, ErrExpired) {
		t.Fatalf("expired nonce: %v", err)
	}
	fresh, created, err := s.Ensure(ctx, "c1", time.Hour)
	if err != nil || !created {
		t.Fatalf("Ensure after expiry: %v %v", created, err)
	}
	if err := s.Consume(ctx, fresh, map[string][]byte{"k": []byte("v")}); err != nil {
		t.Fatal(err)
	}
	if _, err := s.Get(ctx, "c1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("consumed nonce: %v", err)
	}
	if rec, err := s.Record(ctx, "c1"); err != nil || string(rec["k"]) != "v" {
		t.Fatalf("record of the used nonce: %v %v", rec, err)
	}
	// A second Consume of the same version is refused by the API server's resourceVersion precondition,
	// which the fake clientset does not enforce: the e2e concurrency tests prove it on real clusters.
	// A new nonce replaces the record; an expired one is pruned, an unexpired one kept.
	if _, created, err := s.Ensure(ctx, "c1", time.Hour); err != nil || !created {
		t.Fatalf("Ensure after use: %v %v", created, err)
	}
	if _, _, err := s.Ensure(ctx, "c2", 3*time.Hour); err != nil {
		t.Fatal(err)
	}
	now = now.Add(2 * time.Hour)
	removed, err := s.PruneExpired(ctx)
	if err != nil || len(removed) != 1 || removed[0] != "c1" {
		t.Fatalf("PruneExpired removed %v (%v), want [c1]", removed, err)
	}
	if _, err := s.Get(ctx, "c2"); err != nil {
		t.Fatalf("unexpired nonce pruned: %v", err)
	}
}

// A consumed nonce can be put back as it was (the issuance issued nothing), but only by the process that
// consumed it.
func TestRestore(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s := Store{Client: kubetest.Fake(), Namespace: "federate-system", Now: func() time.Time { return now }}
	n, _, err := s.Ensure(ctx, "c1", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Restore(ctx, n); err == nil {
		t.Fatal("a nonce that was never consumed was restored")
	}
	if err := s.Consume(ctx, n, map[string][]byte{"k": []byte("v")}); err != nil {
		t.Fatal(err)
	}
	if rec, err := s.Record(ctx, "c1"); err != nil || string(rec["k"]) != "v" {
		t.Fatalf("record: %v %v", rec, err)
	}
	if err := s.Restore(ctx, n); err != nil {
		t.Fatal(err)
	}
	got, err := s.Get(ctx, "c1")
	if err != nil || got.Value != n.Value || !got.ExpiresAt.Equal(n.ExpiresAt) {
		t.Fatalf("restored nonce: %+v %v, want %s until %s", got, err, n.Value, n.ExpiresAt)
	}
	if _, err := s.Record(ctx, "c1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a restored nonce still has a record: %v", err)
	}
}

func FuzzParse(f *testing.F) {
	n, _ := New(nil)
	f.Add(n)
	f.Add("")
	f.Add(strings.Repeat("A", EncodedLen))
	f.Add(Ticket{ProviderID: "gpu-farm", ConsumerID: "edge-1", Nonce: n}.String())
	f.Fuzz(func(t *testing.T, s string) {
		v, err := Parse(s)
		if err == nil && (v != s || len(s) != EncodedLen) {
			t.Fatalf("accepted %q", s)
		}
		// A ticket that parses is exactly the text it was read from: nothing else maps to it.
		if tk, err := ParseTicket(s); err == nil && tk.String() != s {
			t.Fatalf("ParseTicket(%q) = %+v, which prints %q", s, tk, tk.String())
		}
	})
}

// A prepared nonce is stored only by its consumption, in one write: created where there was none,
// replacing exactly the used or expired one found, and refused as used when another writer came first.
func TestPrepareStoresOnConsume(t *testing.T) {
	ctx := context.Background()
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	client := fake.NewClientset()
	s := Store{Client: kubetest.Wrap(client), Namespace: "federate-system", Now: func() time.Time { return now }}
	n, created, err := s.Prepare(ctx, "c1", time.Hour)
	if err != nil || !created {
		t.Fatalf("Prepare: %v %v", created, err)
	}
	if _, err := s.Get(ctx, "c1"); !errors.Is(err, ErrNotFound) {
		t.Fatalf("a prepared nonce is stored before use: %v", err)
	}
	if err := s.Consume(ctx, n, map[string][]byte{"k": []byte("1")}); err != nil {
		t.Fatalf("Consume of a prepared nonce: %v", err)
	}
	if rec, err := s.Record(ctx, "c1"); err != nil || string(rec["k"]) != "1" {
		t.Fatalf("record after consuming a prepared nonce: %v %v", rec, err)
	}
	// Over the used one: replaced by the next consumption.
	again, created, err := s.Prepare(ctx, "c1", time.Hour)
	if err != nil || !created || again.Value == n.Value {
		t.Fatalf("Prepare over a used nonce: %v %v", created, err)
	}
	if err := s.Consume(ctx, again, map[string][]byte{"k": []byte("2")}); err != nil {
		t.Fatalf("Consume over a used nonce: %v", err)
	}
	// A stored unused nonce is returned as it is, not replaced.
	stored, _, err := s.Ensure(ctx, "c2", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	found, created, err := s.Prepare(ctx, "c2", time.Hour)
	if err != nil || created || found.Value != stored.Value {
		t.Fatalf("Prepare with an unused nonce stored: %v %v", created, err)
	}
	// Another writer between Prepare and Consume: refused as used, its Secret untouched.
	late, created, err := s.Prepare(ctx, "c3", time.Hour)
	if err != nil || !created {
		t.Fatal(err)
	}
	other, _, err := s.Ensure(ctx, "c3", time.Hour)
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Consume(ctx, late, nil); !errors.Is(err, ErrUsed) {
		t.Fatalf("Consume after another writer: %v, want ErrUsed", err)
	}
	if got, err := s.Get(ctx, "c3"); err != nil || got.Value != other.Value {
		t.Fatalf("the other writer's nonce after a refused consumption: %v", err)
	}
}
