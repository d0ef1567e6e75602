#!/usr/bin/env bash
# Installs what is missing, builds, and runs the ctest suite.
#   scripts/test.sh [CTEST ARGS]            the whole suite (e.g. -R codec)
#   scripts/test.sh --changed [REF] [ARGS]  the fast loop: builds, then runs
#       only what a change can break first (docs/TESTING.md, "The fast
#       loop"): the unit tests of the changed files, the tests that name a
#       changed file, and the LibTorch 2.x and thread-safety checks over
#       the changed sources alone. The change: what differs from REF (default HEAD, i.e. what
#       is not committed; when nothing is, the last commit).
set -euo pipefail
CHANGED=0 REF=HEAD
if [ "${1:-}" = --changed ]; then
  CHANGED=1; shift
  if [ $# -gt 0 ] && [ "${1#-}" = "$1" ]; then REF="$1"; shift; fi
fi
SCRIPTS="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
if [ "$CHANGED" = 0 ]; then
  SHEFL_SETUP=test source "$SCRIPTS/setup.sh"
  cd "$BUILD_DIR"
  exec ctest --output-on-failure -j "$(nproc)" "$@"
fi

# The fast loop builds only the chosen tests (and the three binaries they
# depend on): relinking every test that links the changed code was most of
# its time. A build folder that was never configured is configured first.
BUILD_DIR="${SHEFL_BUILD_DIR:-$SCRIPTS/../build}"
[ -f "$BUILD_DIR/test_labels.txt" ] || SHEFL_SETUP_TARGETS=shefl SHEFL_SETUP=test source "$SCRIPTS/setup.sh"
picked=$(python3 "$SCRIPTS/changed_tests.py" "$BUILD_DIR" "$SCRIPTS/.." "$REF")
build_targets="shefl shefl-coordinator shefl-client $(cut -d' ' -f1 <<<"$picked" | tr '\n' ' ')"
SHEFL_SETUP_TARGETS="$build_targets" SHEFL_SETUP=test source "$SCRIPTS/setup.sh"
cd "$BUILD_DIR"
# The two source checks, over the changed C++ sources.
mapfile -t sources < <(python3 "$SCRIPTS/changed_tests.py" --sources "$ROOT" "$REF")
rc=0
if [ -n "${sources[*]}" ]; then
  echo "shefl: LibTorch 2.x and thread-safety checks over ${#sources[@]} changed source(s)" >&2
  python3 "$ROOT/tests/torch2_check.py" compile_commands.json "$ROOT" \
    "$BUILD_DIR/libtorch2" "${sources[@]}" || rc=1
  python3 "$ROOT/tests/thread_safety_check.py" compile_commands.json "$ROOT" \
    "${sources[@]}" || rc=1
fi
if [ -z "$picked" ]; then
  echo "shefl: no test includes or names the changed files" >&2
  exit "$rc"
fi
echo "shefl: the tests the change can reach:" >&2
sed 's/^/  /' <<<"$picked" >&2
names=$(cut -d' ' -f1 <<<"$picked" | grep -vE '^(torch2_test|thread_safety_test)$' | paste -sd'|')
# The lab's systemd hosts and the container builds take minutes each:
# the whole suite runs them.
ctest --output-on-failure -j "$(nproc)" -R "^($names)\\." -LE '^(lab|containers)$' "$@" || rc=1
exit "$rc"
