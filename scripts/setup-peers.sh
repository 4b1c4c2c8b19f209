#!/usr/bin/env bash
# The peer load generators the benchmarks drive beside our probe (issue 14): AIPerf and GuideLLM, each in its own
# virtual environment under .peers/ (git-ignored; bench/peers.py finds them at $TTFT_PEERS_DIR/<name>/bin/<command>).
# Runs once (each install takes 5–20 minutes, one core, niced, so the machine stays usable); later calls return at
# once. Not part of `make test`.
set -euo pipefail
cd "$(dirname "$0")/.."
PEERS=${TTFT_PEERS_DIR:-.peers}
PY=${PYTHON:-python3}
AIPERF_VERSION=0.13.0
GUIDELLM_VERSION=0.8.1
# Installed before guidellm, which would otherwise pull the newest torch; where pip's find-links hold the CPU-only
# wheel (2.13.0+cpu), that one is taken instead of the CUDA build.
TORCH_VERSION=2.13.0
mkdir -p "$PEERS"

# peer NAME PACKAGE...: install PACKAGE... into $PEERS/NAME unless its command $PEERS/NAME/bin/NAME is there
peer() {
  local name=$1
  shift
  test -x "$PEERS/$name/bin/$name" && return
  test -x "$PEERS/$name/bin/python" || "$PY" -m venv "$PEERS/$name" || return 1
  for pkg in "$@"; do  # one at a time: torch first, so guidellm's resolver keeps it
    echo "installing $pkg into $PEERS/$name"
    nice -n 19 "$PEERS/$name/bin/pip" install -q "$pkg" || return 1
  done
}

# One failed install does not stop the other: the benchmarks report a missing peer as "skipped (not installed)".
failed=()
peer aiperf "aiperf==$AIPERF_VERSION" || failed+=(aiperf)
peer guidellm "torch==$TORCH_VERSION" "guidellm==$GUIDELLM_VERSION" || failed+=(guidellm)
if ((${#failed[@]})); then
  echo "not installed: ${failed[*]} (see the messages above)" >&2
  exit 1
fi
echo "peers ready in $PEERS: aiperf, guidellm"
