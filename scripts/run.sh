#!/usr/bin/env bash
# Installs what is missing, builds, and runs an experiment (by default
# configs/quick.yaml: Fashion-MNIST, SHEFL). Extra arguments go to
# `shefl run`, e.g. scripts/run.sh configs/fmnist-paper.yaml --set rounds=3
set -euo pipefail
SHEFL_SETUP=run source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$ROOT"
if [ $# -eq 0 ]; then
  set -- configs/quick.yaml
fi
status=0
"$BUILD_DIR/bin/shefl" run "$@" || status=$?
[ "$status" -eq 0 ] || exit "$status"
# What it did and where to go from here.
cat >&2 <<NEXT

shefl: that was \`shefl run $*\`: a coordinator and its client daemons on
this machine, over mutual TLS; the results folder is named above.
Next:
  build/bin/shefl ls                                # your runs
  build/bin/shefl report RESULTS_DIR --plots plots  # tables and plots of a run
  scripts/run.sh configs/quick.yaml --daemons 3     # the clients on 3 daemons
  scripts/run.sh configs/fmnist-paper.yaml          # the SHEFL paper's setting (long)
  docs/RUNNING.md (across machines), docs/METHODS.md (FedAvg, FedProx, ...),
  docs/MONITORING.md (Grafana), docs/GPU.md
NEXT
