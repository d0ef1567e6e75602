#!/usr/bin/env bash
# Installs what is missing, builds, and runs the whole ctest suite.
# Extra arguments go to ctest (e.g. scripts/test.sh -R codec).
set -euo pipefail
SHEFL_SETUP=test source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$BUILD_DIR"
ctest --output-on-failure -j "$(nproc)" "$@"
