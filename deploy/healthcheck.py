"""The web container's health check (deploy/docker-compose.yml): this container's daphne answers a page through
Django within 8 s (on port 8000, or SUPPORTBOT_HEALTHCHECK_PORT). Any answer below 500 counts: a production
server redirects plain HTTP to HTTPS unless DJANGO_BEHIND_TLS_PROXY trusts the X-Forwarded-Proto sent here, and
either shows that it is serving. The request names the first of DJANGO_ALLOWED_HOSTS, so that it is not refused
as an unknown host."""

from __future__ import annotations

import http.client
import os
import sys


def main() -> int:
    hosts = [h.strip() for h in os.environ.get("DJANGO_ALLOWED_HOSTS", "").split(",")]
    host = next((h for h in hosts if h and not h.startswith(".") and "*" not in h), "localhost")
    port = int(os.environ.get("SUPPORTBOT_HEALTHCHECK_PORT", "8000"))
    connection = http.client.HTTPConnection("127.0.0.1", port, timeout=8)
    try:
        connection.request("GET", "/", headers={"Host": host, "X-Forwarded-Proto": "https"})
        status = connection.getresponse().status
    except OSError as exc:
        print(f"unhealthy: no answer from 127.0.0.1:{port}: {exc}", file=sys.stderr)
        return 1
    finally:
        connection.close()
    if status >= 500:
        print(f"unhealthy: GET / answered {status}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
