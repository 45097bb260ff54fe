package dryrun

import (
	"net/http"
	"net/url"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/yaml"
)

// Target is what a request's path names, as the API server reads it.
type Target struct {
	GVR                          schema.GroupVersionResource
	Namespace, Name, Subresource string
}

// Write is one request as the dry-run layer sees it, whatever client sent it (an HTTP request, or a fake
// clientset's action in the unit tier).
type Write struct {
	Target      Target
	Method      string
	ContentType string
	Body        []byte
	Query       url.Values
}

// reviews are the writes that store nothing: access and token reviews answer a question. They are sent
// as they are in every mode.
var reviews = map[string]bool{
	"subjectaccessreviews": true, "selfsubjectaccessreviews": true, "localsubjectaccessreviews": true,
	"selfsubjectrulesreviews": true, "tokenreviews": true, "selfsubjectreviews": true,
}

// IsWrite is the one rule of what a dry run holds back: a request that changes what the cluster stores.
// Not a read, not a review, and not a request that is a server-side dry run already (the sandbox's
// admission probes are).
func IsWrite(w Write) bool {
	return writeMethod(w.Method) && !reviews[w.Target.GVR.Resource] && w.Query.Get("dryRun") != "All"
}

func writeMethod(m string) bool {
	switch m {
	case http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete:
		return true
	}
	return false
}

// action names what a write does, as a dry run prints it.
func (w Write) action() string {
	switch w.Method {
	case http.MethodPost:
		return "create"
	case http.MethodPut:
		return "update"
	case http.MethodDelete:
		return "delete"
	}
	if strings.HasPrefix(w.ContentType, "application/apply-patch") {
		return "apply"
	}
	return "patch"
}

// Object is the request's body as an object (an apply patch may be YAML); nil when there is none.
func (w Write) Object() map[string]any {
	if len(w.Body) == 0 {
		return nil
	}
	var obj map[string]any
	if err := yaml.Unmarshal(w.Body, &obj); err != nil {
		return nil
	}
	return obj
}

// HostPath is the path part of a rest.Config's Host, without its trailing slash: the prefix every request
// path of that cluster starts with.
func HostPath(host string) string {
	u, err := url.Parse(host)
	if err != nil || u.Host == "" {
		return ""
	}
	return strings.TrimSuffix(u.Path, "/")
}

// parsePath reads /api/v1/... and /apis/G/V/... paths as the API server's request-info resolver does
// (namespaces' own subresources are status and finalize).
func parsePath(prefix, p string) (Target, bool) {
	if !strings.HasPrefix(p, prefix+"/") {
		return Target{}, false
	}
	parts := strings.Split(strings.Trim(p[len(prefix):], "/"), "/")
	var t Target
	switch {
	case len(parts) >= 3 && parts[0] == "api":
		t.GVR.Version, parts = parts[1], parts[2:]
	case len(parts) >= 4 && parts[0] == "apis":
		t.GVR.Group, t.GVR.Version, parts = parts[1], parts[2], parts[3:]
	default:
		return t, false
	}
	if parts[0] == "namespaces" && len(parts) > 2 && parts[2] != "status" && parts[2] != "finalize" {
		t.Namespace, parts = parts[1], parts[2:]
	}
	t.GVR.Resource = parts[0]
	if len(parts) > 1 {
		t.Name = parts[1]
	}
	if len(parts) > 2 {
		t.Subresource = strings.Join(parts[2:], "/")
	}
	return t, true
}

func (t Target) key() string {
	return t.GVR.String() + "|" + t.Namespace + "|" + t.Name
}

// path is the request path of the object (or collection) t names.
func (t Target) path() string {
	p := "/api/" + t.GVR.Version
	if t.GVR.Group != "" {
		p = "/apis/" + t.GVR.Group + "/" + t.GVR.Version
	}
	if t.Namespace != "" {
		p += "/namespaces/" + t.Namespace
	}
	p += "/" + t.GVR.Resource
	if t.Name != "" {
		p += "/" + t.Name
	}
	return p
}
