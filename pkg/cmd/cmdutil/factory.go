// Package cmdutil is the command plumbing every command shares, with no knowledge of the domain: the
// cluster connection factory, the one command shape (Options -> Complete -> Validate -> Run), usage errors
// and exit codes, help-text helpers and input files. It imports no domain package (lint enforces it), so
// it can serve any command.
package cmdutil

import (
	"fmt"
	"io"
	"net/http"
	"os"
	"strings"
	"sync/atomic"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
	"k8s.io/cli-runtime/pkg/genericiooptions"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/clientcmd"

	"github.com/federate-dev/kubectl-federate/pkg/kube"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/dryrun"
	"github.com/federate-dev/kubectl-federate/pkg/output"
	"github.com/federate-dev/kubectl-federate/pkg/version"
)

// Factory gives commands their clients for one cluster. The root command owns the local one; two-cluster
// commands add a remote one whose flags carry the remote- prefix.
type Factory struct {
	Flags    *KubeconfigFlags
	Requests atomic.Int64     // API requests sent through this factory's clients
	Color    output.ColorMode // the root's --color value
	prefix   string           // "remote-" for the remote cluster's flags
	// skew is the API server's clock minus ours, in nanoseconds, from the last response's Date header.
	skew atomic.Int64
	// Connector, if set, reaches the clusters instead of the network (the unit tier's fake clusters, chosen
	// by the --kubeconfig and --context a command was given). Every factory made from this one shares it.
	Connector Connector
	// dry is the command's dry run, shared with every sibling; comments is the commands' stdout during
	// one (their lines become YAML comments); streams are the process's own.
	dry      *dryrun.Recorder
	comments *dryrun.CommentWriter
	streams  Streams
}

// Connector reaches clusters some other way than the network: the cluster a kubeconfig path and context
// name, and the one a kubeconfig the domain stored names.
type Connector interface {
	Connect(kubeconfig, context string) (*Clients, error)
	Dial(kubeconfig []byte) (*Clients, error)
}

// NewSibling returns a factory for another cluster (a fleet's, a mesh's) that shares this one's way to
// connect.
func (f *Factory) NewSibling(streams genericiooptions.IOStreams) *Factory {
	s := NewFactory(streams)
	s.Color, s.Connector, s.dry, s.comments = f.Color, f.Connector, f.dry, f.comments
	return s
}

// ServerNow is the API server's clock as last measured: expiries (nonces, certificates) are judged by
// the cluster's clock, not by whatever the administrator's machine believes.
func (f *Factory) ServerNow() time.Time {
	return time.Now().Add(time.Duration(f.skew.Load()))
}

// measureSkew reads a response's Date header (one-second resolution, so its middle is the best guess).
func (f *Factory) measureSkew(resp *http.Response) {
	if resp == nil {
		return
	}
	d, err := http.ParseTime(resp.Header.Get("Date"))
	if err != nil {
		return
	}
	f.skew.Store(int64(time.Until(d.Add(500 * time.Millisecond))))
}

// NewFactory returns a factory whose REST configs send our user agent, count requests and pass through
// the command's dry run.
func NewFactory(streams genericiooptions.IOStreams) *Factory {
	f := &Factory{Color: output.ColorAuto, dry: &dryrun.Recorder{}, streams: streams}
	f.comments = dryrun.NewCommentWriter(streams.Out, f.dry)
	// kubectl's --proxy-url is not offered: the name belongs to generate tenant, where it means the
	// consumer's route to the provider.
	f.Flags = NewKubeconfigFlags()
	f.Flags.WrapConfigFn = func(c *rest.Config) *rest.Config {
		f.configure(c, f.ClusterName, true)
		return c
	}
	return f
}

