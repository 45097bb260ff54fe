package exchange

import (
	"bytes"
	"cmp"
	"encoding/base64"
	"errors"
	"fmt"
	"maps"
	"net"
	"net/url"
	"regexp"
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"

	"k8s.io/apimachinery/pkg/util/validation"
	"sigs.k8s.io/yaml"
)

// Rule types, as cluster-gateway names them.
const (
	Privileged    = "PrivilegedIdentityExchanger"
	StaticMapping = "StaticMappingIdentityExchanger"
	External      = "ExternalIdentityExchanger"
)

// Kind and the apiVersions of a rule file: cluster-gateway's own, so its files are accepted as they are,
// and ours.
const (
	Kind              = "ClusterGatewayConfiguration"
	APIVersionGateway = "cluster.core.oam.dev/v1alpha1"
	APIVersion        = "federate.dev/v1alpha1"
)

// MaxFileSize bounds a rule file; MaxRules the rules in it.
const (
	MaxFileSize = 256 << 10
	MaxRules    = 256
	// MaxRuleNameLength keeps a rule's name short enough to read in a request's name, <rule>-<32 hex>.
	MaxRuleNameLength = 40
)

// Config is a rule file.
type Config struct {
	APIVersion string     `json:"apiVersion"`
	Kind       string     `json:"kind"`
	Spec       ConfigSpec `json:"spec"`
}

// ConfigSpec holds the exchanger.
type ConfigSpec struct {
	ClientIdentityExchanger ClientIdentityExchanger `json:"clientIdentityExchanger"`
}

// ClientIdentityExchanger holds the rules.
type ClientIdentityExchanger struct {
	Rules []Rule `json:"rules"`
}

// Rule maps the users its source matches to how they are presented on the provider.
type Rule struct {
	Name     string  `json:"name"`
	Type     string  `json:"type"`
	Priority int     `json:"priority,omitempty"`
	Source   Source  `json:"source"`
	Target   *Target `json:"target,omitempty"`
	// Scope is what the credential may do as its target (static and external rules); nil means the
	// defaults (DefaultVerbs on DefaultResources, cluster-wide).
	Scope *Scope `json:"scope,omitempty"`
	URL   string `json:"url,omitempty"`
	// CABundle is PEM (base64 in the file), trusted for URL in addition to the system roots.
	CABundle []byte `json:"caBundle,omitempty"`

	compiled matchers
}

// Source says whom a rule applies to; every matcher set must match.
type Source struct {
	User    string `json:"user,omitempty"`
	Group   string `json:"group,omitempty"`
	UID     string `json:"uid,omitempty"`
	Cluster string `json:"cluster,omitempty"` // the provider's cluster ID: where the request goes

	UserPattern    string `json:"userPattern,omitempty"`
	GroupPattern   string `json:"groupPattern,omitempty"`
	UIDPattern     string `json:"uidPattern,omitempty"`
	ClusterPattern string `json:"clusterPattern,omitempty"`
}

// Target is who a user is on the provider.
type Target struct {
	User   string   `json:"user"`
	Groups []string `json:"groups,omitempty"`
	UID    string   `json:"uid,omitempty"`
}

// Request is a user of the consumer reaching the provider Cluster.
type Request struct {
	User    string   `json:"user"`
	Groups  []string `json:"groups"`
	UID     string   `json:"uid"`
	Cluster string   `json:"cluster"`
}

type matchers struct {
	user, group, uid, cluster *regexp.Regexp
}

// Parse strictly decodes and validates a rule file: anything that is not exactly a valid rule file is
// refused with an error naming the field, so a stored file is always one Resolve can use.
func Parse(data []byte) (*Config, error) {
	if len(bytes.TrimSpace(data)) == 0 {
		return nil, errors.New("the rule file is empty")
	}
	if len(data) > MaxFileSize {
		return nil, fmt.Errorf("the rule file is %d bytes, more than the %d allowed", len(data), MaxFileSize)
	}
	var generic any
	if err := yaml.Unmarshal(data, &generic); err != nil {
		return nil, fmt.Errorf("the rule file: is not valid YAML or JSON: %w", err)
	}
	if err := unknownFields("", generic, fileFields); err != nil {
		return nil, err
	}
	if err := checkCABundles(generic); err != nil {
		return nil, err
	}
	var cfg Config
	if err := yaml.UnmarshalStrict(data, &cfg); err != nil {
		return nil, fmt.Errorf("the rule file: %w", err)
	}
	if err := cfg.Validate(); err != nil {
		return nil, err
	}
	return &cfg, nil
}

