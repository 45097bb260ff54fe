//go:build e2e

package e2e

import (
	"fmt"
	"sort"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"github.com/federate-dev/kubectl-federate/test/kubeenv"
)

// everything is every object of every listable API resource of a cluster, as "resource namespace/name"
// -> resourceVersion, found through discovery: a dry run must leave all of it as it was. The control
// plane's own heartbeats (kube-system, kube-node-lease) and Events written by controllers are left out:
// they change on their own.
func everything(t *testing.T, c *kubeenv.Cluster) map[string]string {
	t.Helper()
	disc, err := discovery.NewDiscoveryClientForConfig(c.Config)
	if err != nil {
		t.Fatal(err)
	}
	lists, err := disc.ServerPreferredResources()
	if err != nil {
		t.Fatal(err)
	}
	cfg := rest.CopyConfig(c.Config)
	cfg.WarningHandler = rest.NoWarnings{} // deprecated kinds (ComponentStatus, Endpoints) are listed too
	d, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]string{}
	for _, l := range lists {
		gv, err := schema.ParseGroupVersion(l.GroupVersion)
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range l.APIResources {
			if strings.Contains(r.Name, "/") || !hasVerb(r.Verbs, "list") {
				continue
			}
			list, err := d.Resource(gv.WithResource(r.Name)).List(t.Context(), metav1.ListOptions{})
			if apierrors.IsNotFound(err) || apierrors.IsMethodNotSupported(err) {
				continue
			}
			if err != nil {
				t.Fatalf("listing %s: %v", r.Name, err)
			}
			for _, o := range list.Items {
				if o.GetNamespace() == "kube-system" || o.GetNamespace() == "kube-node-lease" {
					continue
				}
				if r.Name == "events" && !strings.Contains(fmt.Sprint(o.Object["reportingController"], o.Object["source"]), "kubectl-federate") {
					continue
				}
				out[fmt.Sprintf("%s.%s %s/%s", r.Name, gv.Group, o.GetNamespace(), o.GetName())] = o.GetResourceVersion()
			}
		}
	}
	return out
}

func hasVerb(verbs []string, v string) bool {
	for _, x := range verbs {
		if x == v {
			return true
		}
	}
	return false
}

// changes lists what differs between two everything() snapshots.
func changes(before, after map[string]string) []string {
	var d []string
	for k, v := range after {
		if old, ok := before[k]; !ok {
			d = append(d, "added "+k)
		} else if old != v {
			d = append(d, "changed "+k)
		}
	}
	for k := range before {
		if _, ok := after[k]; !ok {
			d = append(d, "removed "+k)
		}
	}
	sort.Strings(d)
	return d
}

// dryCase is a command line and a comment line its client dry run prints ("" for none asserted).
type dryCase struct {
	args  []string
	shows string
}

