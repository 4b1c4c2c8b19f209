#!/usr/bin/env bash
# Installs the system packages the test suite needs, when they are missing:
#   - Debian's Chromium at /usr/bin/chromium (Playwright drives it; `playwright install` cannot download browsers here)
#   - PostgreSQL server binaries (tests start a private cluster with initdb; see tests/support/pg.py)
#   - Prometheus (tests start one scraping the simulator's vLLM-named metrics; see tests/support/prometheus.py)
# Idempotent and quick when everything is present. Needs root (or sudo) only when something is missing.
set -euo pipefail

need=()
[ -x /usr/bin/chromium ] || need+=(chromium fonts-dejavu-core)
compgen -G "/usr/lib/postgresql/*/bin/initdb" >/dev/null || need+=(postgresql)
command -v ip >/dev/null || need+=(iproute2)
command -v prometheus >/dev/null || need+=(prometheus)

if [ ${#need[@]} -eq 0 ]; then
  echo "system deps: chromium, postgresql and prometheus present"
  exit 0
fi

SUDO=""
if [ "$(id -u)" -ne 0 ]; then
  if command -v sudo >/dev/null; then SUDO="sudo"; else
    echo "system deps missing (${need[*]}) and not root: install them with apt-get" >&2; exit 1
  fi
fi
echo "system deps: installing ${need[*]}"
export DEBIAN_FRONTEND=noninteractive
# Another apt run (a second checkout installing at the same moment, unattended upgrades) holds apt's locks:
# wait for it (up to 10 min a try) instead of failing; installing what is already there is a no-op.
lock=(-o DPkg::Lock::Timeout=600)
for attempt in 1 2 3 4; do
  if $SUDO apt-get "${lock[@]}" update -q && $SUDO apt-get "${lock[@]}" install -y -q --no-install-recommends "${need[@]}"; then
    exit 0
  fi
  echo "system deps: apt is busy or failed (attempt $attempt); retrying in 30 s" >&2
  sleep 30
done
exit 1
