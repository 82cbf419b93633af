#!/usr/bin/env bash
# Set up (idempotently) what KnowSim Studio needs, then run what was asked:
#   scripts/bootstrap.sh app    — runtime packages, then `streamlit run app.py`
#   scripts/bootstrap.sh test   — dev packages + Debian chromium, then the whole test suite
set -euo pipefail
cd "$(dirname "$0")/.."
PY=${PYTHON:-python3}
VENV=.venv
want=${1:-app}; shift || true

if [ ! -x "$VENV/bin/python" ]; then
  echo "[setup] creating virtual environment in $VENV"
  "$PY" -m venv "$VENV"
fi
reqs=requirements.txt
[ "$want" = test ] && reqs=requirements-dev.txt
stamp="$VENV/.installed-$(sha1sum requirements*.txt constraints.txt | sha1sum | cut -c1-12)-$want"
if [ ! -f "$stamp" ]; then
  echo "[setup] installing $reqs at the versions pinned in constraints.txt"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -c constraints.txt -r "$reqs"
  touch "$stamp"
fi

if [ "$want" = test ] && [ ! -x /usr/bin/chromium ]; then
  echo "[setup] installing Debian's chromium for the browser tests"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi

case "$want" in
  app)  exec "$VENV/bin/python" -m streamlit run app.py --browser.gatherUsageStats false "$@" ;;
  test) exec "$VENV/bin/python" -m pytest "$@" ;;
  *)    echo "usage: scripts/bootstrap.sh app|test [args]" >&2; exit 2 ;;
esac
