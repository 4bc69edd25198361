#!/usr/bin/env bash
# Makes sure the database the settings point at exists and is migrated.
# Without DATABASE_URL: starts (or reuses) the local cluster in $SUPPORTBOT_PGDATA on port $SUPPORTBOT_PGPORT.
set -euo pipefail
cd "$(dirname "$0")/.."
PGDATA_DIR=${SUPPORTBOT_PGDATA:-/var/lib/supportbot/pgdata}
PGPORT=${SUPPORTBOT_PGPORT:-54329}
PG_BIN=/usr/lib/postgresql/15/bin

if [ -z "${DATABASE_URL:-}" ]; then
  scripts/pg.sh start "$PGDATA_DIR" "$PGPORT"
  if ! "$PG_BIN/psql" -h 127.0.0.1 -p "$PGPORT" -U postgres -Atc "select 1 from pg_database where datname='supportbot'" | grep -q 1; then
    "$PG_BIN/createdb" -h 127.0.0.1 -p "$PGPORT" -U postgres supportbot
  fi
fi
.venv/bin/python manage.py migrate --noinput -v 0
