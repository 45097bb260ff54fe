package flags

import (
	"errors"
	"fmt"

	"github.com/federate-dev/kubectl-federate/pkg/grants"
	"github.com/federate-dev/kubectl-federate/pkg/handshake"
	"github.com/federate-dev/kubectl-federate/pkg/member"
)

// NextStep adds to a domain error the command that comes next, in this tool's (or kubectl's) terms: the
// domain says what is wrong and knows no command, the command layer says what to run. An error that
// has been given its next step already is left as it is.
func NextStep(err error) error {
	if err == nil {
		return nil
	}
	var hinted *nextStepError
	if errors.As(err, &hinted) {
		return err
	}
	step := nextStep(err)
	if step == "" {
		return err
	}
	return &nextStepError{err: err, step: step}
}

type nextStepError struct {
	err  error
	step string
}

func (e *nextStepError) Error() string { return e.err.Error() + "; " + e.step }
func (e *nextStepError) Unwrap() error { return e.err }

func nextStep(err error) string {
	var notAccepted *member.SliceNotAcceptedError
	var notRequested *member.SliceNotRequestedError
	var stillAllowed *member.StillAllowedError
	var noNamespace *handshake.NamespaceNotFoundError
	switch {
	case errors.Is(err, handshake.ErrStaleIdentity):
		return "import the identity the provider makes from the latest tenant.yaml (send that to the provider's generate identity -f)"
	case errors.As(err, &noNamespace):
		return "create it first (kubectl create namespace " + noNamespace.Namespace + "), or choose another"
	case errors.As(err, &notAccepted):
		return fmt.Sprintf("its administrator accepts it with: kubectl federate accept resourceslice %s --remote-cluster-id %s",
			notAccepted.Slice, notAccepted.ConsumerID)
	case errors.As(err, &notRequested):
		return fmt.Sprintf("its administrator asks for it with: kubectl federate create resourceslice %s", notRequested.Slice)
	case errors.As(err, &stillAllowed):
		return "find what binds it with: kubectl auth can-i --list --as " + stillAllowed.User
	case errors.Is(err, grants.ErrNoClass):
		return "create the class first: kubectl federate create resourceslice-class NAME"
	case errors.Is(err, member.ErrNoClusterID):
		return "" // the first steps of the manual flow say how to name the cluster (create nonce, generate tenant)
	case errors.Is(err, member.ErrNotInitialized):
		return "run kubectl federate init"
	}
	return ""
}
