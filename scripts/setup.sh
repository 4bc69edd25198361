#!/usr/bin/env bash
# Everything the project needs on a fresh Debian 12 machine: system packages, pgvector, the virtualenv.
# Idempotent and quick on a second run (requirements are reinstalled only when they change).
set -euo pipefail
cd "$(dirname "$0")/.."

scripts/system.sh

PYTHON=${PYTHON:-python3}
if ! "$PYTHON" -c 'import sys; sys.exit(sys.version_info[:2] != (3, 11))'; then
  echo "supportbot needs Python 3.11 (found $("$PYTHON" --version 2>&1)); set PYTHON=/path/to/python3.11." >&2
  exit 1
fi
if [ ! -x .venv/bin/python ]; then
  echo "==> creating .venv"
  "$PYTHON" -m venv .venv
fi
stamp=.venv/.requirements.sha256
wanted=$(cat requirements.txt requirements-dev.txt requirements-nodeps.txt | sha256sum | cut -d' ' -f1)
if [ "$(cat "$stamp" 2>/dev/null)" != "$wanted" ]; then
  echo "==> installing Python requirements (first time: a few minutes)"
  .venv/bin/pip install -q --upgrade pip
  # torch first and pinned: the CPU build; anything else would pull a multi-GB CUDA build.
  .venv/bin/pip install -q "$(grep -E '^torch==' requirements.txt)"
  .venv/bin/pip install -q -r requirements-dev.txt
  .venv/bin/pip install -q --no-deps --ignore-requires-python -r requirements-nodeps.txt
  echo "$wanted" > "$stamp"
fi
