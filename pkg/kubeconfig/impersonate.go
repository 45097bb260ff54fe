package kubeconfig

import (
	"errors"
	"slices"

	"k8s.io/client-go/tools/clientcmd"
)

// Impersonate makes a kubeconfig's current user act as user, groups and uid (kubectl's --as,
// --as-group, --as-uid), for a credential allowed to impersonate that identity only.
func Impersonate(data []byte, user string, groups []string, uid string) ([]byte, error) {
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return nil, err
	}
	ctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok {
		return nil, errors.New("kubeconfig has no current context")
	}
	ai, ok := cfg.AuthInfos[ctx.AuthInfo]
	if !ok {
		return nil, errors.New("kubeconfig's current context names no user")
	}
	ai.Impersonate, ai.ImpersonateGroups, ai.ImpersonateUID = user, slices.Clone(groups), uid
	return clientcmd.Write(*cfg)
}

// WithNamespace sets the namespace of a kubeconfig's current context.
func WithNamespace(data []byte, namespace string) ([]byte, error) {
	cfg, err := clientcmd.Load(data)
	if err != nil {
		return nil, err
	}
	ctx, ok := cfg.Contexts[cfg.CurrentContext]
	if !ok {
		return nil, errors.New("kubeconfig has no current context")
	}
	ctx.Namespace = namespace
	return clientcmd.Write(*cfg)
}
