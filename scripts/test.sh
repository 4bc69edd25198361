#!/usr/bin/env bash
# Runs the test suite against a throwaway PostgreSQL cluster (unless DATABASE_URL names one).
set -euo pipefail
cd "$(dirname "$0")/.."
scripts/llm-setup.sh
if [ -z "${DATABASE_URL:-}" ]; then
  datadir=$(mktemp -d /tmp/supportbot-test.XXXXXX)
  port=$(.venv/bin/python -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])')
  trap 'scripts/pg.sh stop "$datadir" >/dev/null; rm -rf "$datadir"' EXIT
  scripts/pg.sh start "$datadir" "$port" --throwaway
  export DATABASE_URL="postgres://postgres@127.0.0.1:$port/postgres"
fi
.venv/bin/python -m pytest "$@"