// field is a known key and, for an object or a list of objects, the keys it may hold.
type field map[string]field

var (
	sourceFields = field{"user": nil, "group": nil, "uid": nil, "cluster": nil,
		"userPattern": nil, "groupPattern": nil, "uidPattern": nil, "clusterPattern": nil}
	ruleFields = field{"name": nil, "type": nil, "priority": nil, "source": sourceFields,
		"target": {"user": nil, "groups": nil, "uid": nil}, "scope": {"verbs": nil, "resources": nil, "namespaces": nil},
		"url": nil, "caBundle": nil}
	fileFields = field{"apiVersion": nil, "kind": nil, "metadata": nil,
		"spec": {"clientIdentityExchanger": {"rules": ruleFields}}}
)

// unknownFields names the first key of v that known does not list, with its path, which the strict
// decoder leaves out of its message.
func unknownFields(path string, v any, known field) error {
	if known == nil {
		return nil
	}
	switch t := v.(type) {
	case map[string]any:
		for _, k := range slices.Sorted(maps.Keys(t)) {
			sub, ok := known[k]
			p := strings.TrimPrefix(path+"."+k, ".")
			if !ok {
				return fmt.Errorf("%s: unknown field", p)
			}
			if k == "metadata" && path == "" {
				continue
			}
			if err := unknownFields(p, t[k], sub); err != nil {
				return err
			}
		}
	case []any:
		for i, e := range t {
			if err := unknownFields(fmt.Sprintf("%s[%d]", path, i), e, known); err != nil {
				return err
			}
		}
	}
	return nil
}

// checkCABundles names the rule whose caBundle is not base64: the strict decoder's own message ("illegal
// base64 data at input byte 14") names no field.
func checkCABundles(generic any) error {
	top, _ := generic.(map[string]any)
	spec, _ := top["spec"].(map[string]any)
	cie, _ := spec["clientIdentityExchanger"].(map[string]any)
	rules, _ := cie["rules"].([]any)
	for i, r := range rules {
		m, _ := r.(map[string]any)
		v, ok := m["caBundle"]
		if !ok {
			continue
		}
		field := fmt.Sprintf("spec.clientIdentityExchanger.rules[%d].caBundle", i)
		s, isString := v.(string)
		if !isString {
			return fmt.Errorf("%s: must be a string, the base64 of PEM certificates", field)
		}
		if _, err := base64.StdEncoding.DecodeString(s); err != nil {
			return fmt.Errorf("%s: is not base64 (%w): give the base64 of PEM certificates, for example the output of base64 -w0 ca.crt", field, err)
		}
	}
	return nil
}

// Validate checks every field and compiles the patterns.
func (c *Config) Validate() error {
	if c.APIVersion != APIVersionGateway && c.APIVersion != APIVersion {
		return fmt.Errorf("apiVersion %q: must be %s or %s", c.APIVersion, APIVersionGateway, APIVersion)
	}
	if c.Kind != Kind {
		return fmt.Errorf("kind %q: must be %s", c.Kind, Kind)
	}
	rules := c.Spec.ClientIdentityExchanger.Rules
	if len(rules) > MaxRules {
		return fmt.Errorf("spec.clientIdentityExchanger.rules: has %d rules, at most %d are allowed", len(rules), MaxRules)
	}
	seen := map[string]int{}
	for i := range rules {
		field := fmt.Sprintf("spec.clientIdentityExchanger.rules[%d]", i)
		if j, dup := seen[rules[i].Name]; dup {
			return fmt.Errorf("%s.name %q: rules[%d] has the same name", field, rules[i].Name, j)
		}
		seen[rules[i].Name] = i
		if err := rules[i].validate(field); err != nil {
			return err
		}
	}
	return nil
}

