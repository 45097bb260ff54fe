package kubeenv

import (
	"context"
	"crypto/x509"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"
)

// Cluster is one running local control plane.
type Cluster struct {
	Name       string
	Dir        string       // everything of this cluster: certificates, etcd data, logs, kubeconfig
	Server     string       // https://127.0.0.1:<port>
	Kubeconfig string       // admin (system:masters) kubeconfig path
	CAFile     string       // the cluster CA, which also signs kube-apiserver-client CSRs
	Config     *rest.Config // admin REST config
	// Issuer is the issuer of the cluster's ServiceAccount tokens (--service-account-issuer): its own API
	// server URL with IssuerAtServer, else one every cluster of this harness shares.
	Issuer string
	// AuthenticationConfigFile is the structured authentication configuration the API server reads and
	// reloads (--authentication-config), with Options.AuthenticationConfig; WriteAuthenticationConfig
	// replaces it.
	AuthenticationConfigFile string

	procs    []*proc
	detached bool
	node     *Node // started by StartNode
}

type proc struct {
	name string
	cmd  *exec.Cmd
	log  string
	done chan struct{}
	err  error
}

// Options configure Start.
type Options struct {
	Dir      string    // parent directory; each cluster gets Dir/<name>
	Names    []string  // one cluster per name
	Detached bool      // leave the processes running after this process exits (KEEP=1); stop them with Down
	Log      io.Writer // progress lines; nil discards
	// APIServerArgs and ControllerManagerArgs are appended to the defaults; a flag given again overrides
	// its default (for example --controllers without the CSR signer, to stand in for EKS).
	APIServerArgs         []string
	ControllerManagerArgs []string
	// IssuerAtServer makes each cluster's ServiceAccount token issuer its own API server URL (https, on
	// loopback, with the cluster's CA), with its discovery document and keys there too: a cluster whose
	// tokens another cluster's API server can verify, as a consumer of a federated pairing is.
	IssuerAtServer bool
	// AuthenticationConfig makes each API server read a structured authentication configuration
	// (--authentication-config) from Cluster.AuthenticationConfigFile, which starts with no JWT
	// authenticator: a provider whose administrator installs authenticator entries.
	AuthenticationConfig bool
}

// SharedIssuer is the ServiceAccount token issuer of a cluster started without IssuerAtServer.
const SharedIssuer = "https://kubernetes.default.svc"

// WithoutClientSigner is the kube-controller-manager flag of a cluster that never signs
// kubernetes.io/kube-apiserver-client CSRs, as EKS does not: approved CSRs stay without a certificate.
const WithoutClientSigner = "--controllers=*,-certificatesigningrequest-signing-controller"

// Start builds the binaries if needed and starts one control plane per name, in parallel. On any failure
// everything already started is stopped and the error carries the tail of the failing component's log.
func Start(ctx context.Context, o Options) ([]*Cluster, error) {
	if o.Log == nil {
		o.Log = io.Discard
	}
	bins, err := EnsureBinaries(ctx, o.Log)
	if err != nil {
		return nil, err
	}
	clusters := make([]*Cluster, len(o.Names))
	errs := make([]error, len(o.Names))
	var wg sync.WaitGroup
	for i, name := range o.Names {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// The ports are picked free, then bound by another process: another test binary may take one
			// in between. Such a start is retried with new ports, in a fresh directory.
			for attempt := 0; ; attempt++ {
				dir := filepath.Join(o.Dir, name)
				if attempt > 0 {
					dir = filepath.Join(o.Dir, fmt.Sprintf("%s-%d", name, attempt))
				}
				clusters[i], errs[i] = startOne(ctx, bins, dir, name, o)
				if errs[i] == nil || attempt == 2 || !strings.Contains(errs[i].Error(), "address already in use") {
					break
				}
			}
		}()
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		for _, c := range clusters {
			if c != nil {
				c.Stop()
			}
		}
		return nil, err
	}
	return clusters, nil
}

