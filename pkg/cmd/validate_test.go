package cmd

import (
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"k8s.io/cli-runtime/pkg/genericiooptions"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/cmdutil"
	"github.com/federate-dev/kubectl-federate/pkg/nonce"
)

// Every command checks all of its input before it sends a single request: each bad input below must fail
// with a message naming the flag (the same message for the same mistake on every command), as a usage
// error, while two API servers that count requests see none.
func TestBadInputFailsBeforeAnyRequest(t *testing.T) {
	var requests atomic.Int64
	server := func() string {
		srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			requests.Add(1)
			http.Error(w, "no request expected", http.StatusTeapot)
		}))
		t.Cleanup(srv.Close)
		return srv.URL
	}
	dir := t.TempDir()
	kubeconfig := func(name string) string {
		path := filepath.Join(dir, name)
		cfg := "apiVersion: v1\nkind: Config\nclusters: [{name: c, cluster: {server: " + server() + "}}]\n" +
			"contexts: [{name: c, context: {cluster: c, user: u}}]\ncurrent-context: c\nusers: [{name: u, user: {token: x}}]\n"
		if err := os.WriteFile(path, []byte(cfg), 0o600); err != nil {
			t.Fatal(err)
		}
		return path
	}
	local, remote := kubeconfig("local"), kubeconfig("remote")
	nonceFile := filepath.Join(dir, "nonce")
	if err := os.WriteFile(nonceFile, []byte("short\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tenantFile := filepath.Join(dir, "tenant.yaml")
	if err := os.WriteFile(tenantFile, []byte("apiVersion: federate.dev/v1alpha1\nkind: Tenant\nmetadata: {name: c}\n"+
		"spec: {clusterID: c, providerClusterID: p, publicKey: AAAA, csr: AAAA, signature: AAAA}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	badRules := filepath.Join(dir, "rules.yaml")
	if err := os.WriteFile(badRules, []byte("apiVersion: cluster.core.oam.dev/v1alpha1\nkind: ClusterGatewayConfiguration\nspec:\n  clientIdentityExchanger:\n    rules:\n"+
		"    - {name: external, type: ExternalIdentityExchanger, source: {userPattern: ext-*}, url: http://external.exchanger/}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	bare := strings.Repeat("A", 43)
	ticket := nonce.Ticket{ProviderID: "gpu-farm", ConsumerID: "edge-1", Nonce: bare}.String()
	two := []string{"--kubeconfig", local, "--remote-kubeconfig", remote}
	one := []string{"--kubeconfig", local}
	cases := []struct {
		args []string
		want string
	}{
		{[]string{"authenticate", "--kubeconfig", local}, "--remote-kubeconfig or --remote-context: one is required"},
		{append([]string{"export", "helm", "--remote-cluster-id", "p"}, one...), `FORMAT: format "helm": must be one of kubeconfig, argocd, cluster-gateway, admiralty, clusterprofile`},
		{append([]string{"export", "argocd", "--remote-cluster-id", "p", "--key", "value"}, one...), "--key: only format kubeconfig writes an extra key, not argocd"},
		{append([]string{"export", "kubeconfig", "--remote-cluster-id", "p", "--key", "a/b"}, one...), `--key "a/b": not a valid Secret data key`},
		{append([]string{"export", "kubeconfig", "--remote-cluster-id", "p", "-n", "Bad_NS"}, one...), `-n "Bad_NS": not a namespace name`},
		{append([]string{"export", "argocd", "--remote-cluster-id", "p", "--name", "Bad.Name"}, one...), `--name "Bad.Name": must be a DNS label`},
		{append([]string{"export", "argocd", "--remote-cluster-id", "p", "--resource-slice", "Bad_S"}, one...), `--resource-slice "Bad_S": must be a DNS label`},
		{append([]string{"export", "--remote-cluster-id", "p"}, one...), "FORMAT: exactly 1 argument(s) required, got 0"},
		{[]string{"unauthenticate", "--kubeconfig", local}, "--remote-kubeconfig or --remote-context: one is required"},
		{append([]string{"authenticate", "--cluster-id", "Bad_ID"}, two...), `--cluster-id "Bad_ID": must be a DNS label`},
		{append([]string{"authenticate", "--cluster-id", "UPPER", "--remote-cluster-id", "Bad_ID"}, two...), `--cluster-id "UPPER"`},
		{append([]string{"authenticate", "--cluster-id", "a", "--remote-cluster-id", "a"}, two...), "--cluster-id and --remote-cluster-id: must differ"},
		{append([]string{"authenticate", "--key-algorithm", "dsa"}, two...), `invalid argument "dsa" for "--key-algorithm" flag: must be one of ecdsa-p256, ed25519, rsa-3072`},
		{append([]string{"generate", "tenant", "--remote-cluster-id", "p", "--nonce-file", nonceFile, "--key-algorithm", "dsa"}, one...), `invalid argument "dsa" for "--key-algorithm" flag: must be one of ecdsa-p256, ed25519, rsa-3072`},
		{append([]string{"authenticate", "--pod-security", "none"}, two...), `invalid argument "none" for "--pod-security" flag`},
		{append([]string{"generate", "identity", "--remote-cluster-id", "c", "-f", tenantFile, "--pod-security", "none"}, one...), `invalid argument "none" for "--pod-security" flag`},
		{append([]string{"authenticate", "--quota", "pods"}, two...), `--quota "pods": each entry must be NAME=QUANTITY`},
		{append([]string{"authenticate", "--quota", "pods=ten"}, two...), `--quota: pods="ten" is not a quantity`},
		{append([]string{"authenticate", "--priority-classes", "system-node-critical"}, two...), `--priority-classes: priority class "system-node-critical": system-* classes`},
		{append([]string{"authenticate", "--default-requests", "cpu=2"}, two...), "--default-requests: default request cpu=2"},
		{append([]string{"authenticate", "--storage-classes", "Fast_SSD"}, two...), `--storage-classes: storage class "Fast_SSD": is not a valid name`},
		{append([]string{"authenticate", "--tolerations", "node-role.kubernetes.io/etcd"}, two...), `--tolerations: toleration "node-role.kubernetes.io/etcd": the control plane's taints`},
		{append([]string{"generate", "identity", "--remote-cluster-id", "c", "-f", tenantFile, "--tolerations", "a b"}, one...), `--tolerations: toleration "a b": is not a valid taint key`},
		{append([]string{"authenticate", "--runtime-classes", "Kata!"}, two...), `--runtime-classes: runtime class "Kata!": is not a valid name`},
		{[]string{"mesh", "--kubeconfigs", local + "," + remote, "--schedulers", "my_scheduler"}, `--schedulers: scheduler "my_scheduler": is not a valid name`},
		{append([]string{"authenticate", "--expiration", "1m"}, two...), `for "--expiration" flag: 1m is out of range: must be from 10m to 3650d`},
		{append([]string{"renew", "--remote-cluster-id", "p"}, one...), "--remote-kubeconfig or --remote-context: one is required"},
		{append([]string{"renew", "--all"}, one...), "--remote-kubeconfig-dir: is required with --all"},
		{append([]string{"renew", "--all", "--remote-kubeconfig-dir", "/nonexistent"}, one...), `--remote-kubeconfig-dir "/nonexistent": is not a directory`},
		{append([]string{"renew", "--remote-cluster-id", "p", "--expiring-within", "1h"}, two...), "--remote-kubeconfig-dir and --expiring-within: only with --all"},
		{append([]string{"status", "--expiring-within", "-1h"}, one...), `for "--expiring-within" flag: -1h is out of range: must be from 0s to 3650d`},
		{append([]string{"status", "--history", "--check"}, one...), "--history: cannot be combined"},
		{append([]string{"cordon", "tenant", "Bad_ID"}, one...), `--remote-cluster-id "Bad_ID": must be a DNS label`},
		{append([]string{"drain", "tenant"}, one...), "--remote-cluster-id: required, the ID of the consumer cluster"},
		{append([]string{"drain", "tenant", "a", "--remote-cluster-id", "b"}, one...), `--remote-cluster-id "b" and CONSUMER "a": name the consumer once`},
		{append([]string{"cordon", "tenant", "--remote-cluster-id", "Bad_ID"}, one...), `--remote-cluster-id "Bad_ID": must be a DNS label`},
		{append([]string{"authenticate", "--credential", "password"}, two...), `invalid argument "password" for "--credential" flag: must be one of certificate, token, auto`},
		{append([]string{"authenticate", "--signer-timeout", "0s"}, two...), `for "--signer-timeout" flag: 0s is out of range: must be from 1s to 10m`},
		{append([]string{"generate", "identity", "--remote-cluster-id", "c", "-f", tenantFile, "--credential", "jwt"}, one...), `invalid argument "jwt" for "--credential" flag`},
		{append([]string{"accept", "resourceslice", "s", "--remote-cluster-id", "c", "--signer-timeout", "-1s"}, one...), `for "--signer-timeout" flag: -1s is out of range: must be from 1s to 10m`},
		{append([]string{"create", "resourceslice", "s", "--remote-cluster-id", "p", "--cpu", "1", "--memory", "1Gi", "--credential", "token"}, one...), "--credential: the provider chooses it when it accepts"},
		{append([]string{"authenticate", "--proxy-url", "ftp://x"}, two...), "--proxy-url: proxy URL"},
		{append([]string{"authenticate", "--timeout", "0s"}, two...), `for "--timeout" flag: 0s is out of range: must be from 1s to 1d`},
		{append([]string{"unauthenticate", "--remote-cluster-id", "-x"}, two...), `--remote-cluster-id "-x"`},
		{append([]string{"create", "nonce", "--remote-cluster-id", "X"}, one...), `--remote-cluster-id "X": must be a DNS label`},
		{append([]string{"create", "nonce", "--remote-cluster-id", "c", "--ttl", "1s"}, one...), `for "--ttl" flag: 1s is out of range: must be from 1m to 7d`},
		{append([]string{"create", "nonce"}, one...), `required flag(s) "remote-cluster-id" not set`},
		{append([]string{"get", "nonce", "--remote-cluster-id", "X"}, one...), `--remote-cluster-id "X": must be a DNS label`},
		{append([]string{"get", "nonce", "--remote-cluster-id", "c", "-o", "xml"}, one...), `invalid argument "xml" for "-o, --output" flag: must be one of json, yaml`},
		{append([]string{"get", "kubeconfig", "--remote-cluster-id", "X"}, one...), `--remote-cluster-id "X": must be a DNS label`},
		{append([]string{"generate", "tenant", "--remote-cluster-id", "p", "--nonce", "short"}, one...), "--nonce: not a nonce: want the one line kubectl federate get nonce prints"},
		{append([]string{"generate", "tenant", "--remote-cluster-id", "p", "--nonce-file", nonceFile}, one...), "--nonce-file " + nonceFile + ": not a nonce: want the one line kubectl federate get nonce prints"},
		{append([]string{"generate", "tenant", "--remote-cluster-id", "p", "--nonce", "x", "--nonce-file", nonceFile}, one...), "if any flags in the group [nonce nonce-file] are set none of the others can be"},
		{append([]string{"generate", "tenant", "--remote-cluster-id", "p"}, one...), "at least one of the flags in the group [nonce nonce-file] is required"},
		{append([]string{"generate", "tenant", "--nonce", bare}, one...), "--remote-cluster-id: required with a bare nonce"},
		{append([]string{"generate", "tenant", "--nonce", ticket, "--remote-cluster-id", "other"}, one...), `--remote-cluster-id "other": the nonce in --nonce was made by provider "gpu-farm"`},
		{append([]string{"generate", "tenant", "--nonce", ticket, "--cluster-id", "edge-2"}, one...), `--cluster-id "edge-2": the nonce in --nonce was made for consumer "edge-1"`},
		{append([]string{"generate", "tenant", "--nonce", strings.Replace(ticket, "edge-1", "edge-2", 1)}, one...), "--nonce: nonce for consumer \"edge-2\" from provider \"gpu-farm\": its cluster IDs do not match its MAC"},
		{append([]string{"create", "nonce", "--remote-cluster-id", "c", "--cluster-id", "Bad_ID"}, one...), `--cluster-id "Bad_ID": must be a DNS label`},
		{append([]string{"create", "nonce", "--remote-cluster-id", "c", "--cluster-id", "c"}, one...), "--cluster-id and --remote-cluster-id: must differ"},
		{append([]string{"generate", "identity", "--remote-cluster-id", "c"}, one...), `required flag(s) "filename" not set`},
		{append([]string{"generate", "identity", "--remote-cluster-id", "X", "-f", tenantFile}, one...), `--remote-cluster-id "X": must be a DNS label`},
		{append([]string{"generate", "identity", "--remote-cluster-id", "c", "-f", tenantFile, "--api-server", "http://x"}, one...), "--api-server: API server URL"},
		{append([]string{"import", "identity"}, one...), `required flag(s) "filename" not set`},
		{append([]string{"init", "--cluster-id", "-bad"}, one...), `--cluster-id "-bad": must be a DNS label`},
		{append([]string{"revoke", "--remote-cluster-id", "X"}, one...), `--remote-cluster-id "X": must be a DNS label`},
		{append([]string{"revoke", "--remote-cluster-id", "c", "--timeout", "-1s"}, one...), `for "--timeout" flag: -1s is out of range: must be from 1s to 1d`},
		{append([]string{"info", "-o", "xml"}, one...), `invalid argument "xml" for "-o, --output" flag: must be one of json, yaml`},
		{append([]string{"info", "extra"}, one...), `unknown command "extra"`},
		{[]string{"version", "--bogus"}, "unknown flag: --bogus"},
		// Grants: resource slices, classes, extra namespaces.
		{append([]string{"create", "resourceslice", "--remote-cluster-id", "p", "--cpu", "1", "--memory", "1Gi"}, one...), "NAME: exactly 1 argument(s) required, got 0"},
		{append([]string{"create", "resourceslice", "Bad_Name", "--remote-cluster-id", "p", "--cpu", "1", "--memory", "1Gi"}, one...), `NAME "Bad_Name": must be a DNS label`},
		{append([]string{"create", "resourceslice", "s", "--cpu", "1", "--memory", "1Gi"}, one...), "--remote-cluster-id: must not be empty"},
		{append([]string{"create", "resourceslice", "s", "--remote-cluster-id", "p", "--memory", "1Gi"}, one...), "--cpu: is required"},
		{append([]string{"create", "resourceslice", "s", "--remote-cluster-id", "p", "--cpu", "lots", "--memory", "1Gi"}, one...), `--cpu "lots": is not a quantity`},
		{append([]string{"create", "resourceslice", "s", "--remote-cluster-id", "p", "--cpu", "-1", "--memory", "1Gi"}, one...), "--cpu -1: must be positive"},
		{append([]string{"create", "resourceslice", "s", "--remote-cluster-id", "p", "--cpu", "1", "--memory", "1Gi", "--pods", "1.5"}, one...), "--pods 1.5: must be a whole number"},
		{append([]string{"create", "resourceslice", "s", "--remote-cluster-id", "p", "--cpu", "1", "--memory", "1Gi", "--class", "A B"}, one...), `--class "A B": must be a DNS label`},
		{append([]string{"create", "resourceslice", "s", "--cpu", "1", "--memory", "1Gi", "--submit=false"}, two...), "--submit=false: cannot be combined with --remote-kubeconfig"},
		{append([]string{"create", "resourceslice", strings.Repeat("s", 41), "--remote-cluster-id", "p", "--cpu", "1", "--memory", "1Gi"}, one...), "must be at most 40 characters"},
		{append([]string{"create", "resourceslice-class", "c", "--max-cpu", "x"}, one...), `--max-cpu "x": is not a quantity`},
		{append([]string{"create", "resourceslice-class", "c", "--over-max", "maybe"}, one...), `invalid argument "maybe" for "--over-max" flag: must be one of clamp, deny`},
		{append([]string{"create", "resourceslice-class", "c", "--cluster-role", ""}, one...), "--cluster-role: must not be empty"},
		{append([]string{"create", "resourceslice-class", "c", "--max-quota", "secrets=-1"}, one...), "--max-quota: secrets=-1 must not be negative"},
		{append([]string{"create", "resourceslice-class", "c", "--max-quota", "secrets=1.5"}, one...), "--max-quota secrets 1.5: must be a whole number"},
		{append([]string{"create", "resourceslice-class", "c", "--max-quota", "cpu=1"}, one...), "--max-quota: cpu is bounded by --max-cpu"},
		{append([]string{"create", "resourceslice-class", "c", "--max-quota", "requests.cpu=1"}, one...), "--max-quota requests.cpu: is set by a slice resource"},
		{append([]string{"create", "resourceslice-class", "c", "--max-quota", "secret=1"}, one...), "--max-quota secret: is not a slice resource"},
		{append([]string{"accept", "resourceslice", "s"}, one...), "--remote-cluster-id: is required with NAME"},
		{append([]string{"accept", "resourceslice", "s", "--pending"}, one...), "--pending: accepts every pending slice, so it takes no NAME"},
		{append([]string{"accept", "resourceslice", "--cpu", "1"}, one...), "NAME: is required with -f or a grant"},
		{append([]string{"accept", "resourceslice", "s", "--remote-cluster-id", "c", "--memory", "0"}, one...), "--memory 0: must be positive"},
		{append([]string{"accept", "resourceslice", "a", "b", "--remote-cluster-id", "c"}, one...), "NAME: at most 1 argument(s) accepted, got 2"},
		{append([]string{"deny", "resourceslice", "s", "--remote-cluster-id", "c", "--reason", " "}, one...), "--reason: must say why"},
		{append([]string{"deny", "resourceslice", "s", "--remote-cluster-id", "c"}, one...), `required flag(s) "reason" not set`},
		{append([]string{"import", "resourceslice", "s"}, one...), `required flag(s) "remote-cluster-id" not set`},
		{append([]string{"delete", "resourceslice", "s", "--remote-cluster-id", "c", "--side", "both"}, one...), `invalid argument "both" for "--side" flag`},
		{append([]string{"delete", "resourceslice", "s", "--side", "provider"}, two...), "--side provider: with --remote-kubeconfig this cluster is the consumer"},
		{append([]string{"get", "kubeconfig", "--remote-cluster-id", "p", "--resource-slice", "X"}, one...), `--resource-slice "X": must be a DNS label`},
		{append([]string{"grant", "namespace", "kube-extra", "--remote-cluster-id", "c"}, one...), `NAME "kube-extra": names starting with "kube-" are reserved`},
		{append([]string{"grant", "namespace", "federate-tenant-x", "--remote-cluster-id", "c"}, one...), `names starting with "federate-" are reserved`},
		{append([]string{"grant", "namespace", "default", "--remote-cluster-id", "c"}, one...), `NAME "default": is the cluster's default namespace`},
		{append([]string{"grant", "namespace", "--remote-cluster-id", "c", "--quota", "pods=1"}, one...), "NAME: is required with --pod-security or --quota"},
		{append([]string{"grant", "namespace", "ns1", "--remote-cluster-id", "c", "--quota", "pods"}, one...), `--quota "pods": each entry must be NAME=QUANTITY`},
		{append([]string{"revoke", "namespace", "fs-x", "--remote-cluster-id", "c"}, one...), `names starting with "fs-" are reserved`},
		{append([]string{"request", "namespace", "Not_OK", "--remote-cluster-id", "p"}, one...), `NAME "Not_OK": must be a DNS label`},
		{append([]string{"request", "namespace"}, two...), "NAME: is required with --remote-kubeconfig or --remote-context"},
		{append([]string{"exchange", "apply"}, one...), `required flag(s) "filename" not set`},
		{append([]string{"exchange", "apply", "-f", badRules}, one...), `spec.clientIdentityExchanger.rules[0].url "http://external.exchanger/": must be https`},
		{append([]string{"exchange", "get", "-o", "xml"}, one...), `invalid argument "xml" for "-o, --output" flag`},
		{append([]string{"exchange", "resolve", "--remote-cluster-id", "p"}, one...), `required flag(s) "for-user" not set`},
		{append([]string{"exchange", "resolve", "--remote-cluster-id", "X", "--for-user", "u"}, one...), `--remote-cluster-id "X": must be a DNS label`},
		{append([]string{"exchange", "resolve", "--remote-cluster-id", "p", "--for-user", "u", "--for-group", ""}, one...), `--for-group: must not be empty`},
		{append([]string{"get", "kubeconfig", "--remote-cluster-id", "p", "--for-group", "g"}, one...), `--for-user: must not be empty`},
		{append([]string{"get", "kubeconfig", "--remote-cluster-id", "p", "--for-user", "u", "--resource-slice", "s"}, one...), `--resource-slice and --for-user: give one`},
		{append([]string{"get", "kubeconfig", "--remote-cluster-id", "p"}, two...), `--remote-kubeconfig or --remote-context: only with --for-user`},
		{append([]string{"allow", "exchange", "r-1", "--remote-cluster-id", "c", "--allow-reach", "r-2"}, one...), `--allow-reach "r-2": must be one of the NAMEs`},
		{append([]string{"allow", "exchange", "--remote-cluster-id", "c", "--allow-unconstrained"}, one...), `only with the NAMEs of the requests to answer`},
		{append([]string{"request", "exchange", "--remote-cluster-id", "p"}, one...), `--for-user: must not be empty`},
		{append([]string{"allow", "exchange", "Bad_Name", "--remote-cluster-id", "c"}, one...), `NAME "Bad_Name": must be a request's name`},
		{append([]string{"allow", "exchange", "r-1", "--remote-cluster-id", "c", "--expiration", "1m"}, one...), `for "--expiration" flag: 1m is out of range: must be from 10m to 3650d`},
		{append([]string{"allow", "exchange"}, one...), `required flag(s) "remote-cluster-id" not set`},
		{[]string{"create"}, "kubectl federate create needs a resource; one of: nonce"},
	}
	for _, c := range cases {
		root := NewRootCmd(genericiooptions.NewTestIOStreamsDiscard())
		root.SetArgs(c.args)
		_, err := root.ExecuteC()
		var usage *cmdutil.UsageError
		switch {
		case err == nil:
			t.Errorf("%v: succeeded", c.args)
		case !strings.Contains(err.Error(), c.want):
			t.Errorf("%v:\n got %q\nwant %q", c.args, err, c.want)
		case !errors.As(err, &usage):
			t.Errorf("%v: %q is not a usage error (main would not point at the help)", c.args, err)
		}
	}
	// A file that cannot be read is an input error, not a usage error: no pointer to the help.
	root := NewRootCmd(genericiooptions.NewTestIOStreamsDiscard())
	root.SetArgs(append([]string{"generate", "tenant", "--remote-cluster-id", "p", "--nonce-file", filepath.Join(dir, "missing")}, one...))
	if _, err := root.ExecuteC(); err == nil || !strings.HasPrefix(err.Error(), "--nonce-file: open") {
		t.Errorf("missing --nonce-file: %v", err)
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("bad input reached the API servers: %d requests", n)
	}
}
