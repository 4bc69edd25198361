#!/bin/sh
# What a deployment needs before its web processes and workers start: migrations, static files, the articles
# and the first staff account. Compose's one-shot `setup` service and deploy/systemd/supportbot-setup.service
# run it at every start; each step does nothing when already done, so running it again is harmless.
#   SUPPORTBOT_ARTICLES=FOLDER  your Markdown or HTML articles (docs/own-help-centre.md), synced into
#                               CHAT_COLLECTION at every start: new, changed and removed files. CHAT_COLLECTION
#                               must name a collection of your own (supportbot.env), never the demo's.
#   otherwise                   the demo help centre, loaded as `make run` loads it, until it is complete (its
#                               policy, loaded last, is in place); later starts leave it and its admin edits
#                               alone. SUPPORTBOT_DEMO=0 loads no articles at all.
# The staff account comes last, so that its password is the end of the output.
set -eu
cd "$(dirname "$0")/.."
python=python
if [ -x .venv/bin/python ]; then
  python=.venv/bin/python
fi
manage() {
  "$python" manage.py "$@"
}
demo_loaded() {
  manage shell -v 0 -c "import sys
from conversations.models import SystemPolicy
sys.exit(0 if SystemPolicy.objects.filter(collection__name='helpcentre').exists() else 3)"
}

manage migrate --noinput
manage collectstatic --noinput -v 0

if [ -n "${SUPPORTBOT_ARTICLES:-}" ]; then
  if [ ! -d "$SUPPORTBOT_ARTICLES" ]; then
    echo "SUPPORTBOT_ARTICLES=$SUPPORTBOT_ARTICLES is not a folder." >&2
    exit 1
  fi
  case "${CHAT_COLLECTION:-helpcentre}" in
    helpcentre)
      echo "SUPPORTBOT_ARTICLES needs CHAT_COLLECTION=NAME in supportbot.env, a collection of your own: helpcentre is the demo's." >&2
      exit 1
      ;;
  esac
  # A bad file is reported (file:line: field: message) and the others still load; a sync that would retire
  # most of the collection is refused whole. Either way the site starts with what the collection holds.
  manage ingest "$SUPPORTBOT_ARTICLES" --collection "$CHAT_COLLECTION" ||
    echo "==> ingest of $SUPPORTBOT_ARTICLES reported problems (above); the collection holds what it loaded." >&2
elif [ "${SUPPORTBOT_DEMO:-1}" = 0 ]; then
  echo "==> SUPPORTBOT_DEMO=0: no articles loaded (add them in the admin, or through the ingestion API)."
elif demo_loaded; then
  echo "==> the demo help centre is loaded already (SUPPORTBOT_ARTICLES=FOLDER syncs your own instead)."
else
  echo "==> loading the demo help centre (SUPPORTBOT_ARTICLES=FOLDER loads your own instead)"
  manage ingest knowledge/sample/helpcentre --collection helpcentre
  manage voice helpcentre --load knowledge/sample/helpcentre_voice.json
  manage glossary knowledge/sample/glossary.tsv --collection helpcentre
  manage load_customers customers/sample/customers.json
  manage calibrate --collection helpcentre --if-missing --signals conversations/sample/helpcentre_signals.json
  manage fit_fusion --collection helpcentre --if-missing --load knowledge/sample/helpcentre_fusion.json
  manage policy conversations/sample/policy.md --collection helpcentre
fi

manage ensure_staff --base-url "${SUPPORTBOT_PUBLIC_URL:-http://127.0.0.1:8000}"