func startOne(ctx context.Context, bins Binaries, dir, name string, o Options) (c *Cluster, err error) {
	detached := o.Detached
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, err
	}
	p, err := newPKI(name)
	if err != nil {
		return nil, err
	}
	if err := p.writeFiles(dir, name); err != nil {
		return nil, err
	}
	ports, err := freePorts(3)
	if err != nil {
		return nil, err
	}
	etcdPort, peerPort, apiPort := ports[0], ports[1], ports[2]
	c = &Cluster{
		detached:   detached,
		Name:       name,
		Dir:        dir,
		Server:     "https://127.0.0.1:" + strconv.Itoa(apiPort),
		Kubeconfig: filepath.Join(dir, "admin.kubeconfig"),
		CAFile:     filepath.Join(dir, "ca.crt"),
		Issuer:     SharedIssuer,
	}
	defer func() {
		if err != nil {
			c.Stop()
			c = nil
		}
	}()
	f := func(n string) string { return filepath.Join(dir, n) }
	if err := c.writeKubeconfig(); err != nil {
		return c, err
	}
	etcdURL := "http://127.0.0.1:" + strconv.Itoa(etcdPort)
	peerURL := "http://127.0.0.1:" + strconv.Itoa(peerPort)
	etcd, err := c.spawn("etcd", detached, bins.Etcd,
		"--name=default", "--data-dir="+f("etcd"),
		"--listen-client-urls="+etcdURL, "--advertise-client-urls="+etcdURL,
		"--listen-peer-urls="+peerURL, "--initial-advertise-peer-urls="+peerURL,
		"--initial-cluster=default="+peerURL, "--unsafe-no-fsync", "--log-level=warn")
	if err != nil {
		return c, err
	}
	apiArgs, err := c.authenticationArgs(o)
	if err != nil {
		return c, err
	}
	api, err := c.spawn("kube-apiserver", detached, bins.APIServer, append(append(apiArgs,
		"--etcd-servers="+etcdURL,
		"--bind-address=127.0.0.1", "--advertise-address=127.0.0.1", "--secure-port="+strconv.Itoa(apiPort),
		"--tls-cert-file="+f("serving.crt"), "--tls-private-key-file="+f("serving.key"),
		"--client-ca-file="+f("ca.crt"), "--cert-dir="+f("apiserver-certs"),
		"--service-account-key-file="+f("sa.pub"), "--service-account-signing-key-file="+f("sa.key"),
		"--authorization-mode=Node,RBAC", "--service-cluster-ip-range=10.0.0.0/24",
		// how it calls a node's kubelet (exec, attach, port-forward, logs), when the cluster has one
		"--kubelet-client-certificate="+f("kubelet-client.crt"), "--kubelet-client-key="+f("kubelet-client.key"),
		"--kubelet-preferred-address-types=InternalIP",
		// as real clusters do: Pod Security, not the API server's validation, is what refuses a tenant's
		// privileged pod
		"--allow-privileged=true",
		"--shutdown-delay-duration=0s", "--profiling=false", "--endpoint-reconciler-type=none"), o.APIServerArgs...)...)
	if err != nil {
		return c, err
	}
	if err := c.waitReady(ctx, api, etcd); err != nil {
		return c, err
	}
	kcm, err := c.spawn("kube-controller-manager", detached, bins.ControllerManager, append([]string{
		"--kubeconfig=" + c.Kubeconfig, "--authentication-kubeconfig=" + c.Kubeconfig,
		"--authorization-kubeconfig=" + c.Kubeconfig,
		"--cluster-signing-cert-file=" + f("ca.crt"), "--cluster-signing-key-file=" + f("ca.key"),
		"--root-ca-file=" + f("ca.crt"), "--service-account-private-key-file=" + f("sa.key"),
		"--use-service-account-credentials", "--leader-elect=false", "--secure-port=0",
		"--kube-api-qps=500", "--kube-api-burst=1000", // the namespace controller lists every resource type
		// The node lifecycle controller lifts the not-ready taint a kubelet registers its Node with (see
		// StartNode); the node IPAM controller gives a Node its pod ranges (spec.podCIDRs), as kubeadm's
		// clusters have them, from which the sandbox learns what its pods may not reach: the first node gets
		// the first /24 and /64, which are the node's bridge ranges (PodCIDRv4, PodCIDRv6). With no node
		// both have nothing to do.
		"--controllers=*", "--allocate-node-cidrs=true", "--cluster-cidr=" + ClusterCIDRv4 + "," + ClusterCIDRv6,
		"--node-cidr-mask-size-ipv4=24", "--node-cidr-mask-size-ipv6=64"}, o.ControllerManagerArgs...)...)
	if err != nil {
		return c, err
	}
	if err := c.waitControllers(ctx, kcm); err != nil {
		return c, err
	}
	return c, c.writeState()
}

