package kubeenv

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
)

// The NetworkPolicy engine: kube-router's firewall (its network policy controller alone: no routing, no
// service proxy), built from the last kube-router on the Go module proxy, v2.1.0. That release gets dual
// stack wrong in two ways, fixed upstream later (kube-router#1653, #1665): its IPv6 rules name their sets
// without the inet6: prefix ipset gives them, so no IPv6 policy with a selector loads; and each family's
// half reads every set back after a sync (ipset save) and restores them all at the next, the other
// family's from that stale copy, so one family's sets lag a sync behind at random; and its pod chains
// refuse IPv6 neighbour discovery. Two shims first on its PATH (routerShims) mend these: an
// ip6tables-restore that adds the prefix and accepts neighbour solicitations and advertisements, and an
// ipset whose save shows no set, so that each half restores only the sets it computed.
const (
	engineWait      = 90 * time.Second
	engineNamespace = "kube-system"
	// serviceCIDRv6 is only for kube-router, which wants a service range of each family it runs (the API
	// servers here are single-stack, 10.0.0.0/24).
	serviceCIDRv6 = "fd00:fed:2::/112"
)

// EngineName names the engine's DaemonSet in kube-system, as kube-router's own manifests name it, so that
// a check looking for a known engine finds it as it would on a real cluster.
const EngineName = "kube-router"

// StartNetworkPolicy installs kube-router's firewall as a privileged, host-network DaemonSet in
// kube-system, as kube-router's manifests do: the pod runs the kube-router built for this machine, with
// the host's root as its root (probe chroot), so that it uses the host's iptables and ipset. It returns
// once the chains are in the kernel, for both families.
func (n *Node) StartNetworkPolicy(ctx context.Context) error {
	shims, err := n.routerShims()
	if err != nil {
		return err
	}
	cs, err := kubernetes.NewForConfig(n.cluster.Config)
	if err != nil {
		return err
	}
	labels := map[string]string{"k8s-app": EngineName}
	args := []string{"/probe", "chroot", "/host", n.bins.KubeRouter,
		"--kubeconfig=" + n.cluster.Kubeconfig, "--hostname-override=" + n.Name,
		"--run-firewall=true", "--run-router=false", "--run-service-proxy=false", "--run-loadbalancer=false",
		"--enable-ipv4=true", "--enable-ipv6=true",
		"--service-cluster-ip-range=10.0.0.0/24", "--service-cluster-ip-range=" + serviceCIDRv6,
		"--metrics-port=0", "--health-port=0", "--v=1"}
	creates := []func() error{
		func() error {
			_, err := cs.AppsV1().DaemonSets(engineNamespace).Create(ctx, &appsv1.DaemonSet{
				ObjectMeta: metav1.ObjectMeta{Name: EngineName, Labels: labels},
				Spec: appsv1.DaemonSetSpec{
					Selector: &metav1.LabelSelector{MatchLabels: labels},
					Template: corev1.PodTemplateSpec{ObjectMeta: metav1.ObjectMeta{Labels: labels}, Spec: corev1.PodSpec{
						HostNetwork:                   true,
						AutomountServiceAccountToken:  new(false), // it reads the API with the kubeconfig named above
						TerminationGracePeriodSeconds: new(int64(5)),
						Tolerations:                   []corev1.Toleration{{Operator: corev1.TolerationOpExists}},
						Volumes: []corev1.Volume{{Name: "host", VolumeSource: corev1.VolumeSource{
							HostPath: &corev1.HostPathVolumeSource{Path: "/"}}}},
						Containers: []corev1.Container{{
							Name: "kube-router", Image: ProbeImage, ImagePullPolicy: corev1.PullNever, Command: args,
							Env:             []corev1.EnvVar{{Name: "PATH", Value: shims + ":/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"}},
							VolumeMounts:    []corev1.VolumeMount{{Name: "host", MountPath: "/host"}},
							SecurityContext: &corev1.SecurityContext{Privileged: new(true), RunAsUser: new(int64(0))},
						}},
					}},
				},
			}, metav1.CreateOptions{})
			return err
		},
	}
	for _, create := range creates {
		if err := create(); err != nil && !apierrors.IsAlreadyExists(err) {
			return fmt.Errorf("installing kube-router's DaemonSet: %w", err)
		}
	}
	n.engine = true
	state := "no pod yet"
	err = n.pollEngine(ctx, func() (bool, error) {
		pods, err := cs.CoreV1().Pods(engineNamespace).List(ctx, metav1.ListOptions{LabelSelector: "k8s-app=" + EngineName})
		if err != nil {
			return false, err
		}
		for i := range pods.Items {
			state = podState(&pods.Items[i])
		}
		for _, iptables := range []string{"iptables", "ip6tables"} {
			if exec.CommandContext(ctx, iptables, "-w", "-S", "KUBE-ROUTER-FORWARD").Run() != nil {
				return false, nil
			}
		}
		return true, nil
	}, "set up its chains")
	if err != nil {
		return fmt.Errorf("%w (its pod: %s)", err, state)
	}
	return nil
}