// Every command that changes a cluster, with --dry-run=client and --dry-run=server, on one real pairing
// set up once: each leaves both clusters exactly as they were (every object of every API resource, by
// resourceVersion), client mode prints the objects it would write, and server mode reaches the API server
// (its answers carry what only the server fills in, and a write RBAC forbids is refused).
func TestDryRunLeavesBothClustersUnchanged(t *testing.T) {
	defer unauthenticate(t)
	authenticate(t)
	C, P := consumer.Kubeconfig, provider.Kubeconfig
	pair := []string{"--kubeconfig", C, "--remote-kubeconfig", P}
	// What the commands below act on: a granted slice, a pending one, a class, a nonce, a granted namespace.
	mustRun(t, "", append([]string{"create", "resourceslice", "dr-real", "--cpu", "1", "--memory", "1Gi"}, pair...)...)
	mustOn(t, consumer, "create", "resourceslice", "dr-pending", "--cpu", "1", "--memory", "1Gi", "--remote-cluster-id", "provider")
	mustOn(t, provider, "create", "resourceslice-class", "dr-class")
	mustOn(t, provider, "create", "nonce", "--remote-cluster-id", "dr-other")
	mustOn(t, provider, "grant", "namespace", "dr-granted", "--remote-cluster-id", "consumer")
	defer on(t, provider, "delete", "nonce", "--remote-cluster-id", "dr-other")
	defer on(t, provider, "delete", "resourceslice-class", "dr-class")

	cases := []dryCase{
		{[]string{"init", "--kubeconfig", C}, ""},
		{append([]string{"authenticate"}, pair...), "would create lease/authenticate-consumer in federate-system"},
		{[]string{"renew", "--kubeconfig", C, "--remote-cluster-id", "provider", "--remote-kubeconfig", P}, "would create certificatesigningrequest/"},
		{append([]string{"unauthenticate"}, pair...), "would delete namespace/federate-tenant-consumer"},
		{[]string{"revoke", "--kubeconfig", P, "--remote-cluster-id", "consumer"}, "would delete rolebinding/"},
		{[]string{"revoke", "namespace", "dr-granted", "--kubeconfig", P, "--remote-cluster-id", "consumer"}, "dr-granted"},
		{[]string{"cordon", "tenant", "--kubeconfig", P, "--remote-cluster-id", "consumer"}, "would patch namespace/federate-tenant-consumer"},
		{[]string{"uncordon", "tenant", "--kubeconfig", P, "--remote-cluster-id", "consumer"}, ""},
		{[]string{"drain", "tenant", "--kubeconfig", P, "--remote-cluster-id", "consumer"}, "would patch namespace/federate-tenant-consumer"},
		{[]string{"grant", "namespace", "dr-new", "--kubeconfig", P, "--remote-cluster-id", "consumer"}, "would create namespace/dr-new"},
		{[]string{"request", "namespace", "dr-req", "--kubeconfig", C, "--remote-cluster-id", "provider"}, "would create namespacerequest/dr-req in federate-tenant-consumer"},
		{append([]string{"create", "resourceslice", "dr-s1", "--cpu", "1", "--memory", "1Gi"}, pair...), "would create resourceslice/dr-s1 in federate-tenant-consumer"},
		{[]string{"accept", "resourceslice", "dr-pending", "--kubeconfig", P, "--remote-cluster-id", "consumer"}, "would create certificatesigningrequest/"},
		{[]string{"deny", "resourceslice", "dr-pending", "--kubeconfig", P, "--remote-cluster-id", "consumer", "--reason", "dry"}, "dr-pending"},
		{[]string{"delete", "resourceslice", "dr-real", "--kubeconfig", C, "--remote-kubeconfig", P, "--remote-cluster-id", "provider"}, "would delete namespace/"},
		{[]string{"create", "resourceslice-class", "dr-class2", "--kubeconfig", P}, "would apply resourcesliceclass/dr-class2"},
		{[]string{"delete", "resourceslice-class", "dr-class", "--kubeconfig", P}, "would delete resourcesliceclass/dr-class"},
		{[]string{"create", "nonce", "--kubeconfig", P, "--remote-cluster-id", "dr-other2"}, "would create secret/nonce-dr-other2 in federate-system"},
		{[]string{"delete", "nonce", "--kubeconfig", P, "--remote-cluster-id", "dr-other"}, "would delete secret/nonce-dr-other in federate-system"},
		{[]string{"mesh", "--kubeconfigs", C + "," + P}, "would create lease/authenticate-"},
	}
	check := func(c dryCase, code int) {
		t.Helper()
		for _, mode := range []string{"client", "server"} {
			name := strings.Join(c.args[:2], " ") + " --dry-run=" + mode
			before := map[string]map[string]string{"consumer": everything(t, consumer), "provider": everything(t, provider)}
			r := cli(t, "", append(c.args, "--dry-run="+mode)...)
			if r.code != code {
				t.Errorf("%s: want exit %d: %s", name, code, r)
				continue
			}
			for cl, cluster := range map[string]*kubeenv.Cluster{"consumer": consumer, "provider": provider} {
				if d := changes(before[cl], everything(t, cluster)); len(d) > 0 {
					t.Errorf("%s changed the %s: %v\n%s", name, cl, d, r)
				}
			}
			if c.shows != "" && !strings.Contains(r.stdout, c.shows) {
				t.Errorf("%s: stdout lacks %q:\n%s", name, c.shows, r)
			}
			if strings.Contains(r.stderr, "Done in") && !strings.Contains(r.stderr, "(dry run) Done in") {
				t.Errorf("%s: the closing line does not say (dry run):\n%s", name, r.stderr)
			}
			// Only the server fills in creationTimestamp and uid: server mode printed its answers.
			if mode == "server" && strings.Contains(r.stdout, "would create") && !strings.Contains(r.stdout, "uid: ") {
				t.Errorf("%s: no object the server answered:\n%s", name, r)
			}
			t.Logf("%s:\n%s", name, r.stderr)
		}
	}
	for _, c := range cases {
		check(c, 0)
	}
	// A slice the provider granted, for the consumer's import.
	mustOn(t, provider, "accept", "resourceslice", "dr-pending", "--remote-cluster-id", "consumer")
	check(dryCase{[]string{"import", "resourceslice", "dr-pending", "--kubeconfig", C, "--remote-cluster-id", "provider"}, "in federate-system"}, 0)
	// unmesh finds no pair provider -> consumer (never made; exit 1) and still dry-runs the other.
	check(dryCase{[]string{"unmesh", "--kubeconfigs", C + "," + P}, "would delete namespace/federate-tenant-consumer"}, 1)

	// Identity exchange: the consumer's rules, and a request left on the provider.
	rules := writeFile(t, "dr-rules.yaml", `apiVersion: cluster.core.oam.dev/v1alpha1
kind: ClusterGatewayConfiguration
spec:
  clientIdentityExchanger:
    rules:
    - name: dr-mapping
      source:
        user: dr-alice
      target:
        user: dr-bob
      type: StaticMappingIdentityExchanger
      priority: 10
`)
	// No rules yet, whatever ran before on these clusters: the dry run would create them.
	sh(t, "", `kubectl --kubeconfig "$C" -n federate-system delete configmap federate-exchange-rules --ignore-not-found >/dev/null`)
	check(dryCase{[]string{"exchange", "apply", "-f", rules, "--kubeconfig", C}, "would create configmap/federate-exchange-rules in federate-system"}, 0)
	mustOn(t, consumer, "exchange", "apply", "-f", rules)
	defer sh(t, "", `kubectl --kubeconfig "$C" -n federate-system delete configmap federate-exchange-rules >/dev/null`)
	check(dryCase{[]string{"request", "exchange", "--kubeconfig", C, "--remote-cluster-id", "provider", "--for-user", "dr-alice"}, "would create exchangerequest/"}, 0)
	request := strings.TrimSpace(mustOn(t, consumer, "request", "exchange", "--remote-cluster-id", "provider", "--for-user", "dr-alice").stdout)
	check(dryCase{[]string{"allow", "exchange", request, "--kubeconfig", P, "--remote-cluster-id", "consumer"}, ""}, 0)
	check(dryCase{[]string{"deny", "exchange", request, "--kubeconfig", P, "--remote-cluster-id", "consumer", "--reason", "dry"}, "exchangerequest/" + request}, 0)

	// The manual flow, for this same pair (a renewal by hand): each step's dry run, then the step for real
	// so that the next one has its file.
	mustOn(t, provider, "create", "nonce", "--remote-cluster-id", "consumer")
	nonceFile := writeFile(t, "dr-nonce.txt", mustOn(t, provider, "get", "nonce", "--remote-cluster-id", "consumer").stdout)
	gen := []string{"generate", "tenant", "--kubeconfig", C, "--nonce-file", nonceFile, "--remote-cluster-id", "provider"}
	check(dryCase{gen, ""}, 0)
	tenant := writeFile(t, "dr-tenant.yaml", mustRun(t, "", gen...).stdout)
	gen = []string{"generate", "identity", "--kubeconfig", P, "--remote-cluster-id", "consumer", "-f", tenant}
	check(dryCase{gen, "would create certificatesigningrequest/"}, 0)
	identity := writeFile(t, "dr-identity.yaml", mustRun(t, "", gen...).stdout)
	check(dryCase{[]string{"import", "identity", "--kubeconfig", C, "-f", identity}, "would apply identity/controlplane-provider in federate-system"}, 0)

	// Server mode asks the API server: a user RBAC lets read everything but write nothing is refused the
	// write, while client mode, which sends no write, prints it.
	reader := "dr-reader"
	sh(t, "", `kubectl --kubeconfig "$P" create clusterrole dr-read-all --verb=get,list,watch --resource='*.*' >/dev/null
kubectl --kubeconfig "$P" create clusterrolebinding dr-read-all --clusterrole=dr-read-all --user=`+reader+` >/dev/null`)
	defer sh(t, "", `kubectl --kubeconfig "$P" delete clusterrolebinding/dr-read-all clusterrole/dr-read-all >/dev/null`)
	before := everything(t, provider)
	r := cli(t, "", "create", "resourceslice-class", "dr-forbidden", "--kubeconfig", P, "--as", reader, "--dry-run=server")
	if r.code == 0 || !strings.Contains(r.stderr, "forbidden") {
		t.Errorf("a server dry run of a write RBAC forbids was not refused:\n%s", r)
	}
	r = cli(t, "", "create", "resourceslice-class", "dr-forbidden", "--kubeconfig", P, "--as", reader, "--dry-run=client")
	if r.code != 0 || !strings.Contains(r.stdout, "would apply resourcesliceclass/dr-forbidden") {
		t.Errorf("a client dry run, which sends no write, should print the class:\n%s", r)
	}
	if d := changes(before, everything(t, provider)); len(d) > 0 {
		t.Errorf("the refused and the client dry runs changed the provider: %v", d)
	}
}
