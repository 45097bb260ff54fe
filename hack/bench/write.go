package main

import (
	"fmt"
	"os"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/federate-dev/kubectl-federate/test/kubeenv"
)

func (b *bench) write(path string) error {
	var s strings.Builder
	fmt.Fprintf(&s, "# Benchmarks\n\nWritten by `make bench` (`go run ./hack/bench`), which starts local control planes (Kubernetes %s,\n", kubeenv.KubeVersion)
	fmt.Fprintf(&s, "`test/kubeenv`) and runs the plugin against them. Wall times depend on the machine; nothing here is\nasserted by a test.\n\n")
	fmt.Fprintf(&s, "Machine: %s, %d CPUs, %s, %s/%s, %s, %s.\n\n", cpuModel(), runtime.NumCPU(), memTotal(), runtime.GOOS, runtime.GOARCH, runtime.Version(), time.Now().UTC().Format("2006-01-02"))
	if len(b.rounds) > 0 {
		s.WriteString("## Dependent round trips\n\n")
		s.WriteString("| measure | no added delay | 50 ms link | dependent round trips | target | met |\n|---|---|---|---|---|---|\n")
		for _, r := range b.rounds {
			fmt.Fprintf(&s, "| %s | %s (%s requests) | %s | %.1f | ≤ %.0f | %s |\n", r.what, r.fast.Round(time.Millisecond), r.fastRequests,
				r.slow.Round(time.Millisecond), r.count(), r.target, met(r.count() <= r.target))
		}
		s.WriteString(`
Both columns go through the same local TCP proxy in front of each API server; for the second it delays
every chunk by 25 ms in each direction (a delay line, so streams are not slowed further). The runs are made
in pairs, one without delay and one through the link, one after the other; the median of the pairs'
differences, divided by 50 ms, is what the network costs in round trips: local time is in both runs of a
pair and cancels out (it moves by tens of milliseconds from run to run; the two columns are each column's
median). The TLS handshake of each cluster's connection is one of those round trips.

Where they go (the traces at the end show each request). A renewal takes five network round trips, each
waiting on the one before:
1. the TLS handshake of both clusters' connections, at once;
2. each cluster's own record (its cluster ID and handshake key), the operator's identity and the
   provider's pod address ranges (for the sandbox's NetworkPolicy; their chain of reads runs on its own
   from here): every other name read or written carries a cluster ID;
3. every read the run needs on both clusters, the pair's lock, and the certificate request: a nonce value,
   a client key and a CSR the run makes before it knows it can use them;
4. the approval with the watch for the certificate, the nonce used up, the sandbox converging, the
   consumer's request recorded in the Tenant, and the new user bound beside the current one;
5. the records once the certificate is there: the consumer's kubeconfig, Identity and Event, the Tenant's
   status and Event, the binding of the new user alone, the CSR's deletion, the lock's release, and the
   second look at the revocation record and the Tenant.

What makes each early step safe:
- the CSR made in 3 grants nothing until it is approved, and it is approved only once the issuance has
  verified exactly that request against the reads (nonce, signature, pinned key, what was issued before,
  the quota ledger), with the lifetime it asks. A run that cannot use it (an unused nonce of a manual
  handshake is there, another run held the lock, the pairing keeps another lifetime) deletes it unapproved;
- the nonce is used up beside the approval only when the run made it (nobody else knows it, so nobody
  else's request can be issued for it); should that fail, the run fails and takes back what it bound;
- the second look goes with the records only while none of them can grant: the Tenant's status is
  written at exactly the version the run's own write of its spec left (a revocation marking the Tenant
  Revoked meanwhile makes that write fail), and the new user alone is bound by a patch of exactly the
  binding the run wrote (a revocation deleting it makes that patch fail; a patch never makes a binding).
  A revocation counted before the look is seen by it; one counted after deletes the bindings and marks a
  Tenant the records can no longer make Active again. When a condition fails, or a binding has to be made
  (an extra namespace), the look comes after the records, as it always did before.

The measured figure is below five because part of each round trip's server time is in the no-delay run
too. A first pairing
adds two: its namespace and quota ledger are created with the nonce's use (they wait for the pair's
lock) and the sandbox's objects go with the approval, but its user is bound only once the sandbox holds
(a sandbox that is not enforced never gets a binding, even for a moment), one round trip of its own. The
namespace is made before the certificate only by a one-shot run, whose nonce nobody else knew; if no
certificate comes (a signer that issues nothing), the run removes the namespace, waiting for the
namespace controller, and the ledger it created. The consumer's new Identity is made while the provider
binds, so that its status goes with the kubeconfig, and removed again if the binding fails (not on a
consumer the run has just initialized: its API server holds the first create of a just-registered
resource for about two seconds, where an apply is not held).

A never-initialized pair costs what initialization writes (CRDs, admission policies and bindings, the
tenant role, each cluster's key and record, all at once on both clusters) and the wait for the provider
to enforce its new admission policies: the API server compiles them on a one-second ticker
(policyRefreshInterval in k8s.io/apiserver/pkg/admission/plugin/policy/generic), so a new policy is
enforced anywhere from at once to a second after it is stored (measured in the row so named). The policies
go out in the first round trip, and the sandbox's probes repeat every 100 ms while that can last, so the
wait overlaps with the rest of both initializations and the handshake up to the approval.

`)
	}
	if len(b.rows) > 0 {
		s.WriteString("## Measures\n\n| measure | value | target | met |\n|---|---|---|---|\n")
		for _, r := range b.rows {
			fmt.Fprintf(&s, "| %s | %s | %s | %s |\n", r.what, r.value, r.target, r.met)
		}
	}
	if slices.Contains(b.parts, "startup") {
		s.WriteString(startupNote)
	}
	s.WriteString(`
How each is measured:
- requests are the command's own count (its closing "Done in ... with N API requests to the consumer and M to
  the provider" line), or, for revoke, its FEDERATE_TRACE=1 lines; a renewal is authenticate run again on a
  paired couple;
- the tenants are issued in one process from requests signed there (each its own handshake key, nonce and
  CSR), each by a fresh client as a separate generate identity would be; the first ten and the last ten one
  at a time, those between eight at a time; status runs on that provider, alone (-o json, median of 5) and
  beside kubectl get tenants -A on the same provider, both in their default table and as JSON, the two
  commands' runs interleaved (medians of 11);
- the burst prepares 20 such requests, then issues them all at once, each in its own goroutine and client;
- verify runs on a provider of its own with 100 tenants issued the same way (no slice, extra namespace or
  exchange grant): per tenant its sandbox's objects, its identity's bindings and the escape corpus sent as
  that identity (64 dry runs and reads), at most 32 requests in flight;
- --help is the median of 30 runs of each binary, interleaved, after 3 unmeasured runs each, before any
  control plane starts;
- each part runs on just the control planes it needs (2 for the pairings, 1 for the burst, 1 for the
  tenants, 1 for verify, all of the mesh), started for it and stopped after; the first pairings through
  the proxies are of the same two clusters, unpaired again, so both are initialized and enforce their
  admission policies.
`)
	for _, t := range b.traces {
		fmt.Fprintf(&s, "\n## %s through the 50 ms link, as `FEDERATE_TRACE=1` shows it\n\n", t.what)
		s.WriteString("Each line is one API request: which cluster (local is the consumer), when it started after the process\n")
		s.WriteString("did, how long it took, and what it was. Requests that start together are one round trip.\n\n```\n")
		for _, l := range strings.Split(t.stderr, "\n") {
			if strings.HasPrefix(l, "trace ") || strings.Contains(l, "Done in") {
				s.WriteString(l + "\n")
			}
		}
		s.WriteString("```\n")
	}
	fmt.Print(s.String())
	if path == "" {
		return nil
	}
	return os.WriteFile(path, []byte(s.String()), 0o644)
}