// podState says where a pod is, for an error: its phase and each container's state.
func podState(p *corev1.Pod) string {
	parts := []string{string(p.Status.Phase)}
	for _, c := range p.Status.ContainerStatuses {
		switch {
		case c.State.Waiting != nil:
			parts = append(parts, fmt.Sprintf("%s waiting: %s %s", c.Name, c.State.Waiting.Reason, c.State.Waiting.Message))
		case c.State.Terminated != nil:
			parts = append(parts, fmt.Sprintf("%s terminated: %s (exit %d)", c.Name, c.State.Terminated.Reason, c.State.Terminated.ExitCode))
		case c.State.Running != nil:
			parts = append(parts, c.Name+" running")
		}
	}
	return strings.Join(parts, "; ")
}

// routerShims writes the directory put first on kube-router's PATH (see above).
func (n *Node) routerShims() (string, error) {
	dir := filepath.Join(n.Dir, "kube-router-shims")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return "", err
	}
	restore, err := exec.LookPath("ip6tables-restore")
	if err != nil {
		return "", err
	}
	ipset, err := exec.LookPath("ipset")
	if err != nil {
		return "", err
	}
	scripts := map[string]string{
		"ip6tables-restore": `#!/bin/sh
# Written by kubeenv: kube-router v2.1.0's IPv6 rules name their sets without ipset's inet6: prefix, and
# its pod chains refuse the neighbour discovery that IPv6 cannot work without (the pods' own solicitations
# and advertisements): add the prefix, and accept those two ICMPv6 types before any pod's chain.
sed -E 's/--match-set (KUBE-[A-Z0-9]+-[A-Z0-9]+)/--match-set inet6:\1/g' | awk '
	/^:KUBE-ROUTER-FORWARD / { ours = 1 }
	$1 == "COMMIT" && ours {
		split("KUBE-ROUTER-FORWARD KUBE-ROUTER-INPUT KUBE-ROUTER-OUTPUT", chains, " ")
		for (c in chains) for (t = 135; t <= 136; t++)
			print "-I " chains[c] " 1 -p ipv6-icmp -m icmp6 --icmpv6-type " t " -j ACCEPT"
	}
	{ print }' | ` + restore + ` "$@"
`,
		"ipset": `#!/bin/sh
# Written by kubeenv: kube-router v2.1.0 restores every set it saw in a save, another family's from a
# stale copy; with no set in a save, each family restores only the sets it computed.
[ "$1" = save ] && exit 0
exec ` + ipset + ` "$@"
`,
	}
	for name, script := range scripts {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(script), 0o755); err != nil {
			return "", err
		}
	}
	return dir, nil
}

// StopNetworkPolicy removes kube-router's DaemonSet, waits for its pod to be gone, and removes its rules
// and sets: the node then enforces no NetworkPolicy at all, as a bridge network alone does not.
func (n *Node) StopNetworkPolicy(ctx context.Context) error {
	cs, err := kubernetes.NewForConfig(n.cluster.Config)
	if err != nil {
		return err
	}
	background := metav1.DeletePropagationBackground
	err = cs.AppsV1().DaemonSets(engineNamespace).Delete(ctx, EngineName, metav1.DeleteOptions{PropagationPolicy: &background})
	if err != nil && !apierrors.IsNotFound(err) {
		return err
	}
	n.engine = false
	err = n.pollEngine(ctx, func() (bool, error) {
		pods, err := cs.CoreV1().Pods(engineNamespace).List(ctx, metav1.ListOptions{LabelSelector: "k8s-app=" + EngineName})
		return err == nil && len(pods.Items) == 0, err
	}, "stop")
	if err != nil {
		return err
	}
	return cleanupRouter()
}

