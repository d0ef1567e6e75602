# What the bench scripts start with, sourced right after
# `set -euo pipefail`:
#   source "$(dirname "${BASH_SOURCE[0]}")/common.sh" "$@"
# With -h or --help first, prints the calling script's header comment (the
# comment block after its #! line: its usage) and exits 0.
case "${1:-}" in -h|--help)
  awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"
  exit 0 ;;
esac

# The build folder: $SHEFL_BUILD (relative to ROOT unless absolute), else
# ROOT/build; exits with a hint when it holds no shefl binary.
bench_build_dir() {  # ROOT
  local build="${SHEFL_BUILD:-build}"
  case "$build" in /*) ;; *) build="$1/$build" ;; esac
  [ -x "$build/bin/shefl" ] || {
    echo "build first: scripts/test.sh or scripts/run.sh ($build/bin/shefl)" >&2
    exit 1
  }
  echo "$build"
}
