// Command kubeenv drives the local control planes of test/kubeenv from the Makefile.
//
//	kubeenv build [--node NAME]                     build (or find cached) binaries, print their directory
//	                                                (with --node, the node's binaries too)
//	kubeenv run  --dir D --clusters a,b -- CMD ...  start clusters, run CMD with their kubeconfigs in the
//	                                                environment (<NAME>_KUBECONFIG), stop them, exit as CMD
//	kubeenv up   --dir D --clusters a,b             start clusters that outlive this process
//	kubeenv down --dir D                            stop clusters started by up
//
// run and up take --node NAME: that cluster gets a real node (kubelet, containerd, the bridge CNI and
// kube-router's NetworkPolicy firewall; --network-policy=false leaves it out), Linux and root only.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/federate-dev/kubectl-federate/test/kubeenv"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	code, err := run(ctx, os.Args[1:])
	if err != nil {
		fmt.Fprintln(os.Stderr, "kubeenv: error:", err)
		if code == 0 {
			code = 1
		}
	}
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string) (int, error) {
	if len(args) == 0 {
		return 2, errors.New("usage: kubeenv build|run|up|down [flags]")
	}
	fs := flag.NewFlagSet(args[0], flag.ContinueOnError)
	dir := fs.String("dir", "", "directory for the clusters' files")
	names := fs.String("clusters", "consumer,provider", "comma-separated cluster names")
	nodeFor := fs.String("node", "", "the cluster that gets a real node (Linux and root)")
	netpol := fs.Bool("network-policy", true, "run kube-router's NetworkPolicy firewall on the node")
	if err := fs.Parse(args[1:]); err != nil {
		return 2, err
	}
	switch args[0] {
	case "build":
		bins, err := kubeenv.EnsureBinaries(ctx, os.Stderr)
		if err != nil {
			return 1, err
		}
		if *nodeFor != "" { // the node's binaries too, after the control plane's, whose packages they share
			if _, err := kubeenv.EnsureNodeBinaries(ctx, os.Stderr); err != nil {
				return 1, err
			}
		}
		fmt.Println(bins.Dir())
		return 0, nil
	case "down":
		if *dir == "" {
			return 2, errors.New("--dir is required")
		}
		return 0, kubeenv.Down(*dir)
	case "up", "run":
	default:
		return 2, fmt.Errorf("unknown subcommand %q", args[0])
	}
	if *dir == "" {
		if args[0] == "up" {
			return 2, errors.New("up needs --dir, to find the clusters again for down")
		}
		d, err := os.MkdirTemp("", "kubeenv-")
		if err != nil {
			return 1, err
		}
		defer os.RemoveAll(d)
		*dir = d
	}
	abs, err := filepath.Abs(*dir)
	if err != nil {
		return 1, err
	}
	start := time.Now()
	clusters, err := kubeenv.Start(ctx, kubeenv.Options{
		Dir: abs, Names: strings.Split(*names, ","), Detached: args[0] == "up", Log: os.Stderr,
	})
	if err != nil {
		return 1, err
	}
	fmt.Fprintf(os.Stderr, "kubeenv: %d clusters ready in %s\n", len(clusters), time.Since(start).Round(10*time.Millisecond))
	stopAll := func() {
		for _, c := range clusters {
			c.Stop()
		}
	}
	if *nodeFor != "" {
		if err := startNode(ctx, clusters, *nodeFor, *netpol); err != nil {
			stopAll()
			return 1, err
		}
	}
	bins, err := kubeenv.EnsureBinaries(ctx, os.Stderr) // cached by now
	if err != nil {
		return 1, err
	}
	env := append(os.Environ(), "KUBEENV_DIR="+abs, "KUBEENV_BIN="+bins.Dir(), "KUBEENV_PROBE_IMAGE="+kubeenv.ProbeImage)
	for _, c := range clusters {
		env = append(env, strings.ToUpper(c.Name)+"_KUBECONFIG="+c.Kubeconfig)
		fmt.Fprintf(os.Stderr, "kubeenv: %s at %s, kubeconfig %s\n", c.Name, c.Server, c.Kubeconfig)
	}
	if args[0] == "up" {
		for _, c := range clusters {
			fmt.Printf("export %s_KUBECONFIG=%s\n", strings.ToUpper(c.Name), c.Kubeconfig)
		}
		fmt.Printf("export KUBEENV_DIR=%s KUBEENV_BIN=%s KUBEENV_PROBE_IMAGE=%s\n", abs, bins.Dir(), kubeenv.ProbeImage)
		fmt.Printf("export PATH=%s:$PATH\n", bins.Dir())
		return 0, nil
	}
	defer stopAll()
	if fs.NArg() == 0 {
		return 2, errors.New("run needs a command after --")
	}
	cmd := exec.CommandContext(ctx, fs.Arg(0), fs.Args()[1:]...)
	cmd.Env = env
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	cmd.Cancel = func() error { return cmd.Process.Signal(os.Interrupt) }
	cmd.WaitDelay = 10 * time.Second
	err = cmd.Run()
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return exit.ExitCode(), nil
	}
	return 0, err
}

func startNode(ctx context.Context, clusters []*kubeenv.Cluster, name string, netpol bool) error {
	for _, c := range clusters {
		if c.Name != name {
			continue
		}
		start := time.Now()
		n, err := c.StartNode(ctx, kubeenv.NodeOptions{NetworkPolicy: netpol, Log: os.Stderr})
		if err != nil {
			return fmt.Errorf("starting a node for %s: %w", name, err)
		}
		engine := "kube-router's firewall enforces NetworkPolicy"
		if !netpol {
			engine = "no NetworkPolicy engine"
		}
		fmt.Fprintf(os.Stderr, "kubeenv: node %s Ready in %s (%s)\n", n.Name, time.Since(start).Round(10*time.Millisecond), engine)
		return nil
	}
	return fmt.Errorf("--node %s: no such cluster (--clusters)", name)
}