func (c *Cluster) writeKubeconfig() error {
	read := func(n string) ([]byte, error) { return os.ReadFile(filepath.Join(c.Dir, n)) }
	ca, err := read("ca.crt")
	if err != nil {
		return err
	}
	cert, err := read("admin.crt")
	if err != nil {
		return err
	}
	key, err := read("admin.key")
	if err != nil {
		return err
	}
	cfg := clientcmdapi.NewConfig()
	cfg.Clusters[c.Name] = &clientcmdapi.Cluster{Server: c.Server, CertificateAuthorityData: ca}
	cfg.AuthInfos[c.Name+"-admin"] = &clientcmdapi.AuthInfo{ClientCertificateData: cert, ClientKeyData: key}
	cfg.Contexts[c.Name] = &clientcmdapi.Context{Cluster: c.Name, AuthInfo: c.Name + "-admin", Namespace: "default"}
	cfg.CurrentContext = c.Name
	if err := clientcmd.WriteToFile(*cfg, c.Kubeconfig); err != nil {
		return err
	}
	c.Config = &rest.Config{
		Host:            c.Server,
		TLSClientConfig: rest.TLSClientConfig{CAData: ca, CertData: cert, KeyData: key},
		QPS:             -1,
	}
	return nil
}

func (c *Cluster) spawn(name string, detached bool, bin string, args ...string) (*proc, error) {
	p, err := spawnProc(c.Dir, c.Name, name, detached, nil, bin, args...)
	if err != nil {
		return nil, err
	}
	c.procs = append(c.procs, p)
	return p, nil
}

// spawnProc starts one program in dir, its output in dir/<name>.log, env added to the environment.
func spawnProc(dir, cluster, name string, detached bool, env []string, bin string, args ...string) (*proc, error) {
	logPath := filepath.Join(dir, name+".log")
	logFile, err := os.Create(logPath)
	if err != nil {
		return nil, err
	}
	defer logFile.Close()
	cmd := exec.Command(bin, args...)
	cmd.Stdout = logFile
	cmd.Stderr = logFile
	cmd.Dir = dir
	if env != nil {
		cmd.Env = append(os.Environ(), env...)
	}
	cmd.SysProcAttr = procAttr(detached)
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("cluster %s: start %s: %w", cluster, name, err)
	}
	p := &proc{name: name, cmd: cmd, log: logPath, done: make(chan struct{})}
	go func() { p.err = cmd.Wait(); close(p.done) }()
	return p, nil
}

// failed describes a component that died or did not get ready, with the tail of its log.
func (c *Cluster) failed(p *proc, what string) error {
	data, _ := os.ReadFile(p.log)
	return fmt.Errorf("cluster %s: %s %s; last lines of %s:\n%s", c.Name, p.name, what, p.log, tail(string(data), 25))
}

// waitReady polls /readyz (the apiserver offers nothing to watch before it is up) every 100ms.
func (c *Cluster) waitReady(ctx context.Context, api, etcd *proc) error {
	tlsCfg, err := rest.TLSConfigFor(c.Config)
	if err != nil {
		return err
	}
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: tlsCfg}, Timeout: 2 * time.Second}
	defer client.CloseIdleConnections()
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	tick := time.NewTicker(100 * time.Millisecond)
	defer tick.Stop()
	for {
		req, _ := http.NewRequestWithContext(ctx, http.MethodGet, c.Server+"/readyz", nil)
		if resp, err := client.Do(req); err == nil {
			_, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return nil
			}
		}
		select {
		case <-api.done:
			return c.failed(api, "exited")
		case <-etcd.done:
			return c.failed(etcd, "exited")
		case <-ctx.Done():
			return c.failed(api, "did not become ready in 90s")
		case <-tick.C:
		}
	}
}