// configure is what every connection of a command gets, the administrator's and a stored kubeconfig's
// alike: our user agent, no API warnings, kubectl's rates, the request trace (FEDERATE_TRACE), the
// cluster's clock, a connection error in the user's terms, and, outside the request counter, the
// command's dry run. counted says whether its requests are the administrator's (a stored kubeconfig's are
// the pairing identity's, not counted).
func (f *Factory) configure(c *rest.Config, cluster func() string, counted bool) {
	c.UserAgent = version.UserAgent()
	// The API server's warnings concern the objects a request sends; ours are our own (the sandbox's
	// dry-run probes send a deprecated field on purpose), so they would only alarm the reader.
	c.WarningHandler = rest.NoWarnings{}
	c.QPS, c.Burst = 50, 100
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper {
		return roundTripFunc(func(r *http.Request) (*http.Response, error) {
			start := time.Now()
			if !counted { // another cluster's clock, another credential: only traced
				resp, err := rt.RoundTrip(r)
				if traceRequests {
					traceRequest(f.streams.ErrOut, f.side(counted), r, resp, start)
				}
				return resp, err
			}
			f.Requests.Add(1)
			resp, err := rt.RoundTrip(r)
			f.measureSkew(resp)
			if err != nil && r.Context().Err() == nil {
				err = f.connectionError(r, err)
			}
			if err == nil && resp.StatusCode == http.StatusUnauthorized {
				// The kubeconfig's own credentials are refused: every request of the command would be.
				_ = resp.Body.Close()
				resp, err = nil, f.connectionError(r, errUnauthorized)
			}
			if traceRequests {
				traceRequest(f.streams.ErrOut, f.side(counted), r, resp, start)
			}
			return resp, err
		})
	})
	// Outside the counter: a write a client dry run answers itself is not sent, so not counted.
	jsonForDryRun(c, f.dry)
	c.Wrap(func(rt http.RoundTripper) http.RoundTripper { return f.dry.Wrap(cluster, dryrun.HostPath(c.Host), rt) })
}

// side names a connection in the request trace.
func (f *Factory) side(counted bool) string {
	switch {
	case !counted:
		return "stored"
	case f.prefix != "":
		return "remote"
	}
	return "local"
}

// jsonForDryRun makes a dry run's clients speak JSON (typed clients default to protobuf): the dry-run
// layer reads and prints the bodies, echoes them back, and sets a DELETE's options.
func jsonForDryRun(c *rest.Config, d *dryrun.Recorder) {
	if d.Active() {
		c.ContentType = "application/json"
		c.AcceptContentTypes = "application/json"
	}
}

// traceRequests (FEDERATE_TRACE=1) prints every API request to stderr with its start, relative to the
// process's start, and duration: how a change to the protocol is seen to add or remove a dependent round trip.
var (
	traceRequests = os.Getenv("FEDERATE_TRACE") != ""
	processStart  = time.Now()
)

func traceRequest(w io.Writer, side string, r *http.Request, resp *http.Response, start time.Time) {
	code := 0
	if resp != nil {
		code = resp.StatusCode
	}
	fmt.Fprintf(w, "trace %-6s %6.1fms %6.1fms %-6s %d %s\n", side,
		float64(start.Sub(processStart).Microseconds())/1000, float64(time.Since(start).Microseconds())/1000, r.Method, code, r.URL.RequestURI())
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// Clients are the clients of one cluster.
type Clients struct {
	Config  *rest.Config
	Kube    kube.Interface
	Dynamic dynamic.Interface
}

// DialKubeconfig builds clients from a kubeconfig the domain stored (a pairing's identity) the way every
// connection of the command is built (configure): the same user agent and trace, and the command's dry
// run, which holds back, or dry-runs, the writes made as the pairing's identity too. Its requests are not
// counted: they are not the administrator's.
func (f *Factory) DialKubeconfig(data []byte) (*Clients, error) {
	if f.Connector != nil {
		return f.Connector.Dial(data)
	}
	cfg, err := clientcmd.RESTConfigFromKubeConfig(data)
	if err != nil {
		return nil, err
	}
	name := "the pairing's identity on " + cfg.Host
	f.configure(cfg, func() string { return name }, false)
	kc, err := kube.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Clients{Config: cfg, Kube: kc, Dynamic: dyn}, nil
}

// ClusterName names the factory's cluster as its flags do: the context, else the kubeconfig, else the
// kubeconfig's current context (a dry run's output says on which cluster each object would be written).
func (f *Factory) ClusterName() string {
	if c := deref(f.Flags.Context); c != "" {
		return c
	}
	if k := deref(f.Flags.KubeConfig); k != "" {
		return k
	}
	if raw, err := f.Flags.ToRawKubeConfigLoader().RawConfig(); err == nil && raw.CurrentContext != "" {
		return raw.CurrentContext
	}
	return "the current context"
}

// Clients builds the typed and dynamic clients from the factory's flags.
func (f *Factory) Clients() (*Clients, error) {
	if f.Connector != nil {
		return f.Connector.Connect(deref(f.Flags.KubeConfig), deref(f.Flags.Context))
	}
	cfg, err := f.Flags.ToRESTConfig()
	if err != nil {
		return nil, fmt.Errorf("--%skubeconfig/--%scontext: %w", f.prefix, f.prefix, err)
	}
	kc, err := kube.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		return nil, err
	}
	return &Clients{Config: cfg, Kube: kc, Dynamic: dyn}, nil
}

