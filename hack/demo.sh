#!/usr/bin/env bash
# The demo: run by `make demo` with CONSUMER_KUBECONFIG and PROVIDER_KUBECONFIG pointing at two fresh local
# clusters (the provider with a real node), KUBEENV_BIN holding kubectl and KUBEENV_PROBE_IMAGE naming the
# small image the node was given (no registry is reached). kubectl finds bin/kubectl-federate as the plugin
# "federate".
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/bin:$KUBEENV_BIN:$PATH"
if [ -t 2 ] && [ -z "${NO_COLOR:-}" ]; then bold=$'\033[1m' off=$'\033[0m'; else bold='' off=''; fi
say() { printf '\n%s## %s%s\n' "$bold" "$*" "$off" >&2; }
run() { printf '$ %s\n' "$*" >&2; "$@"; }
# denied WHY CMD...: CMD must fail, and its error must show the mechanism meant to refuse it (WHY), not
# another one that happened to refuse it first.
denied() {
  local why=$1 out
  shift
  printf '$ %s\n' "$*" >&2
  if out=$("$@" 2>&1); then
    printf '%s\n' "$out" >&2
    echo "demo: this was admitted; that must not happen" >&2
    exit 1
  fi
  printf '%s\n' "$out" >&2
  if ! grep -qF "$why" <<<"$out"; then
    echo "demo: refused, but not by what must refuse it ($why)" >&2
    exit 1
  fi
}
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT

say "Two independent clusters answer"
run kubectl --kubeconfig "$CONSUMER_KUBECONFIG" version
run kubectl --kubeconfig "$PROVIDER_KUBECONFIG" get namespaces

say "Give the consumer an identity on the provider, in one shot"
run kubectl federate authenticate --kubeconfig "$CONSUMER_KUBECONFIG" --remote-kubeconfig "$PROVIDER_KUBECONFIG" \
  --cluster-id consumer --remote-cluster-id provider

say "What each side now holds"
run kubectl --kubeconfig "$PROVIDER_KUBECONFIG" get tenants -A -o wide
run kubectl --kubeconfig "$CONSUMER_KUBECONFIG" get identities -A

say "The issued kubeconfig works on the provider"
run kubectl federate get kubeconfig --kubeconfig "$CONSUMER_KUBECONFIG" --remote-cluster-id provider > "$work/provider.kubeconfig"
run kubectl --kubeconfig "$work/provider.kubeconfig" auth whoami
say "A workload runs on the provider, deployed through the issued kubeconfig"
echo "# allowed: a Deployment in its sandbox, one that meets Pod Security 'restricted'" >&2
printf '$ kubectl --kubeconfig %s apply -f - (a Deployment that meets Pod Security restricted)\n' "$work/provider.kubeconfig" >&2
kubectl --kubeconfig "$work/provider.kubeconfig" apply -f - <<EOF
apiVersion: apps/v1
kind: Deployment
metadata: {name: hello}
spec:
  replicas: 1
  selector: {matchLabels: {app: hello}}
  template:
    metadata: {labels: {app: hello}}
    spec:
      automountServiceAccountToken: false
      securityContext: {runAsNonRoot: true, runAsUser: 65534, seccompProfile: {type: RuntimeDefault}}
      containers:
      - name: hello
        image: ${KUBEENV_PROBE_IMAGE:?}
        securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
EOF
run kubectl --kubeconfig "$work/provider.kubeconfig" rollout status deployment/hello --timeout=120s
run kubectl --kubeconfig "$work/provider.kubeconfig" get pods -o wide
phase=$(kubectl --kubeconfig "$work/provider.kubeconfig" get pods -l app=hello -o jsonpath='{.items[*].status.phase}')
if [ "$phase" != Running ]; then
  echo "demo: the Deployment's pod is '$phase', not Running" >&2
  exit 1
fi
echo "# the tenant's Deployment runs on the provider's node, under its sandbox's limits" >&2
echo "# denied: read the provider's own secrets, by RBAC" >&2
denied 'cannot list resource "secrets"' kubectl --kubeconfig "$work/provider.kubeconfig" get secrets -n kube-system
echo "# denied: a privileged pod, by the sandbox's Pod Security level (restricted)" >&2
denied 'violates PodSecurity "restricted' kubectl --kubeconfig "$work/provider.kubeconfig" run root --image="$KUBEENV_PROBE_IMAGE" --privileged
echo "# denied: a NodePort Service, by the sandbox's admission policy" >&2
denied 'only ClusterIP Services are allowed' kubectl --kubeconfig "$work/provider.kubeconfig" create service nodeport open --tcp=80
run kubectl --kubeconfig "$PROVIDER_KUBECONFIG" describe resourcequota federate-sandbox -n federate-tenant-consumer

say "A resource slice: 1 CPU and 1Gi with an identity and a namespace of its own, under a provider class"
run kubectl federate create resourceslice-class small --kubeconfig "$PROVIDER_KUBECONFIG" --max-cpu 1 --max-memory 1Gi --max-pods 2
run kubectl federate create resourceslice batch --kubeconfig "$CONSUMER_KUBECONFIG" --remote-cluster-id provider \
  --cpu 2 --memory 1Gi --class small
run kubectl federate accept resourceslice batch --kubeconfig "$PROVIDER_KUBECONFIG" --remote-cluster-id consumer
run kubectl federate import resourceslice batch --kubeconfig "$CONSUMER_KUBECONFIG" --remote-cluster-id provider
run kubectl federate get resourceslices --kubeconfig "$CONSUMER_KUBECONFIG"
run kubectl federate get kubeconfig --kubeconfig "$CONSUMER_KUBECONFIG" --remote-cluster-id provider --resource-slice batch > "$work/batch.kubeconfig"
run kubectl --kubeconfig "$work/batch.kubeconfig" auth whoami
echo "# denied: the slice's identity in the pairing's tenant namespace" >&2
if run kubectl --kubeconfig "$work/batch.kubeconfig" get pods -n federate-tenant-consumer; then
  echo "demo: the slice's identity acted outside its namespace; that must not happen" >&2
  exit 1
fi

say "Take it away again, on both sides"
run kubectl federate unauthenticate --kubeconfig "$CONSUMER_KUBECONFIG" --remote-kubeconfig "$PROVIDER_KUBECONFIG"
if run kubectl --kubeconfig "$work/provider.kubeconfig" get pods; then
  echo "demo: the old kubeconfig still works after unauthenticate" >&2
  exit 1
fi
echo "# the old kubeconfig is refused" >&2

if [ "${KEEP:-}" = 1 ]; then
  say "Authenticate once more, so the kept clusters are federated"
  run kubectl federate authenticate --kubeconfig "$CONSUMER_KUBECONFIG" --remote-kubeconfig "$PROVIDER_KUBECONFIG"
fi
say "Demo complete"
