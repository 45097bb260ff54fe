// Package e2e runs kubectl federate and its packages against real local control planes: two clusters,
// consumer and provider, started once for this test binary and shared by its tests.
package e2e

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/federate-dev/kubectl-federate/test/kubeenv"
)

var consumer, provider *kubeenv.Cluster

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "federate-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	start := time.Now()
	clusters, err := kubeenv.Start(ctx, kubeenv.Options{Dir: dir, Names: []string{"consumer", "provider"}, Log: os.Stderr})
	if err != nil {
		fmt.Fprintln(os.Stderr, "starting clusters:", err)
		return 1
	}
	defer func() {
		for _, c := range clusters {
			c.Stop()
		}
	}()
	fmt.Fprintf(os.Stderr, "e2e: consumer and provider ready in %s\n", time.Since(start).Round(10*time.Millisecond))
	consumer, provider = clusters[0], clusters[1]
	return m.Run()
}