// EnforcesNetworkPolicy says whether kube-router's DaemonSet is installed on the node's cluster.
func (n *Node) EnforcesNetworkPolicy() bool { return n.engine }

// pollEngine polls done every 200 ms (the kernel's tables offer nothing to watch) until it holds, within
// engineWait; what is the engine's part, for the error.
func (n *Node) pollEngine(ctx context.Context, done func() (bool, error), what string) error {
	ctx, cancel := context.WithTimeout(ctx, engineWait)
	defer cancel()
	tick := time.NewTicker(200 * time.Millisecond)
	defer tick.Stop()
	for {
		ok, err := done()
		if err != nil {
			return err
		}
		if ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("node %s: kube-router did not %s within %s", n.Name, what, engineWait)
		case <-tick.C:
		}
	}
}

// WaitFirewall waits until kube-router has put the pod's rules in the kernel, for both families: a pod's
// packets pass unfiltered until then.
func (n *Node) WaitFirewall(ctx context.Context, namespace, pod string) error {
	if !n.engine {
		return fmt.Errorf("node %s runs no NetworkPolicy engine", n.Name)
	}
	mark := "POD name:" + pod + " namespace: " + namespace + " to chain"
	return n.pollEngine(ctx, func() (bool, error) {
		for _, save := range []string{"iptables-save", "ip6tables-save"} {
			out, err := exec.CommandContext(ctx, save, "-t", "filter").Output()
			if err != nil || !strings.Contains(string(out), mark) {
				return false, nil
			}
		}
		return true, nil
	}, "put the rules of pod "+namespace+"/"+pod+" in place")
}

// cleanupRouter removes kube-router's rules, chains and sets, if any are there (its own --cleanup-config
// also tears down the service proxy it does not run, and panics doing so).
func cleanupRouter() error { return cleanupChains(routerChains) }

// routerChains are the prefixes of kube-router's chains; nodeChains adds the kubelet's.
var (
	routerChains = []string{"KUBE-ROUTER-", "KUBE-POD-FW-", "KUBE-NWPLCY-"}
	nodeChains   = append([]string{"KUBE-FIREWALL", "KUBE-KUBELET-CANARY", "KUBE-IPTABLES-HINT"}, routerChains...)
)

// cleanupChains removes the chains named by the prefixes, the jumps into them, and kube-router's sets.
func cleanupChains(prefixes []string) error {
	var errs []error
	for _, save := range []string{"iptables-save", "ip6tables-save"} {
		// Every table less those chains and the jumps into them, restored whole.
		out, err := exec.Command(save).Output()
		if err != nil {
			errs = append(errs, err)
			continue
		}
		var kept []string
		for _, line := range strings.Split(string(out), "\n") {
			f := strings.Fields(line)
			ours := len(f) > 1 && ((f[0] == "-A" && hasPrefix(f[1], prefixes)) || (strings.HasPrefix(f[0], ":") && hasPrefix(f[0][1:], prefixes)))
			jump := len(f) > 1 && f[0] == "-A" && slices.ContainsFunc(f, func(w string) bool { return hasPrefix(w, prefixes) })
			if !ours && !jump {
				kept = append(kept, line)
			}
		}
		restore := exec.Command(strings.TrimSuffix(save, "-save")+"-restore", "-w")
		restore.Stdin = strings.NewReader(strings.Join(kept, "\n"))
		if out, err := restore.CombinedOutput(); err != nil {
			errs = append(errs, fmt.Errorf("%s: %w: %s", restore.Path, err, out))
		}
	}
	out, err := exec.Command("ipset", "list", "-n").Output()
	if err != nil {
		return errors.Join(append(errs, err)...)
	}
	for _, set := range strings.Fields(string(out)) {
		if strings.HasPrefix(strings.TrimPrefix(set, "inet6:"), "KUBE-") {
			if out, err := exec.Command("ipset", "destroy", set).CombinedOutput(); err != nil {
				errs = append(errs, fmt.Errorf("ipset destroy %s: %w: %s", set, err, out))
			}
		}
	}
	return errors.Join(errs...)
}

func hasPrefix(name string, prefixes []string) bool {
	return slices.ContainsFunc(prefixes, func(p string) bool { return strings.HasPrefix(name, p) })
}
