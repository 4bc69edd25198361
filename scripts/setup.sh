#!/usr/bin/env bash
# Everything the project needs on a fresh Debian 12 machine: system packages, pgvector, the virtualenv.
# `scripts/setup.sh` sets up what serving needs; `scripts/setup.sh test` adds the test tools (Chromium,
# Redis, pytest, Playwright, linters), so that a first `make run` does not wait for them.
# `scripts/setup.sh python` is the serving set's virtualenv alone, no system packages: deploy/Dockerfile builds
# its image with it, so the image and `make run` install the same way. SUPPORTBOT_TORCH_INDEX_URL, when set,
# names the index torch comes from (the image: PyTorch's own, for the CPU build).
# Idempotent and quick on a second run (requirements are reinstalled only when they change).
set -euo pipefail
cd "$(dirname "$0")/.."
purpose=${1:-run}

case "$purpose" in
  run|test) scripts/system.sh "$purpose" ;;
  python) ;;
  *) echo "usage: scripts/setup.sh [run|test|python] (got: $purpose)" >&2; exit 2 ;;
esac

PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
  echo "supportbot needs Python 3.11 (found $("$PYTHON" --version 2>&1)); set PYTHON=/path/to/python3.11." >&2
  exit 1
fi
if [ ! -x .venv/bin/python ]; then
  echo "==> creating .venv"
  "$PYTHON" -m venv .venv
fi
# Each set is reinstalled only when its files change; the test set includes the serving one.
digest() { cat "$1" requirements.txt requirements-nodeps.txt | sha256sum | cut -d' ' -f1; }
current() { [ -f "$1.txt" ] && [ "$(cat ".venv/.$1.sha256" 2>/dev/null)" = "$(digest "$1.txt")" ]; }
install() {  # requirements file without .txt
  echo "==> installing Python requirements from $1.txt (first time: a few minutes)"
  .venv/bin/pip install -q --upgrade pip
  # torch first and pinned: the CPU build; anything else would pull a multi-GB CUDA build.
  .venv/bin/pip install -q ${SUPPORTBOT_TORCH_INDEX_URL:+--index-url "$SUPPORTBOT_TORCH_INDEX_URL"} \
    "$(grep -E '^torch==' requirements.txt)"
  .venv/bin/pip install -q -r "$1.txt"
  .venv/bin/pip install -q --no-deps --ignore-requires-python -r requirements-nodeps.txt
  digest "$1.txt" > ".venv/.$1.sha256"
}
if [ "$purpose" = test ]; then
  current requirements-dev || install requirements-dev
else
  current requirements || current requirements-dev || install requirements
fi
