package main

import (
	"io"
	"net"
	"net/url"
	"path/filepath"
	"sync"
	"time"

	"k8s.io/client-go/tools/clientcmd"

	"github.com/federate-dev/kubectl-federate/test/kubeenv"
)

// oneWay is the latency the slow link adds in each direction: a 50 ms round trip.
const oneWay = 25 * time.Millisecond

// proxied returns a kubeconfig for c that goes through a local TCP proxy adding delay in each direction.
// The same proxy with no delay is the baseline: what the proxy itself costs is then in both measurements,
// so their difference is the network's share alone.
func (b *bench) proxied(c *kubeenv.Cluster, delay time.Duration) (string, error) {
	u, err := url.Parse(c.Server)
	if err != nil {
		return "", err
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return "", err
	}
	b.closers = append(b.closers, l.Close)
	go func() {
		for {
			in, err := l.Accept()
			if err != nil {
				return
			}
			go func() {
				defer func() { _ = in.Close() }()
				up, err := net.Dial("tcp", u.Host)
				if err != nil {
					return
				}
				defer func() { _ = up.Close() }()
				var wg sync.WaitGroup
				wg.Add(2)
				go func() { defer wg.Done(); delayCopy(up, in, delay) }()
				go func() { defer wg.Done(); delayCopy(in, up, delay) }()
				wg.Wait()
			}()
		}
	}()
	cfg, err := clientcmd.LoadFromFile(c.Kubeconfig)
	if err != nil {
		return "", err
	}
	for _, cl := range cfg.Clusters {
		cl.Server = "https://" + l.Addr().String()
	}
	path := filepath.Join(b.dir, c.Name+"-"+delay.String()+".kubeconfig")
	return path, clientcmd.WriteToFile(*cfg, path)
}

// delayCopy copies src to dst, each chunk delay after it was read: a constant latency that does not
// slow a stream down (a delay line, not a sleep per chunk).
func delayCopy(dst io.WriteCloser, src io.Reader, delay time.Duration) {
	type chunk struct {
		data []byte
		at   time.Time
	}
	ch := make(chan chunk, 1024)
	go func() {
		defer close(ch)
		buf := make([]byte, 32<<10)
		for {
			n, err := src.Read(buf)
			if n > 0 {
				ch <- chunk{append([]byte(nil), buf[:n]...), time.Now().Add(delay)}
			}
			if err != nil {
				return
			}
		}
	}()
	for c := range ch {
		if d := time.Until(c.at); d > 0 {
			time.Sleep(d)
		}
		if _, err := dst.Write(c.data); err != nil {
			break
		}
	}
	if tc, ok := dst.(*net.TCPConn); ok {
		_ = tc.CloseWrite()
	}
}