func (r *Rule) validate(field string) error {
	if r.Name == "" {
		return fmt.Errorf("%s.name: must not be empty", field)
	}
	if len(r.Name) > MaxRuleNameLength || len(validation.IsDNS1123Label(r.Name)) > 0 {
		return fmt.Errorf("%s.name %q: must be a DNS label of at most %d characters (lowercase letters, digits and '-')", field, clip(r.Name), MaxRuleNameLength)
	}
	s := r.Source
	for _, pair := range []struct{ exact, pattern, name string }{
		{s.User, s.UserPattern, "user"}, {s.Group, s.GroupPattern, "group"}, {s.UID, s.UIDPattern, "uid"}, {s.Cluster, s.ClusterPattern, "cluster"},
	} {
		if pair.exact != "" && pair.pattern != "" {
			return fmt.Errorf("%s.source: %s and %sPattern are both set: give one", field, pair.name, pair.name)
		}
	}
	if s == (Source{}) {
		return fmt.Errorf("%s.source: must set at least one matcher (user, group, uid, cluster or a pattern): a rule for everyone is refused", field)
	}
	var err error
	for _, p := range []struct {
		pattern, name string
		into          **regexp.Regexp
	}{
		{s.UserPattern, "userPattern", &r.compiled.user}, {s.GroupPattern, "groupPattern", &r.compiled.group},
		{s.UIDPattern, "uidPattern", &r.compiled.uid}, {s.ClusterPattern, "clusterPattern", &r.compiled.cluster},
	} {
		if p.pattern == "" {
			continue
		}
		if *p.into, err = regexp.Compile("^(?:" + p.pattern + ")$"); err != nil {
			return fmt.Errorf("%s.source.%s %q: is not a valid regular expression: %w", field, p.name, clip(p.pattern), err)
		}
	}
	if r.Scope != nil {
		if err := ValidateScope(field+".scope", *r.Scope); err != nil {
			return err
		}
	}
	switch r.Type {
	case Privileged:
		if r.Target != nil {
			return fmt.Errorf("%s.target: a %s rule hands out the pairing's own identity and takes no target", field, Privileged)
		}
		if r.Scope != nil {
			return fmt.Errorf("%s.scope: a %s rule hands out the pairing's own identity, whose rights are its sandbox, and takes no scope", field, Privileged)
		}
		if r.URL != "" || len(r.CABundle) > 0 {
			return fmt.Errorf("%s.url: only an %s rule has one", field, External)
		}
	case StaticMapping:
		if r.Target == nil {
			return fmt.Errorf("%s.target: a %s rule needs one (at least target.user)", field, StaticMapping)
		}
		if err := ValidateTarget(field+".target", *r.Target); err != nil {
			return err
		}
		if r.URL != "" || len(r.CABundle) > 0 {
			return fmt.Errorf("%s.url: only an %s rule has one", field, External)
		}
	case External:
		if r.Target != nil {
			return fmt.Errorf("%s.target: an %s rule's target comes from its service, not from the file", field, External)
		}
		if err := ValidateURL(field+".url", r.URL); err != nil {
			return err
		}
		if len(r.CABundle) > 0 {
			if _, err := certPool(r.CABundle); err != nil {
				return fmt.Errorf("%s.caBundle: %w", field, err)
			}
		}
	case "":
		return fmt.Errorf("%s.type: must be one of %s, %s, %s", field, Privileged, StaticMapping, External)
	default:
		return fmt.Errorf("%s.type %q: must be one of %s, %s, %s", field, clip(r.Type), Privileged, StaticMapping, External)
	}
	return nil
}

// ValidateTarget refuses a target that is not a plain identity: empty, over-long, in the reserved system:
// namespace (system:masters and its like would hand out the provider's control plane), or one of kubectl
// federate's own users and groups (kubectl-federate:, where every consumer's pairing identity is).
func ValidateTarget(field string, t Target) error {
	if t.User == "" {
		return fmt.Errorf("%s.user: must not be empty", field)
	}
	check := func(f, v string) error {
		switch {
		case v == "":
			return fmt.Errorf("%s: must not be empty", f)
		case utf8.RuneCountInString(v) > 253:
			return fmt.Errorf("%s: is %d characters, at most 253 are allowed", f, utf8.RuneCountInString(v))
		case strings.HasPrefix(v, "system:"):
			return fmt.Errorf("%s %q: names in the system: namespace are the provider's own (system:masters and its like would hand out its control plane)", f, clip(v))
		case strings.HasPrefix(v, "kubectl-federate:"):
			return fmt.Errorf("%s %q: names starting with kubectl-federate: are the identities of pairings (another consumer's among them)", f, clip(v))
		case !utf8.ValidString(v):
			return fmt.Errorf("%s %q: is not valid UTF-8", f, clip(v))
		}
		if r, bad := badNameRune(v); bad {
			return fmt.Errorf("%s %q: holds %U: a name is text that shows as what it is (letters, with at most two combining marks each, digits, punctuation and symbols; no space, control, format or invisible character), so that what a listing shows is what is granted", f, clip(v), r)
		}
		return nil
	}
	if err := check(field+".user", t.User); err != nil {
		return err
	}
	if len(t.Groups) > 16 {
		return fmt.Errorf("%s.groups: has %d groups, at most 16 are allowed", field, len(t.Groups))
	}
	for i, g := range t.Groups {
		if err := check(fmt.Sprintf("%s.groups[%d]", field, i), g); err != nil {
			return err
		}
	}
	if t.UID != "" {
		if err := check(field+".uid", t.UID); err != nil {
			return err
		}
	}
	return nil
}

