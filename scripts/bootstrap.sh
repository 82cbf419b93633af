#!/usr/bin/env bash
# Set up (idempotently) what KnowSim Studio needs, then run what was asked:
#   scripts/bootstrap.sh app    — runtime packages, then `streamlit run app.py`
#   scripts/bootstrap.sh test   — dev packages, the docs' and the Dask extra + Debian chromium and nginx,
#                                 then the whole test suite
#   scripts/bootstrap.sh local-model [--n-ctx N --servers N …] — runtime + requirements-local.txt (and
#                                    nginx), then the small local model's server(s) on 127.0.0.1
#                                    (knowsim_core/llm/local_server.py)
#   scripts/bootstrap.sh docs [--dev-addr 127.0.0.1:PORT] — runtime + requirements-docs.txt, then
#                                    `mkdocs serve` on 127.0.0.1:8000
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
# The stamp names what was installed (the file, what it includes, the pins), not the command asking:
# `make app` and `make local-model` install the same requirements.txt once between them.
stamp="$VENV/.installed-$(sha1sum requirements.txt "$reqs" constraints.txt | sha1sum | cut -c1-12)-${reqs%.txt}"
if [ ! -f "$stamp" ]; then
  echo "[setup] installing $reqs at the versions pinned in constraints.txt"
  "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -c constraints.txt -r "$reqs"
  touch "$stamp"
fi

# The documentation site (make docs serves it; make test builds it strictly and runs its commands).
# Its own stamp, so a change to the docs' pins reinstalls only them.
if [ "$want" = docs ] || [ "$want" = test ]; then
  docs_stamp="$VENV/.installed-docs-$(sha1sum requirements-docs.txt constraints.txt | sha1sum | cut -c1-12)"
  if [ ! -f "$docs_stamp" ]; then
    echo "[setup] installing requirements-docs.txt (MkDocs and its theme) at the pinned versions"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -c constraints.txt -r requirements-docs.txt
    touch "$docs_stamp"
  fi
fi

if [ "$want" = test ] && [ ! -x /usr/bin/chromium ]; then
  echo "[setup] installing Debian's chromium for the browser tests"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq chromium >/dev/null
fi

# The router that puts several model servers behind one URL (knowsim_core/llm/router.py): Debian's
# nginx, for the tests (two stand-in servers behind it) and `make local-model N=2`. The Studio runs its
# own nginx on 127.0.0.1 with its own configuration; on a machine with systemd the package also starts
# Debian's default site on port 80, which the Studio does not use (systemctl disable --now nginx).
# Pinned to Debian 12's 1.22.1 line (its security updates change only the part after the dash).
NGINX_PIN='1.22.1-*'
if { [ "$want" = test ] || [ "$want" = local-model ]; } && ! command -v nginx >/dev/null && [ ! -x /usr/sbin/nginx ]; then
  echo "[setup] installing Debian's nginx (the router in front of several model servers)"
  SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
  $SUDO apt-get update -qq
  DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq "nginx=$NGINX_PIN" >/dev/null
fi

# The optional local model (make local-model; make test runs it end to end). llama-cpp-python builds
# llama.cpp from source once (cmake + a C++ compiler, ~15 CPU-minutes) into a wheel kept per build
# flags in ~/.cache/knowsim/wheels, so a new virtual environment on the same machine reuses it.
# On x86-64 the build targets AVX2 (x86-64-v3) instead of the build machine's own CPU: a native build
# on a CPU that reports AMX runs llama.cpp's AMX kernels, which crashed the server here with SIGSEGV
# (ggml_backend_amx_mul_mat) on its first generated token. pip's own wheel cache cannot be used for
# this: it keys a built wheel by the source, not by the flags it was built with.
if [ "$want" = local-model ] || [ "$want" = test ]; then
  llama_cmake=""
  [ "$(uname -m)" = x86_64 ] && llama_cmake="-DGGML_NATIVE=OFF -DGGML_AVX=ON -DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON"
  flags_id=$(printf '%s' "$llama_cmake" | sha1sum | cut -c1-12)
  local_stamp="$VENV/.installed-local-$( (sha1sum requirements-local.txt constraints.txt; echo "$flags_id") | sha1sum | cut -c1-12)"
  if [ ! -f "$local_stamp" ]; then
    wheels="${XDG_CACHE_HOME:-$HOME/.cache}/knowsim/wheels/llama-$flags_id"
    llama_pin=$(grep -i '^llama[-_]cpp[-_]python==' constraints.txt | cut -d= -f3)
    if ! ls "$wheels"/llama_cpp_python-"$llama_pin"-*.whl >/dev/null 2>&1; then
      if ! command -v cmake >/dev/null || ! command -v c++ >/dev/null; then
        echo "[setup] installing Debian's cmake and build-essential (to build llama.cpp once)"
        SUDO=""; [ "$(id -u)" -ne 0 ] && SUDO="sudo"
        $SUDO apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq cmake build-essential >/dev/null
      fi
      echo "[setup] building llama.cpp (llama-cpp-python $llama_pin) once: ~15 CPU-minutes"
      mkdir -p "$wheels"
      CMAKE_ARGS="$llama_cmake" "$VENV/bin/python" -m pip wheel --quiet --disable-pip-version-check --no-deps \
        --no-cache-dir -w "$wheels" "llama-cpp-python==$llama_pin"
    fi
    echo "[setup] installing requirements-local.txt (llama.cpp from $wheels)"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -c constraints.txt --no-deps --force-reinstall \
      "$wheels"/llama_cpp_python-"$llama_pin"-*.whl
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -c constraints.txt \
      --find-links "$wheels" -r requirements-local.txt
    touch "$local_stamp"
  fi
fi

# The optional Dask cluster extra (batch --cluster): make test installs it, so the cluster tests run.
if [ "$want" = test ]; then
  cluster_stamp="$VENV/.installed-cluster-$(sha1sum requirements-cluster.txt constraints.txt | sha1sum | cut -c1-12)"
  if [ ! -f "$cluster_stamp" ]; then
    echo "[setup] installing requirements-cluster.txt (Dask) at the versions pinned in constraints.txt"
    "$VENV/bin/python" -m pip install --quiet --disable-pip-version-check -c constraints.txt -r requirements-cluster.txt
    touch "$cluster_stamp"
  fi
fi

# The project's own bytecode, written here once: with PYTHONDONTWRITEBYTECODE set (as on the
# machines this was measured on) Python compiled every module of the package from source at each
# start — ~40 ms of a command's ~0.3 s start-up, paid by every CLI call, batch and app start.
# compileall writes only what is missing or stale (a few ms when nothing changed).
"$VENV/bin/python" -m compileall -q knowsim_core pages app.py

case "$want" in
  local-model) exec "$VENV/bin/python" -m knowsim_core.llm.local_server "$@" ;;
  app)  exec "$VENV/bin/python" -m streamlit run app.py --browser.gatherUsageStats false "$@" ;;
  test) exec "$VENV/bin/python" -m pytest "$@" ;;
  docs) exec "$VENV/bin/python" -m mkdocs serve --dev-addr 127.0.0.1:8000 "$@" ;;
  *)    echo "usage: scripts/bootstrap.sh app|test|local-model|docs [args]" >&2; exit 2 ;;
esac
