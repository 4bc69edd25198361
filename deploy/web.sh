#!/bin/sh
# One web process: daphne serving supportbot, with the arguments given (`-b ADDRESS -p PORT`). The image's
# command (deploy/Dockerfile) and deploy/systemd/supportbot-web@.service start it.
# The rate limits count each client address. daphne takes that address from X-Forwarded-For (the first entry)
# only with SUPPORTBOT_TRUSTED_PROXY=1: set it only when a proxy of yours is the one peer that can reach this
# port and sets that header itself, overwriting what a client sent (docs/deploy.md, "Reverse proxy").
# SUPPORTBOT_PROXY_ADDRESS_HEADER names another header for the address (X-Real-IP). Without the setting,
# forwarded headers are ignored and the address is the connecting peer's, which nobody can forge.
set -eu
cd "$(dirname "$0")/.."
daphne=daphne
if [ -x .venv/bin/daphne ]; then
  daphne=.venv/bin/daphne
fi
case "${SUPPORTBOT_TRUSTED_PROXY:-0}" in
  0 | "")
    if [ -n "${SUPPORTBOT_PROXY_ADDRESS_HEADER:-}" ]; then
      echo "SUPPORTBOT_PROXY_ADDRESS_HEADER is set but SUPPORTBOT_TRUSTED_PROXY is not 1: set both or neither." >&2
      exit 2
    fi
    exec "$daphne" "$@" supportbot.asgi:application
    ;;
  1)
    if [ -n "${SUPPORTBOT_PROXY_ADDRESS_HEADER:-}" ]; then
      exec "$daphne" --proxy-headers --proxy-headers-host "$SUPPORTBOT_PROXY_ADDRESS_HEADER" "$@" \
        supportbot.asgi:application
    fi
    exec "$daphne" --proxy-headers "$@" supportbot.asgi:application
    ;;
  *)
    echo "SUPPORTBOT_TRUSTED_PROXY must be 0 or 1 (got: $SUPPORTBOT_TRUSTED_PROXY)." >&2
    exit 2
    ;;
esac