// waitControllers watches for the default ServiceAccount, which the controller-manager creates once its
// controllers run.
func (c *Cluster) waitControllers(ctx context.Context, kcm *proc) error {
	cs, err := kubernetes.NewForConfig(c.Config)
	if err != nil {
		return err
	}
	ctx, cancel := context.WithTimeout(ctx, 90*time.Second)
	defer cancel()
	sel := fields.OneTermEqualSelector("metadata.name", "default").String()
	list, err := cs.CoreV1().ServiceAccounts("default").List(ctx, metav1.ListOptions{FieldSelector: sel})
	if err != nil {
		return err
	}
	if len(list.Items) > 0 {
		return nil
	}
	w, err := cs.CoreV1().ServiceAccounts("default").Watch(ctx, metav1.ListOptions{FieldSelector: sel, ResourceVersion: list.ResourceVersion})
	if err != nil {
		return err
	}
	defer w.Stop()
	for {
		select {
		case ev, ok := <-w.ResultChan():
			if !ok {
				return c.failed(kcm, "watch closed before controllers started")
			}
			if ev.Type == watch.Added {
				if _, ok := ev.Object.(*corev1.ServiceAccount); ok {
					return nil
				}
			}
		case <-kcm.done:
			return c.failed(kcm, "exited")
		case <-ctx.Done():
			return c.failed(kcm, "did not start its controllers in 90s")
		}
	}
}

// Stop terminates the cluster's processes (its node first, if it has one, then controller-manager and
// apiserver, etcd last) and waits for them; anything still alive after 5 s is killed. Safe to call more
// than once.
func (c *Cluster) Stop() {
	if c.node != nil {
		c.node.Stop()
	}
	for i := len(c.procs) - 1; i >= 0; i-- {
		stopProc(c.procs[i])
	}
	c.procs = nil
	_ = os.Remove(filepath.Join(c.Dir, "pids"))
}

// writeState records the process group IDs so Down can stop a detached cluster.
func (c *Cluster) writeState() error {
	var b strings.Builder
	procs := c.procs
	if c.node != nil {
		procs = append(procs[:len(procs):len(procs)], c.node.procs...)
	}
	for _, p := range procs {
		if p != nil {
			fmt.Fprintf(&b, "%d %s\n", p.cmd.Process.Pid, p.name)
		}
	}
	return os.WriteFile(filepath.Join(c.Dir, "pids"), []byte(b.String()), 0o600)
}

// Down stops the detached clusters below dir (as left by Start with Detached) and waits until their
// processes are gone.
func Down(dir string) error {
	files, err := filepath.Glob(filepath.Join(dir, "*", "pids"))
	if err != nil {
		return err
	}
	var pids []int
	for _, f := range files {
		data, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
			if pid, err := strconv.Atoi(strings.Fields(line)[0]); err == nil {
				pids = append(pids, pid)
			}
		}
	}
	for i := len(pids) - 1; i >= 0; i-- {
		_ = syscall.Kill(-pids[i], syscall.SIGTERM)
	}
	deadline := time.Now().Add(5 * time.Second)
	for _, pid := range pids {
		for syscall.Kill(pid, 0) == nil && time.Now().Before(deadline) {
			time.Sleep(50 * time.Millisecond)
		}
		if syscall.Kill(pid, 0) == nil {
			_ = syscall.Kill(-pid, syscall.SIGKILL)
		}
	}
	for _, f := range files {
		_ = os.Remove(f)
	}
	// A node's pods and shims, mounts, links and rules outlive its programs: clear them too.
	if nodes, _ := filepath.Glob(filepath.Join(dir, "*", nodeDirName)); len(nodes) > 0 {
		bins, _, err := nodeBinaries()
		if err != nil {
			return err
		}
		cleanupHost(bins, io.Discard)
	}
	return nil
}

func freePorts(n int) ([]int, error) {
	var ports []int
	var ls []net.Listener
	defer func() {
		for _, l := range ls {
			l.Close()
		}
	}()
	for range n {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return nil, err
		}
		ls = append(ls, l)
		ports = append(ports, l.Addr().(*net.TCPAddr).Port)
	}
	return ports, nil
}

// CAPool returns the cluster CA as a pool, for tests that verify issued certificates.
func (c *Cluster) CAPool() (*x509.CertPool, error) {
	data, err := os.ReadFile(c.CAFile)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(data) {
		return nil, errors.New("no certificate in " + c.CAFile)
	}
	return pool, nil
}
