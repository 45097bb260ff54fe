#!/usr/bin/env bash
# Printed after `KEEP=1 make demo`: how to use the clusters that were left running, and how to stop them.
set -euo pipefail
dir=$1
cat >&2 <<MSG

The clusters are still running. To use them:

  source $dir.env; export PATH=$PWD/bin:\$PATH
  kubectl --kubeconfig "\$CONSUMER_KUBECONFIG" get identities -A
  kubectl --kubeconfig "\$PROVIDER_KUBECONFIG" get tenants -A
  kubectl federate info --kubeconfig "\$PROVIDER_KUBECONFIG"

To stop them:

  make demo-down
MSG
