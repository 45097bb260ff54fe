package exchange

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"
)

// Scope is what an exchange credential may do while it acts as its target: Verbs on Resources in
// Namespaces of the provider. The provider grants exactly this through constrained impersonation
// (impersonate-on:user-info:<verb> on these resources), and the API server also checks the target's own
// rights, so the credential gets the intersection of the scope and the target, never more. A scope with
// no namespaces is cluster-wide (every namespace, and cluster-scoped resources), and says so wherever it
// is shown.
type Scope struct {
	Verbs      []string `json:"verbs,omitempty"`
	Resources  []string `json:"resources,omitempty"`
	Namespaces []string `json:"namespaces,omitempty"`
}

// DefaultVerbs read and never write: a rule that names no verbs gets these.
var DefaultVerbs = []string{"get", "list", "watch"}

// DefaultResources are the workload kinds a reader usually wants, without Secrets (which read a
// namespace's credentials) or anything cluster-scoped: a rule that names no resources gets these.
var DefaultResources = []string{
	"configmaps", "cronjobs.batch", "daemonsets.apps", "deployments.apps", "endpoints", "events", "jobs.batch",
	"persistentvolumeclaims", "pods", "pods/log", "replicasets.apps", "services", "statefulsets.apps",
}

// Bounds on a scope, to keep the RBAC it becomes small enough to read.
const (
	MaxScopeVerbs      = 16
	MaxScopeResources  = 64
	MaxScopeNamespaces = 32
)

// readVerbs never change anything.
var readVerbs = []string{"get", "list", "watch"}

// Resource is one entry of a scope, written as kubectl writes it: resource[.group][/subresource]
// ("pods", "pods/log", "deployments.apps", "deployments.apps/scale"), or "*" for every resource of every
// group.
type Resource struct {
	Group, Resource, Subresource string
}

// ParseResource reads one scope entry.
func ParseResource(s string) (Resource, error) {
	if s == "*" {
		return Resource{Group: "*", Resource: "*"}, nil
	}
	name, sub, hasSub := strings.Cut(s, "/")
	res, group, _ := strings.Cut(name, ".")
	if res == "" || len(validation.IsDNS1123Label(res)) > 0 {
		return Resource{}, fmt.Errorf("%q: must be resource[.group][/subresource], as kubectl writes it (pods, pods/log, deployments.apps), or *", clip(s))
	}
	if group != "" && len(validation.IsDNS1123Subdomain(group)) > 0 {
		return Resource{}, fmt.Errorf("%q: the group %q is not a valid API group", clip(s), clip(group))
	}
	if hasSub && (sub == "" || len(validation.IsDNS1123Label(sub)) > 0) {
		return Resource{}, fmt.Errorf("%q: the subresource %q is not valid", clip(s), clip(sub))
	}
	return Resource{Group: group, Resource: res, Subresource: sub}, nil
}

// String writes r back as ParseResource reads it.
func (r Resource) String() string {
	if r.Resource == "*" {
		return "*"
	}
	s := r.Resource
	if r.Group != "" {
		s += "." + r.Group
	}
	if r.Subresource != "" {
		s += "/" + r.Subresource
	}
	return s
}

// RBACResource is the resource as an RBAC rule names it ("pods/log").
func (r Resource) RBACResource() string {
	if r.Subresource != "" {
		return r.Resource + "/" + r.Subresource
	}
	return r.Resource
}

// WithDefaults fills what a scope leaves out.
func (s Scope) WithDefaults() Scope {
	if len(s.Verbs) == 0 {
		s.Verbs = slices.Clone(DefaultVerbs)
	}
	if len(s.Resources) == 0 {
		s.Resources = slices.Clone(DefaultResources)
	}
	return s
}

// Canonical returns the scope with defaults, each list sorted and without repeats: two scopes that
// grant the same thing are equal.
func (s Scope) Canonical() Scope {
	s = s.WithDefaults()
	canon := func(l []string) []string { return slices.Compact(slices.Sorted(slices.Values(l))) }
	return Scope{Verbs: canon(s.Verbs), Resources: canon(s.Resources), Namespaces: canon(s.Namespaces)}
}

// ClusterWide says whether the scope names no namespace.
func (s Scope) ClusterWide() bool { return len(s.Namespaces) == 0 }

// ParsedResources returns the scope's resources; the scope must have passed ValidateScope.
func (s Scope) ParsedResources() []Resource {
	out := make([]Resource, 0, len(s.Resources))
	for _, r := range s.Resources {
		if p, err := ParseResource(r); err == nil {
			out = append(out, p)
		}
	}
	return out
}

// ValidateScope checks a scope, naming field in errors. An empty scope is valid: it means the defaults.
func ValidateScope(field string, s Scope) error {
	if len(s.Verbs) > MaxScopeVerbs {
		return fmt.Errorf("%s.verbs: has %d verbs, at most %d are allowed", field, len(s.Verbs), MaxScopeVerbs)
	}
	for i, v := range s.Verbs {
		if v != "*" && !verbPattern(v) {
			return fmt.Errorf("%s.verbs[%d] %q: must be a verb such as get, list, watch, create, update, patch, delete (lowercase letters), or *", field, i, clip(v))
		}
	}
	if len(s.Resources) > MaxScopeResources {
		return fmt.Errorf("%s.resources: has %d resources, at most %d are allowed", field, len(s.Resources), MaxScopeResources)
	}
	for i, r := range s.Resources {
		if _, err := ParseResource(r); err != nil {
			return fmt.Errorf("%s.resources[%d] %w", field, i, err)
		}
	}
	if len(s.Namespaces) > MaxScopeNamespaces {
		return fmt.Errorf("%s.namespaces: has %d namespaces, at most %d are allowed", field, len(s.Namespaces), MaxScopeNamespaces)
	}
	for i, ns := range s.Namespaces {
		if len(validation.IsDNS1123Label(ns)) > 0 {
			return fmt.Errorf("%s.namespaces[%d] %q: must be a namespace name (a DNS label)", field, i, clip(ns))
		}
	}
	return nil
}