// badNameRune finds the first character a target's user, group or uid may not hold. Allowed: letters,
// digits, punctuation and symbols (Unicode categories L, N, P and S), and combining marks (M), at most two
// in a row and never first. Refused: every space (a space lets a name imitate a table's next column),
// control character (a TAB or an escape sequence rewrites a listing), format character (a bidi override or
// a zero-width character shows another name than the one granted), private-use, surrogate or unassigned
// code point, the characters that render as nothing (the default-ignorable ones, such as the Hangul
// fillers, variation selectors, and the blank Braille pattern), and runs of combining marks, which stack on
// one column and shift the rest of a row.
func badNameRune(v string) (rune, bool) {
	marks := 0
	for i, r := range v {
		switch {
		case !unicode.In(r, unicode.L, unicode.M, unicode.N, unicode.P, unicode.S), invisibleRune(r):
			return r, true
		case unicode.Is(unicode.M, r):
			if marks++; i == 0 || marks > 2 {
				return r, true
			}
		default:
			marks = 0
		}
	}
	return 0, false
}

// invisibleRune: a character that renders as nothing, though it is a letter or a symbol.
func invisibleRune(r rune) bool {
	return unicode.Is(unicode.Other_Default_Ignorable_Code_Point, r) || unicode.Is(unicode.Variation_Selector, r) || r == '\u2800'
}

// ValidateURL accepts an https URL, or http to a loopback address only (a service on the same machine,
// where nothing travels the network).
func ValidateURL(field, raw string) error {
	if raw == "" {
		return fmt.Errorf("%s: an %s rule needs the https URL of its service", field, External)
	}
	u, err := url.Parse(raw)
	if err != nil {
		return fmt.Errorf("%s %q: is not a URL", field, clip(raw))
	}
	if u.Host == "" || u.User != nil || u.Fragment != "" {
		return fmt.Errorf("%s %q: must be an absolute https:// URL with a host and no user or fragment", field, clip(raw))
	}
	switch u.Scheme {
	case "https":
		return nil
	case "http":
		if loopback(u.Hostname()) {
			return nil
		}
	}
	return fmt.Errorf("%s %q: must be https (http only to a loopback address: 127.0.0.0/8, ::1, localhost)", field, clip(raw))
}

func loopback(host string) bool {
	if host == "localhost" {
		return true
	}
	ip := net.ParseIP(host)
	return ip != nil && ip.IsLoopback()
}

// InOrder returns the rules in the order Resolve weighs them: the highest priority first, file order among
// equals. The first that matches a request decides it.
func InOrder(rules []Rule) []Rule {
	out := slices.Clone(rules)
	slices.SortStableFunc(out, func(a, b Rule) int { return cmp.Compare(b.Priority, a.Priority) })
	return out
}

// Resolve returns the rule that decides for req: the highest priority among the rules whose every
// matcher matches, the first in file order among equals. Rules must come from Parse or a validated Config.
func Resolve(rules []Rule, req Request) (*Rule, bool) {
	var best *Rule
	for i := range rules {
		r := &rules[i]
		if !r.matches(req) {
			continue
		}
		if best == nil || r.Priority > best.Priority {
			best = r
		}
	}
	return best, best != nil
}

func (r *Rule) matches(req Request) bool {
	s, m := r.Source, r.compiled
	// A pattern that was never compiled (a Config not validated) matches nobody rather than everybody.
	one := func(exact, pattern string, re *regexp.Regexp, v string) bool {
		if exact != "" && exact != v {
			return false
		}
		return pattern == "" || (re != nil && re.MatchString(v))
	}
	if !one(s.User, s.UserPattern, m.user, req.User) || !one(s.UID, s.UIDPattern, m.uid, req.UID) || !one(s.Cluster, s.ClusterPattern, m.cluster, req.Cluster) {
		return false
	}
	if s.Group != "" && !slices.Contains(req.Groups, s.Group) {
		return false
	}
	if s.GroupPattern != "" && (m.group == nil || !slices.ContainsFunc(req.Groups, m.group.MatchString)) {
		return false
	}
	return true
}

// GrantScope is the scope a credential of this rule gets: the rule's, with the defaults filled in.
func (r *Rule) GrantScope() Scope {
	if r.Scope == nil {
		return Scope{}.Canonical()
	}
	return r.Scope.Canonical()
}

func clip(s string) string {
	if len(s) > 70 {
		s = s[:67] + "..."
	}
	return strings.ToValidUTF8(s, "?")
}
