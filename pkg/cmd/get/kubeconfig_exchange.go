package get

import (
	"context"
	"errors"
	"fmt"

	"github.com/federate-dev/kubectl-federate/pkg/cmd/flags"
	"github.com/federate-dev/kubectl-federate/pkg/exchange"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// validateExchange checks the identity-exchange flags of `get kubeconfig`.
func (o *KubeconfigOptions) validateExchange() error {
	if !o.Source.Given() {
		if o.Pair.Given() {
			return errors.New("--remote-kubeconfig or --remote-context: only with --for-user, where it gives the provider's consent at once")
		}
		if o.f.DryRun().Active() {
			return errors.New("--dry-run: only with --for-user, the one way get kubeconfig writes (an exchange request); without it nothing is written")
		}
		return nil
	}
	if o.ResourceSlice != "" {
		return errors.New("--resource-slice and --for-user: give one")
	}
	return o.Source.Validate()
}

// runExchange prints what the identity-exchange rules give the user: the pairing's kubeconfig, or an
// exchange credential, asking the provider for it if needed.
func (o *KubeconfigOptions) runExchange(ctx context.Context) error {
	if o.Pair.Given() {
		var cancel context.CancelFunc
		ctx, cancel = context.WithTimeout(ctx, o.Pair.Timeout)
		defer cancel()
	}
	res, err := exchange.ResolveExchange(ctx, o.cluster, o.Source.Request(o.RemoteClusterID), exchange.Client{})
	if errors.Is(err, exchange.ErrNoExchangeRule) {
		return fmt.Errorf("--for-user %q: %w", o.Source.User, err)
	}
	if err != nil {
		return err
	}
	if res.Target == nil {
		data, err := handshake.GetKubeconfig(ctx, o.cluster, o.RemoteClusterID)
		if err != nil {
			return err
		}
		return o.emit(data, fmt.Sprintf("the pairing's kubeconfig (rule %q is privileged)", res.Rule.Name))
	}
	opts := exchange.Options{ProviderID: o.RemoteClusterID, Rule: res.Rule.Name, Target: *res.Target, Scope: res.Rule.GrantScope()}
	var got *exchange.Result
	if o.pair != nil {
		got, err = o.oneShot(ctx, opts)
		err = o.Pair.TimeoutError(ctx, flags.PairError(err))
	} else {
		var via *member.Cluster
		if via, err = handshake.ViaPairing(ctx, o.cluster, o.RemoteClusterID); err != nil {
			return err
		}
		got, err = exchange.RequestExchange(ctx, o.cluster, via, opts)
	}
	if err != nil {
		return flags.PendingHint(err)
	}
	return o.emit(got.Kubeconfig, fmt.Sprintf("the exchange credential of rule %q", res.Rule.Name))
}

// emit prints a kubeconfig, or, in a dry run, which one would be printed: a dry run's stdout is a stream
// of what would be written, and a credential has no place in it (nor in the CI log it ends up in).
func (o *KubeconfigOptions) emit(data []byte, what string) error {
	if o.f.DryRun().Active() {
		_, err := fmt.Fprintf(o.Out, "would print %s\n", what)
		return err
	}
	_, err := o.Out.Write(data)
	return err
}

// oneShot asks and consents at once: the request is left as the provider's administrator, allowed, and
// imported.
func (o *KubeconfigOptions) oneShot(ctx context.Context, opts exchange.Options) (*exchange.Result, error) {
	cSelf, err := o.pair.Consumer.Load(ctx)
	if err != nil {
		return nil, fmt.Errorf("consumer: %w", err)
	}
	pSelf, err := o.pair.Provider.Load(ctx)
	if err != nil {
		return nil, fmt.Errorf("provider: %w", err)
	}
	if pSelf.ClusterID != o.RemoteClusterID {
		return nil, fmt.Errorf("--remote-cluster-id %q: the provider is initialized with cluster ID %q", o.RemoteClusterID, pSelf.ClusterID)
	}
	got, err := exchange.RequestExchange(ctx, o.pair.Consumer, o.pair.Provider, opts)
	var pending *exchange.PendingError
	if !errors.As(err, &pending) {
		return got, err
	}
	// Holding both kubeconfigs is consent to exactly this request, within the same checks as allow
	// exchange: a reach or an unconstrained grant still needs that command's explicit flags.
	if _, err := exchange.AllowExchange(ctx, o.pair.Provider, exchange.AllowExchangeOptions{ConsumerID: cSelf.ClusterID, Names: []string{pending.Request}}); err != nil {
		var reach *exchange.ReachError
		var unconstrained *exchange.UnconstrainedError
		if errors.As(err, &reach) || errors.As(err, &unconstrained) {
			return nil, fmt.Errorf("provider: %w; to accept it, run kubectl federate allow exchange %s --remote-cluster-id %s with --allow-reach %s or --allow-unconstrained on the provider, then this again",
				err, pending.Request, cSelf.ClusterID, pending.Request)
		}
		return nil, fmt.Errorf("provider: %w", err)
	}
	return exchange.RequestExchange(ctx, o.pair.Consumer, o.pair.Provider, opts)
}
