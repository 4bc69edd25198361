#!/usr/bin/env bash
# Installs what the project needs from Debian and builds pgvector 0.8 for PostgreSQL 15.
# `scripts/system.sh` installs what serving needs; `scripts/system.sh test` adds what the tests drive.
# Idempotent: every step is skipped when its result is already in place.
set -euo pipefail
purpose=${1:-run}
case "$purpose" in
  run|test) ;;
  *) echo "usage: scripts/system.sh [run|test] (got: $purpose)" >&2; exit 2 ;;
esac

PG_MAJOR=15
PG_BIN=/usr/lib/postgresql/$PG_MAJOR/bin
need_root() {
  if [ "$(id -u)" -ne 0 ]; then
    echo "scripts/system.sh must run as root to install system packages (missing: $*)." >&2
    exit 1
  fi
}

packages=(postgresql-$PG_MAJOR postgresql-contrib postgresql-server-dev-$PG_MAJOR make gcc python3-venv)
# Only for the tests, so that a first `make run` does not wait for them (Chromium alone is ~100 MB):
# redis-server: CI runs the websocket tests against a real Redis (channel layer for several processes);
# chromium: the browser tests drive Debian's build through Playwright (never `playwright install`);
# g++: llama-cpp-python compiles llama.cpp for the real-model tests.
if [ "$purpose" = test ]; then
  packages+=(g++ redis-server chromium fonts-dejavu-core)
fi
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ ${#missing[@]} -gt 0 ]; then
  need_root "${missing[@]}"
  echo "==> apt-get install ${missing[*]}"
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# Debian's cluster manager is not used, but its package creates the postgres user; make sure it exists.
if ! id postgres >/dev/null 2>&1; then
  need_root "the postgres user"
  useradd --system --home-dir /var/lib/postgresql --shell /bin/bash postgres
fi

sharedir=$("$PG_BIN/pg_config" --sharedir)
if [ -f "$sharedir/extension/vector.control" ]; then
  exit 0
fi
need_root "pgvector"
echo "==> building pgvector from Debian trixie's source package"
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mirror=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/debian.sources 2>/dev/null || true)
mirror=${mirror:-http://deb.debian.org/debian}
mkdir -p "$work/lists/partial" "$work/cache/archives/partial"
echo "deb-src $mirror trixie main" > "$work/sources.list"
apt_opts=(-o "Dir::Etc::sourcelist=$work/sources.list" -o Dir::Etc::sourceparts=/nonexistent
          -o "Dir::State::Lists=$work/lists" -o "Dir::Cache=$work/cache" -o APT::Sandbox::User=root)
apt-get "${apt_opts[@]}" update -qq
(cd "$work" && apt-get "${apt_opts[@]}" source --download-only -qq pgvector)
tarball=$(ls "$work"/pgvector_*.orig.tar.* | head -n 1)
mkdir "$work/src"
tar -xf "$tarball" -C "$work/src" --strip-components=1
make -s -C "$work/src" PG_CONFIG="$PG_BIN/pg_config" OPTFLAGS="" >/dev/null
make -s -C "$work/src" PG_CONFIG="$PG_BIN/pg_config" install >/dev/null
echo "==> pgvector $(awk -F"'" '/default_version/ {print $2}' "$sharedir/extension/vector.control") installed"
