#!/usr/bin/env bash
# The demo: run by `make demo` with CONSUMER_KUBECONFIG and PROVIDER_KUBECONFIG pointing at two fresh local
# clusters and KUBEENV_BIN holding kubectl.
set -euo pipefail
cd "$(dirname "$0")/.."
export PATH="$PWD/bin:$KUBEENV_BIN:$PATH"
if [ -t 2 ] && [ -z "${NO_COLOR:-}" ]; then bold=$'\033[1m' off=$'\033[0m'; else bold='' off=''; fi
say() { printf '\n%s## %s%s\n' "$bold" "$*" "$off" >&2; }
run() { printf '$ %s\n' "$*" >&2; "$@"; }

say "Two independent clusters answer"
run kubectl --kubeconfig "$CONSUMER_KUBECONFIG" version
run kubectl --kubeconfig "$PROVIDER_KUBECONFIG" get namespaces
