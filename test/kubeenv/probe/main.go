// Command probe is the one program in the local node's images: a static binary with no shell, no DNS and
// no libc, small enough to build into an OCI image on every machine (no registry is reachable).
//
//	probe serve [ADDR]       answer HTTP on ADDR (default :8080, both families) with "probe <hostname>",
//	                         and log each request on stdout
//	probe get URL [TIMEOUT]  GET URL (an IP address, never a name) within TIMEOUT (default 3s); print the
//	                         body and exit 0, or print why and exit 1 (2 when the time ran out)
//	probe echo WORDS...      print WORDS and exit 0 (a Job's or CronJob's work)
//	probe cat                copy stdin to stdout, line by line, until stdin ends (an open exec session)
//	probe pause              sleep until SIGTERM or SIGINT (also when run as "pause": the pod sandbox image)
//	probe chroot DIR PROG... run PROG (a path inside DIR) with DIR as its root: how the node's NetworkPolicy
//	                         engine, a privileged DaemonSet with the host's / at DIR, runs the host's
//	                         kube-router with the host's iptables and ipset
package main

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

func main() {
	args := os.Args[1:]
	if filepath.Base(os.Args[0]) == "pause" {
		args = []string{"pause"}
	}
	if len(args) == 0 {
		args = []string{"serve"}
	}
	os.Exit(run(args))
}

func run(args []string) int {
	switch args[0] {
	case "serve":
		addr := ":8080"
		if len(args) > 1 {
			addr = args[1]
		}
		return serve(addr)
	case "get":
		if len(args) < 2 {
			fmt.Fprintln(os.Stderr, "usage: probe get URL [TIMEOUT]")
			return 1
		}
		timeout := 3 * time.Second
		if len(args) > 2 {
			d, err := time.ParseDuration(args[2])
			if err != nil {
				fmt.Fprintln(os.Stderr, "probe: TIMEOUT:", err)
				return 1
			}
			timeout = d
		}
		return get(args[1], timeout)
	case "echo":
		fmt.Println(strings.Join(args[1:], " "))
		return 0
	case "cat":
		in := bufio.NewScanner(os.Stdin)
		for in.Scan() {
			fmt.Println(in.Text())
		}
		return 0
	case "chroot":
		if len(args) < 3 {
			fmt.Fprintln(os.Stderr, "usage: probe chroot DIR PROGRAM [ARGS...]")
			return 1
		}
		if err := syscall.Chroot(args[1]); err != nil {
			fmt.Fprintln(os.Stderr, "probe: chroot:", err)
			return 1
		}
		if err := os.Chdir("/"); err != nil {
			fmt.Fprintln(os.Stderr, "probe:", err)
			return 1
		}
		err := syscall.Exec(args[2], args[2:], os.Environ())
		fmt.Fprintln(os.Stderr, "probe: exec:", err)
		return 1
	case "pause":
		ch := make(chan os.Signal, 1)
		signal.Notify(ch, syscall.SIGTERM, syscall.SIGINT)
		<-ch
		return 0
	}
	fmt.Fprintf(os.Stderr, "probe: unknown command %q (serve, get, echo, cat, pause, chroot)\n", args[0])
	return 1
}

func serve(addr string) int {
	host, _ := os.Hostname()
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		fmt.Printf("probe: %s %s from %s\n", r.Method, r.URL.Path, r.RemoteAddr)
		fmt.Fprintf(w, "probe %s\n", host)
	})
	srv := &http.Server{Addr: addr, Handler: mux, ReadHeaderTimeout: 5 * time.Second}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	go func() {
		<-ctx.Done()
		_ = srv.Close()
	}()
	fmt.Printf("probe: serving on %s\n", addr)
	if err := srv.ListenAndServe(); err != nil && !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(os.Stderr, "probe:", err)
		return 1
	}
	return 0
}

func get(url string, timeout time.Duration) int {
	ctx, cancel := context.WithTimeout(context.Background(), timeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "probe:", err)
		return 1
	}
	// No proxy and no name resolution: the request goes to the address in the URL or nowhere.
	client := &http.Client{Transport: &http.Transport{Proxy: nil, DialContext: (&net.Dialer{}).DialContext}}
	resp, err := client.Do(req)
	if err != nil {
		if errors.Is(err, context.DeadlineExceeded) {
			fmt.Fprintf(os.Stderr, "probe: no answer from %s within %s\n", url, timeout)
			return 2
		}
		fmt.Fprintln(os.Stderr, "probe:", err)
		return 1
	}
	defer resp.Body.Close()
	body, _ := io.ReadAll(io.LimitReader(resp.Body, 1<<16))
	fmt.Print(string(body))
	if resp.StatusCode != http.StatusOK {
		fmt.Fprintf(os.Stderr, "probe: %s answered %s\n", url, resp.Status)
		return 1
	}
	return 0
}
