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
SHEFL_SETUP=test source "$(dirname "${BASH_SOURCE[0]}")/setup.sh"
cd "$BUILD_DIR"
if [ "$CHANGED" = 0 ]; then
  exec ctest --output-on-failure -j "$(nproc)" "$@"
fi

picked=$(python3 "$ROOT/scripts/changed_tests.py" "$BUILD_DIR" "$ROOT" "$REF")
# The two source checks, over the changed C++ sources (a header stands for
# the source of the same name).
sources=()
while IFS= read -r f; do
  case "$f" in
    *.cc) [ -f "$ROOT/$f" ] && sources+=("$ROOT/$f") ;;
    *.h) [ -f "$ROOT/${f%.h}.cc" ] && sources+=("$ROOT/${f%.h}.cc") ;;
  esac
done < <(cd "$ROOT" && { git diff --name-only "$REF"; git ls-files --others --exclude-standard; } \
           | grep -E '^(common|server|client|cli)/' | sort -u)
rc=0
if [ ${#sources[@]} -gt 0 ]; then
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