func deref(s *string) string {
	if s == nil {
		return ""
	}
	return *s
}

// AddRemoteFlags registers the connection flags of the remote cluster (--remote-kubeconfig,
// --remote-context, ...) on fs, and returns the remote factory.
func (f *Factory) AddRemoteFlags(fs *pflag.FlagSet, streams genericiooptions.IOStreams) *Factory {
	remote := f.NewSibling(streams)
	remote.prefix = "remote-"
	tmp := pflag.NewFlagSet("remote", pflag.ContinueOnError)
	remote.Flags.AddFlags(tmp)
	keep := map[string]bool{"kubeconfig": true, "context": true, "cluster": true, "user": true, "request-timeout": false}
	tmp.VisitAll(func(fl *pflag.Flag) {
		if !keep[fl.Name] {
			return
		}
		fl.Name = "remote-" + fl.Name
		fl.Shorthand = ""
		fl.Usage = strings.TrimSuffix(fl.Usage, ".") + " (in the remote cluster)"
		fs.AddFlag(fl)
	})
	return remote
}

// Streams is a shorthand so commands need not import genericiooptions for the type.
type Streams = genericiooptions.IOStreams

// Printer returns the stderr progress printer for the streams, honouring --color.
func (f *Factory) Printer(streams Streams) *output.Printer {
	p := output.NewPrinter(streams.ErrOut, f.Color)
	if f.dry.Active() {
		p = p.DryRun()
	}
	return p
}

// DryRun is the command's dry run (never nil).
func (f *Factory) DryRun() *dryrun.Recorder { return f.dry }

// Out is the commands' stdout: the process's, whose lines become YAML comments during a dry run.
func (f *Factory) Out() io.Writer { return f.comments }

// AddDryRunFlag registers --dry-run (dryrun.AddFlag) on a command that changes a cluster.
func AddDryRunFlag(cmd *cobra.Command, f *Factory) {
	dryrun.AddFlag(cmd, f.dry, CompleteValues(dryrun.Strategies))
}

// finishDryRun ends a command that takes --dry-run (dryrun.Recorder.Finish): what it would have written
// follows its own output.
func (f *Factory) finishDryRun(cmd *cobra.Command, err error) error {
	if cmd.Flags().Lookup("dry-run") == nil {
		return err
	}
	return f.dry.Finish(err, f.Printer(f.streams), f.comments, f.streams.Out)
}

// ConnectionFlags writes how this factory names its cluster (its kubeconfig and context) as flags with
// the given prefix ("--" or "--remote-"): the words a hint tells the user to type.
func (f *Factory) ConnectionFlags(prefix string) string {
	var parts []string
	if k := deref(f.Flags.KubeConfig); k != "" {
		parts = append(parts, prefix+"kubeconfig "+k)
	}
	if c := deref(f.Flags.Context); c != "" {
		parts = append(parts, prefix+"context "+c)
	}
	return strings.Join(parts, " ")
}

// Namespace is the namespace a command acts in, as kubectl chooses it: --namespace if given, else the
// kubeconfig context's, else "default".
func (f *Factory) Namespace() (string, error) {
	if ns := deref(f.Flags.Namespace); ns != "" {
		return ns, nil
	}
	if f.Connector != nil {
		return "default", nil // clusters reached without a kubeconfig have no context namespace to read
	}
	ns, _, err := f.Flags.ToRawKubeConfigLoader().Namespace()
	if err != nil {
		return "", fmt.Errorf("--%skubeconfig/--%scontext: %w", f.prefix, f.prefix, err)
	}
	return ns, nil
}
