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

They are initialized as "consumer" and "provider"; the docs' examples name their clusters otherwise
(gpu-farm, edge-1) and are refused on a cluster initialized under another ID. To give one of these
clusters a new ID in a lab, remove what init made there first (its pairings go with it):

  kubectl --kubeconfig "\$PROVIDER_KUBECONFIG" delete namespace federate-system --wait

To stop them:

  make demo-down
MSG