func verbPattern(v string) bool {
	if v == "" || len(v) > 63 {
		return false
	}
	for _, c := range v {
		if c < 'a' || c > 'z' {
			return false
		}
	}
	return true
}

// String is the scope as every listing shows it: "get,list on pods,pods/log in team-a,team-b", or
// "... cluster-wide".
func (s Scope) String() string {
	s = s.Canonical()
	where := "cluster-wide"
	if !s.ClusterWide() {
		where = "in " + strings.Join(s.Namespaces, ",")
	}
	return strings.Join(s.Verbs, ",") + " on " + strings.Join(s.Resources, ",") + " " + where
}

// Reach classes: what a scope holds that hands out more than a share of the provider. Each needs the
// provider's administrator's explicit override, for that one request.
const (
	ReachClusterWrite   = "cluster-wide write"
	ReachSecrets        = "Secrets"
	ReachRBAC           = "RBAC"
	ReachImpersonation  = "impersonation"
	ReachTokens         = "ServiceAccount tokens"
	ReachCSRApproval    = "CSR approval"
	ReachNodeProxy      = "nodes/proxy"
	ReachEveryResource  = "every resource (*)"
	ReachEveryVerb      = "every verb (*)"
	rbacGroup           = "rbac.authorization.k8s.io"
	certificatesGroup   = "certificates.k8s.io"
	authenticationGroup = "authentication.k8s.io"
)

// Reach lists, sorted, the reach classes the scope holds: a cluster-wide verb that is not a read; any
// verb on Secrets; writes to RBAC or its escalate and bind verbs; impersonation; minting ServiceAccount
// tokens; approving or signing CSRs; nodes/proxy; and the wildcards, which hold all of these.
func (s Scope) Reach() []string {
	s = s.Canonical()
	found := map[string]bool{}
	write := slices.ContainsFunc(s.Verbs, func(v string) bool { return !slices.Contains(readVerbs, v) })
	if s.ClusterWide() && write {
		found[ReachClusterWrite] = true
	}
	if slices.Contains(s.Verbs, "*") {
		found[ReachEveryVerb] = true
	}
	for _, v := range s.Verbs {
		switch {
		case v == "escalate" || v == "bind":
			found[ReachRBAC] = true
		case strings.HasPrefix(v, "impersonate"):
			found[ReachImpersonation] = true
		case v == "approve" || v == "sign":
			found[ReachCSRApproval] = true
		}
	}
	for _, r := range s.ParsedResources() {
		if r.Resource == "*" {
			found[ReachEveryResource] = true
			found[ReachSecrets] = true
			if write {
				found[ReachRBAC], found[ReachTokens], found[ReachCSRApproval] = true, true, true
			}
			found[ReachNodeProxy] = true
			continue
		}
		switch {
		case r.Group == "" && r.Resource == "secrets":
			found[ReachSecrets] = true
		case r.Group == rbacGroup && write:
			found[ReachRBAC] = true
		case r.Group == "" && r.Resource == "serviceaccounts" && r.Subresource == "token" && write:
			found[ReachTokens] = true
		case (r.Group == "" || r.Group == authenticationGroup) && slices.Contains([]string{"users", "groups", "serviceaccounts", "uids", "userextras"}, r.Resource) &&
			slices.ContainsFunc(s.Verbs, func(v string) bool { return v == "*" || strings.HasPrefix(v, "impersonate") }):
			found[ReachImpersonation] = true
		case r.Group == certificatesGroup && (r.Subresource == "approval" || r.Resource == "signers") && write:
			found[ReachCSRApproval] = true
		case r.Group == "" && r.Resource == "nodes" && r.Subresource == "proxy":
			found[ReachNodeProxy] = true
		}
	}
	return slices.Sorted(func(yield func(string) bool) {
		for k := range found {
			if !yield(k) {
				return
			}
		}
	})
}

// GrantHash names what a credential is for, whatever its key: a (rule, target, scope). 32 hex digits
// (128 bits) of SHA-256 over a length-prefixed encoding, so that no two different grants share it.
func GrantHash(rule string, t Target, s Scope) string {
	return hashFields(grantFields(rule, t, s)...)
}

// RequestHash names one request: a grant for one public key (the credential's PKIX DER). A new key is a
// new request, a new user and a new consent.
func RequestHash(rule string, t Target, s Scope, publicKeyDER []byte) string {
	return hashFields(append(grantFields(rule, t, s), "key", string(publicKeyDER))...)
}

func grantFields(rule string, t Target, s Scope) []string {
	s = s.Canonical()
	f := []string{"kubectl-federate exchange v2", "rule", rule, "user", t.User, "uid", t.UID}
	// Each list goes with its length, so that an item can never be read as the next list's name.
	list := func(name string, items []string) {
		f = append(append(f, name, fmt.Sprint(len(items))), items...)
	}
	list("groups", slices.Sorted(slices.Values(t.Groups)))
	list("verbs", s.Verbs)
	list("resources", s.Resources)
	list("namespaces", s.Namespaces)
	return f
}

// hashFields hashes each field with its length before it, so that no choice of values can move a
// boundary between fields.
func hashFields(fields ...string) string {
	h := sha256.New()
	for _, f := range fields {
		fmt.Fprintf(h, "%d:%s\n", len(f), f)
	}
	return hex.EncodeToString(h.Sum(nil)[:16])
}