// startupNote is the measured reason behind the startup and size rows.
const startupNote = "\n" +
	"The binary was 52.6 MB (kubectl's printing, `-o go-template`, had turned off the linker's dead method\n" +
	"elimination: text/template's executor calls reflect.Value.MethodByName with a name known only at run time,\n" +
	"in state.evalField, so the linker kept every exported method of every linked type; `go build -ldflags=-dumpdep`\n" +
	"shows the chain from printers.Flags.ToPrinter through cli-runtime's GoTemplatePrinter). The Go template\n" +
	"formats now run on pkg/internal/gotemplate: text/template's own parser, an executor for the JSON documents\n" +
	"kubectl's printer executes on (maps, lists, strings, numbers: no methods to call), tested and fuzzed against\n" +
	"text/template for the same output and messages. Cobra's usage template had brought the same executor back\n" +
	"(54 MB again); usage is now printed by a Go function, and hack/linkcheck (in make unit) fails, naming the\n" +
	"chain, whenever a call that looks methods up by name is linked.\n" +
	"\n" +
	"`--help` was about 9.5 ms on a quiet machine. Three things went: the garbage collection that package\n" +
	"initialization's 3 MB of allocations set off just before the command tree was built (1.4 ms: the collector's\n" +
	"pace is four times slower until a command runs, internal/startup, and hack/linkcheck checks that `--help`\n" +
	"collects nothing); the tree itself (1.3 ms in a fresh process: the root builds only the commands its\n" +
	"arguments name and lists the others by name and description; a test holds every answer of the root built\n" +
	"so, help, usage errors, suggestions and completion, to the whole tree's); and client-go's scheme of every\n" +
	"API group (k8s.io/client-go/kubernetes/scheme, whose initializer registered every type of every group:\n" +
	"1.3 ms), which every typed client of client-go imports, and its discovery client, and through that\n" +
	"cli-runtime's print and kubeconfig flags. The plugin now has its own typed clients (pkg/kube: the dozen\n" +
	"groups it uses, each kind's requests as client-go's generated clients send them, over a scheme of those\n" +
	"groups built when the first client is; aggregated discovery), its own kubeconfig flags on clientcmd\n" +
	"(cmdutil.KubeconfigFlags, kubectl's flags and texts) and its own choice of printer over cli-runtime's\n" +
	"printers. Package initialization went from 297 packages and about 3.8 ms to 194 and about 2.4 ms\n" +
	"(`GODEBUG=inittrace=1 kubectl-federate --help`), the binary from 35.0 MB to 22.2 MB; hack/linkcheck and a\n" +
	"depguard rule fail, naming the import chain, if any of those packages is linked again. What is left is\n" +
	"mostly any Go binary's start and the kernel's page faults for what initialization touches.\n"

func cpuModel() string {
	data, err := os.ReadFile("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	for _, l := range strings.Split(string(data), "\n") {
		if k, v, ok := strings.Cut(l, ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

func memTotal() string {
	data, err := os.ReadFile("/proc/meminfo")
	if err != nil {
		return "memory unknown"
	}
	for _, l := range strings.Split(string(data), "\n") {
		if f := strings.Fields(l); len(f) >= 2 && f[0] == "MemTotal:" {
			kb, _ := strconv.Atoi(f[1])
			return fmt.Sprintf("%.0f GiB", float64(kb)/(1<<20))
		}
	}
	return "memory unknown"
}
