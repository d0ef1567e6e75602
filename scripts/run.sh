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
exec "$BUILD_DIR/bin/shefl" run "$@"
