"""Settings for supportbot. Every value comes from the environment, validated by supportbot.env."""

import os
from pathlib import Path

import dj_database_url
from django.core.exceptions import ImproperlyConfigured

from knowledge.front_matter import parse_audience_rules
from knowledge.stages import SEARCH_STAGES, Stage
from supportbot.env import env_bool, env_choice, env_float, env_int, env_str

# Models come from installed packages only; never let a library reach for a model hub.
os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TRANSFORMERS_OFFLINE", "1")

BASE_DIR = Path(__file__).resolve().parent.parent

# SUPPORTBOT_ENV=production is the switch for a real deployment: debugging off, a real secret key and the
# host names required, and the secure defaults below on (HTTPS only, secure cookies, HSTS). `manage.py check
# --deploy` is clean with it (README, "Deployment").
PRODUCTION = (
    env_choice(
        "SUPPORTBOT_ENV",
        "development",
        ("development", "production"),
        help="Set to production for a real deployment: debugging off, a real secret key and the host names required, "
        "and the HTTPS-only and secure-cookie defaults on.",
    )
    == "production"
)
DEBUG = env_bool(
    "DJANGO_DEBUG",
    not PRODUCTION,
    help="Django's debug mode, whose error pages show settings and source code; refused with "
    "SUPPORTBOT_ENV=production.",
)
if PRODUCTION and DEBUG:
    raise ImproperlyConfigured(
        "DJANGO_DEBUG is refused with SUPPORTBOT_ENV=production: debug pages show settings and source code."
    )
SECRET_KEY = env_str(
    "DJANGO_SECRET_KEY",
    "",
    help="Django's secret key: required when DJANGO_DEBUG is off, at least 50 random characters in production; empty "
    "while debugging uses a fixed insecure key.",
)
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured("DJANGO_SECRET_KEY must be set when DJANGO_DEBUG is off.")
    SECRET_KEY = "insecure-local-development-key-set-DJANGO_SECRET_KEY-in-production"
if PRODUCTION and (len(SECRET_KEY) < 50 or len(set(SECRET_KEY)) < 5):
    raise ImproperlyConfigured(
        "DJANGO_SECRET_KEY must be at least 50 random characters in production "
        "(python -c 'import secrets; print(secrets.token_urlsafe(50))' makes one)."
    )
_default_hosts = "" if PRODUCTION else "127.0.0.1,localhost"
ALLOWED_HOSTS = [
    h.strip()
    for h in env_str(
        "DJANGO_ALLOWED_HOSTS",
        _default_hosts,
        help="Comma-separated host names this server answers to (required in production, no *); they also decide "
        "which sites may open the chat's websocket.",
    ).split(",")
    if h.strip()
]
if PRODUCTION and (not ALLOWED_HOSTS or "*" in ALLOWED_HOSTS):
    raise ImproperlyConfigured(
        "DJANGO_ALLOWED_HOSTS must name this server's host names in production (comma-separated, no '*'): "
        "they also decide which sites may open the chat's websocket."
    )

# HTTPS and cookies. Behind a proxy that terminates TLS, DJANGO_BEHIND_TLS_PROXY=1 trusts its
# X-Forwarded-Proto header: the proxy must set it and overwrite any a client sent.
if env_bool(
    "DJANGO_BEHIND_TLS_PROXY",
    False,
    help="Trust the X-Forwarded-Proto header of a proxy that terminates TLS; the proxy must set it and overwrite any "
    "value a client sent.",
):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
SECURE_SSL_REDIRECT = env_bool("DJANGO_SECURE_SSL_REDIRECT", PRODUCTION, help="Redirect plain HTTP requests to HTTPS.")
SESSION_COOKIE_SECURE = CSRF_COOKIE_SECURE = env_bool(
    "DJANGO_SECURE_COOKIES",
    PRODUCTION,
    help="Mark the session and CSRF cookies Secure, so browsers send them over HTTPS only.",
)
# The queue's script reads the CSRF token from its page, never from the cookie.
SESSION_COOKIE_HTTPONLY = CSRF_COOKIE_HTTPONLY = True
SESSION_COOKIE_SAMESITE = CSRF_COOKIE_SAMESITE = "Lax"
# A year, for this host and its subdomains, preloadable: a browser that once saw the header never tries
# plain HTTP again. Start lower (DJANGO_HSTS_SECONDS=3600) while trying TLS out; it cannot be taken back.
SECURE_HSTS_SECONDS = env_int(
    "DJANGO_HSTS_SECONDS",
    365 * 24 * 3600 if PRODUCTION else 0,
    minimum=0,
    help="The Strict-Transport-Security max-age in seconds (0: no header); start low (3600) while trying TLS out, "
    "since browsers remember it.",
)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool(
    "DJANGO_HSTS_INCLUDE_SUBDOMAINS", PRODUCTION, help="Add includeSubDomains to the Strict-Transport-Security header."
)
SECURE_HSTS_PRELOAD = env_bool(
    "DJANGO_HSTS_PRELOAD",
    PRODUCTION,
    help="Add preload to the Strict-Transport-Security header, which allows (but does not make) a submission of the "
    "domain to the browsers' preload list.",
)
SECURE_CONTENT_TYPE_NOSNIFF = True
SECURE_REFERRER_POLICY = "same-origin"
# No page is meant to be framed: the widget is a script on the host's page, not a frame (CSP
# frame-ancestors says the same to browsers that read it, supportbot/security.py).
X_FRAME_OPTIONS = "DENY"

INSTALLED_APPS = [
    "daphne",
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.postgres",
    "channels",
    # In the order the apps depend on each other: each imports only the ones above it.
    "knowledge",
    "customers",
    "conversations",
    "insights",
    "lab",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "supportbot.security.ContentSecurityPolicyMiddleware",
    # Before anything else costs work: a refused post touches only the cache.
    "supportbot.rate_limits.WriteRateLimitMiddleware",
    # The widget, the queue's script and the pages' styles are served by the app itself: a self-hosted
    # install is one process, with no web server in front required.
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "supportbot.urls"
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [BASE_DIR / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]
WSGI_APPLICATION = None
ASGI_APPLICATION = "supportbot.asgi.application"
CHANNEL_LAYERS: dict[str, dict[str, object]] = {"default": {"BACKEND": "channels.layers.InMemoryChannelLayer"}}

# The local cluster started by `make db` / `make run`; any Postgres with pgvector works.
# SUPPORTBOT_PGPORT is the Makefile's variable, exported, so `make run SUPPORTBOT_PGPORT=…` reaches here too.
DEFAULT_DATABASE_URL = f"postgres://postgres@127.0.0.1:{env_int('SUPPORTBOT_PGPORT', 54329, minimum=1, maximum=65535, help='The port of the local PostgreSQL cluster that make db and make run start (a Makefile variable, exported), used in the default DATABASE_URL.')}/supportbot"  # noqa: E501
_database_url = env_str(
    "DATABASE_URL",
    DEFAULT_DATABASE_URL,
    help="A postgres:// URL of any PostgreSQL with pgvector; by default the local cluster that make db and make run "
    "start.",
)
if not _database_url.startswith(("postgres://", "postgresql://")):
    raise ImproperlyConfigured(
        f"DATABASE_URL must be a postgres:// URL (supportbot needs PostgreSQL with pgvector), got {_database_url!r}."
    )
# A kept connection is checked before it is reused, so a restarted Postgres costs the next query a reconnect
# rather than an error (the websocket server and the workers keep connections for a minute).
DATABASES = {"default": dj_database_url.parse(_database_url, conn_max_age=60, conn_health_checks=True)}
DATABASES["default"]["TEST"] = {
    "NAME": env_str("TEST_DATABASE_NAME", "test_supportbot", help="The database the test suite creates and drops.")
}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = env_str(
    "TIME_ZONE",
    "UTC",
    help="The time zone dates are shown in, an IANA name such as Europe/Paris (times are stored in UTC).",
)
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATICFILES_DIRS = [BASE_DIR / "static"]
STATIC_ROOT = BASE_DIR / "var" / "staticfiles"
# Served straight from static/ (no collectstatic step); re-read on change while debugging.
WHITENOISE_USE_FINDERS = True
WHITENOISE_AUTOREFRESH = DEBUG

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "filters": {"mask_pii": {"()": "answering.privacy.masking.PiiMaskingFilter"}},
    "handlers": {
        "console": {"class": "logging.StreamHandler"},
        # Loggers that may carry a customer's words write through this one: personal data is masked first.
        "console_masked": {"class": "logging.StreamHandler", "filters": ["mask_pii"]},
    },
    "root": {
        "handlers": ["console"],
        "level": env_choice(
            "LOG_LEVEL",
            "INFO",
            ("DEBUG", "INFO", "WARNING", "ERROR"),
            help="The level of the root logger, which writes to the console.",
        ),
    },
    # Django and daphne attach handlers of their own; without this, their lines print twice via the root.
    "loggers": {
        "django": {"handlers": ["console"], "level": "INFO", "propagate": False},
        "django.channels.server": {"handlers": ["console"], "level": "INFO", "propagate": False},
        "answering": {"handlers": ["console_masked"], "level": "INFO", "propagate": False},
        "conversations": {"handlers": ["console_masked"], "level": "INFO", "propagate": False},
    },
}

# --- Knowledge base -------------------------------------------------------------------------
# "all-MiniLM-L6-v2" is the packaged offline model; a path to a local sentence-transformers
# directory selects another. The index fingerprint keeps vectors of different models apart.
EMBEDDING_MODEL = env_str(
    "EMBEDDING_MODEL",
    "all-MiniLM-L6-v2",
    help="The model that embeds passages and questions: the packaged all-MiniLM-L6-v2, or the path of a local "
    "sentence-transformers folder (vectors of different models are kept apart).",
)
# A second dense model fused with the first ("" for none): the packaged bge-small int8 ONNX model. Fusing
# it lifted SciFact nDCG@10 from 0.718 to 0.741 with StackFAQ at 0.957 (README, "Retrieval quality").
EMBEDDING_SECONDARY_MODEL = env_str(
    "EMBEDDING_SECONDARY_MODEL",
    "bge-small-en-int8",
    help="A second dense model fused with the first, empty for none: the packaged bge-small int8 ONNX model, a folder "
    "with model.onnx and tokenizer.json, or a sentence-transformers folder.",
)
# Measured on 2 cores: batches of 16 embed ~15 % more tokens/s than 64 (smaller matrices stay in cache).
EMBEDDING_BATCH_SIZE = env_int(
    "EMBEDDING_BATCH_SIZE",
    16,
    minimum=1,
    maximum=1024,
    help="Texts per forward pass of the embedding models (16 was the fastest on 2 cores).",
)
CHUNK_MIN_TOKENS = env_int(
    "CHUNK_MIN_TOKENS",
    40,
    minimum=1,
    maximum=2000,
    help="The smallest chunk ingestion makes, in word-piece tokens; CHUNK_MAX_TOKENS must be at least twice it.",
)
CHUNK_MAX_TOKENS = env_int(
    "CHUNK_MAX_TOKENS", 200, minimum=8, maximum=2000, help="The largest chunk ingestion makes, in word-piece tokens."
)
if CHUNK_MIN_TOKENS * 2 > CHUNK_MAX_TOKENS:
    raise ImproperlyConfigured(
        f"CHUNK_MAX_TOKENS ({CHUNK_MAX_TOKENS}) must be at least twice CHUNK_MIN_TOKENS ({CHUNK_MIN_TOKENS}), "
        "or long sections cannot be split into chunks that respect both bounds."
    )
# `experiment chunking`: heading beats heading-semantic on the golden set (recall@3 0.839 against 0.817) and
# ties on StackFAQ (nDCG@10 0.970 / 0.969), with fewer chunks and no sentence embedding at ingest.
CHUNK_STRATEGY = env_choice(
    "CHUNK_STRATEGY",
    "heading",
    ("heading-semantic", "heading", "sentence", "fixed"),
    help="How articles are split into chunks when ingest or a publish from the admin names no strategy.",
)
INGEST_MAX_FILE_BYTES = env_int(
    "INGEST_MAX_FILE_BYTES", 1_000_000, minimum=1_000, help="Source files larger than this are refused at ingestion."
)
FRONT_MATTER = env_choice(
    "FRONT_MATTER",
    "lenient",
    ("lenient", "strict"),
    help="How Markdown front matter is read: lenient (any tool's keys; the ones supportbot does not use are "
    "ignored, with one warning per sync) or strict (supportbot's own format: id, title, version, effective_date "
    "and audience required, other keys refused).",
)
FRONT_MATTER_AUDIENCES = env_str(
    "FRONT_MATTER_AUDIENCES",
    "",
    help="Front matter keys and values that make a page's audience, as KEY:VALUE=AUDIENCE separated by commas "
    "(e.g. visibility:internal=staff,tags:members=member); the most restricted match wins, and a page matching "
    "none is public (or says audience: public, member or staff itself).",
)
try:
    parse_audience_rules(FRONT_MATTER_AUDIENCES)
except ValueError as exc:
    raise ImproperlyConfigured(f"FRONT_MATTER_AUDIENCES: {exc}") from None
# Web sources (ingest --format web): a page's HTML carries navigation and scripts, so more than its Markdown.
WEB_PAGE_MAX_BYTES = env_int(
    "WEB_PAGE_MAX_BYTES",
    5_000_000,
    minimum=10_000,
    help="The largest page, in bytes of HTML, that a web source (ingest --format web) fetches.",
)
WEB_FETCH_TIMEOUT_S = env_float(
    "WEB_FETCH_TIMEOUT_S", 15.0, minimum=0.1, maximum=300.0, help="Seconds one fetch of a web source's page may take."
)
WEB_MAX_PAGES = env_int("WEB_MAX_PAGES", 500, minimum=1, help="The most pages one web source's sitemap may bring.")
# A zip of Markdown uploaded in the admin (Articles › Upload Markdown): read in the request, so kept modest.
INGEST_MAX_UPLOAD_BYTES = env_int(
    "INGEST_MAX_UPLOAD_BYTES",
    50_000_000,
    minimum=10_000,
    help="The largest zip of Markdown the admin's Upload Markdown accepts (it is read within the request).",
)
SAMPLE_HELP_CENTRE = BASE_DIR / "knowledge" / "sample" / "helpcentre"
# Third-party evaluation sets (BEIR layout), kept outside the repository.
SHARED_DATA_DIR = Path(
    env_str(
        "SHARED_DATA_DIR",
        str(BASE_DIR.parent / "shared" / "data"),
        help="The folder of third-party evaluation sets (BEIR layout), outside the repository, that the lab's "
        "benchmarks and evaluations read.",
    )
)

# --- Retrieval ------------------------------------------------------------------------------
RETRIEVAL_STAGES = [
    s.strip()
    for s in env_str(
        "RETRIEVAL_STAGES",
        ",".join(SEARCH_STAGES),
        help="The retrieval stages that run, comma-separated: a subset of bm25, dense, dense_secondary and fuzzy.",
    ).split(",")
    if s.strip()
]
if not RETRIEVAL_STAGES or set(RETRIEVAL_STAGES) - set(SEARCH_STAGES):
    raise ImproperlyConfigured(f"RETRIEVAL_STAGES must be a comma-separated subset of {','.join(SEARCH_STAGES)}.")
if Stage.DENSE_SECONDARY in RETRIEVAL_STAGES and not EMBEDDING_SECONDARY_MODEL:
    raise ImproperlyConfigured("RETRIEVAL_STAGES names dense_secondary but EMBEDDING_SECONDARY_MODEL is empty.")
# Weighted fusion with 0.4 BM25 against the two dense models (α 0.6), and the reranker on: on the sample help
# centre's golden set (`experiment fusion`) this lifts recall@3 from 0.817 to 0.946 and MRR from 0.743 to
# 0.809; on SciFact the weights gain 0.006 nDCG@10 and on StackFAQ they lose 0.016 (`evaluate retrieval
# --fusion-grid`). README "Retrieval quality" has the tables; RRF with BM25 costs StackFAQ 0.07.
RETRIEVAL_FUSION = env_choice(
    "RETRIEVAL_FUSION",
    "weighted",
    ("rrf", "weighted"),
    help="How the stages' rankings are fused: weighted (min-max normalised scores, weighted) or rrf (reciprocal rank "
    "fusion).",
)
RETRIEVAL_WEIGHTS = {
    name.value: env_float(
        f"RETRIEVAL_WEIGHT_{name.upper()}",
        default,
        minimum=0.0,
        maximum=10.0,
        help=f"The weight of the {name.value} stage in weighted fusion.",
    )
    for name, default in ((Stage.BM25, 0.4), (Stage.DENSE, 0.3), (Stage.DENSE_SECONDARY, 0.3), (Stage.FUZZY, 0.1))
}
RETRIEVAL_RRF_K = env_int(
    "RETRIEVAL_RRF_K", 60, minimum=1, maximum=1000, help="The constant k of reciprocal rank fusion."
)
RETRIEVAL_DEPTH = env_int("RETRIEVAL_DEPTH", 20, minimum=1, maximum=100, help="How many hits of each stage are fused.")
BM25_K1 = env_float("BM25_K1", 1.2, minimum=0.0, maximum=10.0, help="BM25's term-frequency saturation k1.")
BM25_B = env_float("BM25_B", 0.75, minimum=0.0, maximum=1.0, help="BM25's document-length normalisation b.")
HNSW_EF_SEARCH = env_int(
    "HNSW_EF_SEARCH",
    100,
    minimum=1,
    maximum=1000,
    help="The breadth of pgvector's HNSW search (ef_search): wider finds more of the true nearest neighbours, more "
    "slowly.",
)
# The cross-encoder reads the fused shortlist statement by statement and reranks it by the best statement;
# those scores are also the reader's evidence (one pass per turn). Its cost grows with the candidates read:
# on the calibration sets the first 5 fused ranked as well as 20 did, and 3 as well as 5 when fusion is
# confident. RERANK_ENABLED=0 trades that quality for latency.
RERANK_ENABLED = env_bool(
    "RERANK_ENABLED",
    True,
    help="Rerank the fused shortlist with the cross-encoder, whose scores are also the reader's evidence; off trades "
    "that quality for latency.",
)
RERANK_MODEL = env_str(
    "RERANK_MODEL",
    "ms-marco-MiniLM-L-12-v2-int8",
    help="The cross-encoder that reranks: the packaged int8 reranker, or a folder with model.onnx and tokenizer.json. "
    "Its scores are the answer decision's first signals: after changing it, run calibrate for each collection "
    "(until then the shipped default, fitted on the packaged reranker, decides).",
)
RERANK_CANDIDATES = env_int(
    "RERANK_CANDIDATES",
    5,
    minimum=1,
    maximum=100,
    help="How many fused candidates the cross-encoder reads, statement by statement.",
)
# When two of BM25 and the dense searches put the fused first hit first, fewer are read.
RERANK_CONFIDENT_CANDIDATES = env_int(
    "RERANK_CONFIDENT_CANDIDATES",
    3,
    minimum=1,
    maximum=100,
    help="How many it reads instead when two of BM25 and the dense searches put the fused first hit first.",
)
RERANK_PAIRED_CANDIDATES = env_int(
    "RERANK_PAIRED_CANDIDATES",
    5,
    minimum=0,
    maximum=100,
    help="Leading candidates whose statements are also read after the statement before them (2 saves about 30 ms a "
    "turn).",
)
RERANK_MAX_TOKENS = env_int(
    "RERANK_MAX_TOKENS",
    256,
    minimum=16,
    maximum=512,
    help="Tokens of each candidate's statements the cross-encoder reads; a longer candidate's tail is not read.",
)
RERANK_BLEND = env_float(
    "RERANK_BLEND",
    0.5,
    minimum=0.0,
    maximum=1.0,
    help="The weight of the reranker's score against the fused score (0: the fused order, 1: the reranker's alone).",
)

# --- Answer turn ----------------------------------------------------------------------------
# The language model that writes replies, rewrites follow-ups, judges claims and proposes the refund tool
# call: `none` (the offline reader answers; the default, and CI), `anthropic` (Claude), or `openai`: any
# server speaking OpenAI's chat completions (OpenAI, Ollama, vLLM, llama.cpp's server, LM Studio).
# ANTHROPIC_API_KEY alone still selects Claude, and the ANTHROPIC_* names still set its model and limits.
ANTHROPIC_API_KEY = env_str(
    "ANTHROPIC_API_KEY",
    "",
    help="Claude's API key under its name from before the LLM_* settings: set alone, it selects "
    "LLM_PROVIDER=anthropic and is the default LLM_API_KEY.",
).strip()
LLM_PROVIDER = env_choice(
    "LLM_PROVIDER",
    "anthropic" if ANTHROPIC_API_KEY else "none",
    ("none", "anthropic", "openai"),
    help="The language model that writes replies, rewrites follow-ups and judges claims: none (the offline reader), "
    "anthropic (Claude), or openai (any server speaking OpenAI's chat completions: OpenAI, Ollama, vLLM, llama.cpp's "
    "server, LM Studio).",
)
if LLM_PROVIDER == "anthropic":
    _LLM_DEFAULTS = (
        ANTHROPIC_API_KEY,
        env_str(
            "ANTHROPIC_MODEL",
            "claude-sonnet-5-5",
            help="The default LLM_MODEL for Claude, under its name from before the LLM_* settings.",
        ),  # claude-sonnet-4-5 reached end of life on 2026-11-30
        env_float(
            "ANTHROPIC_TIMEOUT_S",
            30.0,
            minimum=1.0,
            maximum=600.0,
            help="The default LLM_TIMEOUT_S for Claude, under its name from before the LLM_* settings.",
        ),
        env_int(
            "ANTHROPIC_MAX_RETRIES",
            3,
            minimum=0,
            maximum=10,
            help="The default LLM_MAX_RETRIES for Claude, under its name from before the LLM_* settings.",
        ),
        env_float(
            "ANTHROPIC_BACKOFF_S",
            1.0,
            minimum=0.0,
            maximum=60.0,
            help="The default LLM_BACKOFF_S for Claude, under its name from before the LLM_* settings.",
        ),
        env_int(
            "ANTHROPIC_MAX_TOKENS",
            1024,
            minimum=16,
            maximum=8192,
            help="The default LLM_MAX_TOKENS for Claude, under its name from before the LLM_* settings.",
        ),
    )
else:
    # A local model on a CPU takes its time, and a reply of a few sentences needs few tokens.
    _LLM_DEFAULTS = ("", "", 60.0, 2, 1.0, 512)
LLM_API_KEY = env_str(
    "LLM_API_KEY",
    _LLM_DEFAULTS[0],
    help="The key sent to the model's server (a bearer token for openai); local servers need none.",
).strip()
LLM_MODEL = env_str(
    "LLM_MODEL",
    _LLM_DEFAULTS[1],
    help="The model's name as its server knows it (claude-sonnet-5-5, gpt-4o-mini, or llama3.2 on Ollama); required "
    "unless LLM_PROVIDER is none.",
).strip()
LLM_BASE_URL = env_str(
    "LLM_BASE_URL",
    "https://api.openai.com/v1" if LLM_PROVIDER == "openai" else "",
    help="Where the model's server listens, up to its API version (http://127.0.0.1:11434/v1 for Ollama); empty for "
    "anthropic uses Anthropic's own.",
).strip()
LLM_TIMEOUT_S = env_float(
    "LLM_TIMEOUT_S",
    _LLM_DEFAULTS[2],
    minimum=1.0,
    maximum=600.0,
    help="Seconds one call to the language model may take.",
)
LLM_MAX_RETRIES = env_int(
    "LLM_MAX_RETRIES",
    _LLM_DEFAULTS[3],
    minimum=0,
    maximum=10,
    help="How often a call that timed out or got a 408, 409, 429 or 5xx answer is retried, with exponential backoff "
    "(or the server's retry-after), before the offline reader answers.",
)
LLM_BACKOFF_S = env_float(
    "LLM_BACKOFF_S",
    _LLM_DEFAULTS[4],
    minimum=0.0,
    maximum=60.0,
    help="The base of the exponential backoff between retries, in seconds.",
)
LLM_MAX_TOKENS = env_int(
    "LLM_MAX_TOKENS",
    _LLM_DEFAULTS[5],
    minimum=16,
    maximum=8192,
    help="The most tokens the language model may write for one reply.",
)
# After a call has failed every attempt, the provider is skipped this long: turns answer from the offline
# reader at once instead of each waiting out LLM_TIMEOUT_S × attempts again (0: never skip).
LLM_COOLDOWN_S = env_float(
    "LLM_COOLDOWN_S",
    60.0,
    minimum=0.0,
    maximum=3600.0,
    help="After a call has failed every attempt, the provider is skipped this many seconds and turns answer from the "
    "offline reader at once (0: never skip).",
)
if LLM_PROVIDER == "anthropic" and not LLM_API_KEY:
    raise ImproperlyConfigured("LLM_PROVIDER=anthropic needs an API key: set LLM_API_KEY (or ANTHROPIC_API_KEY).")
if LLM_PROVIDER != "none" and not LLM_MODEL:
    raise ImproperlyConfigured(
        f"LLM_PROVIDER={LLM_PROVIDER} needs LLM_MODEL, the model's name as the server knows it "
        "(e.g. claude-sonnet-5-5, gpt-4o-mini, or llama3.2 on Ollama)."
    )
if LLM_BASE_URL and not LLM_BASE_URL.startswith(("http://", "https://")):
    raise ImproperlyConfigured(
        f"LLM_BASE_URL={LLM_BASE_URL!r} must be an http:// or https:// URL, e.g. http://127.0.0.1:11434/v1 for Ollama."
    )
# Personal data masked before text leaves for a third-party model or reaches the logs (Presidio names).
PII_ENTITIES = [
    e.strip()
    for e in env_str(
        "PII_ENTITIES",
        "PERSON,EMAIL_ADDRESS,PHONE_NUMBER,CREDIT_CARD,LOCATION,IBAN_CODE,IP_ADDRESS,NATIONAL_ID",
        help="Comma-separated kinds of personal data masked before text leaves for a third-party model or reaches the "
        "logs (Presidio's names, and NATIONAL_ID).",
    ).split(",")
    if e.strip()
]
# NATIONAL_ID: US SSN, UK National Insurance, Spanish DNI/NIE, Italian codice fiscale, Indian PAN.
_KNOWN_PII = {
    "PERSON", "EMAIL_ADDRESS", "PHONE_NUMBER", "CREDIT_CARD", "LOCATION", "IBAN_CODE", "IP_ADDRESS", "URL",
    "NATIONAL_ID",
}  # fmt: skip
if set(PII_ENTITIES) - _KNOWN_PII:
    raise ImproperlyConfigured(
        f"PII_ENTITIES has unknown kinds {sorted(set(PII_ENTITIES) - _KNOWN_PII)}; known: {sorted(_KNOWN_PII)}."
    )
# Names are read by spaCy's model and by a tagger of our own (lab/names_training.py), trained on public NER
# text of many genres; the union is masked. "off" leaves names to spaCy and the rules.
NAME_TAGGER = env_str(
    "NAME_TAGGER",
    str(BASE_DIR / "answering" / "privacy" / "name_tagger"),
    help="The name tagger read beside spaCy when masking personal data: a folder with model.onnx and "
    "tokenizer.json (lab.names_training writes one), or off.",
)
if NAME_TAGGER != "off" and not all((Path(NAME_TAGGER) / f).is_file() for f in ("model.onnx", "tokenizer.json")):
    raise ImproperlyConfigured(
        f"NAME_TAGGER={NAME_TAGGER!r} must be a folder with model.onnx and tokenizer.json "
        "(python -m lab.names_training --out FOLDER writes one), or off."
    )
# How many retrieved chunks a turn considers, and the token budget of the context given to the generator.
ANSWER_PASSAGES = env_int(
    "ANSWER_PASSAGES", 6, minimum=1, maximum=20, help="How many retrieved chunks a turn considers."
)
CONTEXT_BUDGET_TOKENS = env_int(
    "CONTEXT_BUDGET_TOKENS",
    1500,
    minimum=200,
    maximum=100_000,
    help="The token budget of the context given to the generator (the policy is never trimmed).",
)
# The turn answers when the probability that its evidence answers the question reaches the cut of the
# collection's calibrated decision (or of the shipped default). Set, this probability replaces that cut.
ABSTAIN_THRESHOLD = (
    env_float(
        "ABSTAIN_THRESHOLD",
        0.5,
        minimum=0.0,
        maximum=1.0,
        help="A probability (0 to 1) that replaces the answer cut of the collection's calibrated decision (or of the "
        "shipped default): the turn answers when the probability that its evidence answers reaches it; unset, the "
        "decision's own cut applies.",
    )
    if os.environ.get("ABSTAIN_THRESHOLD")
    else None
)
# Grounding tiers: cosine of (claim, cited sentence) that counts as support on its own, and the support
# verifier's cross-encoder logit (chosen with `manage.py evaluate grounding`).
GROUNDING_SIMILARITY_THRESHOLD = env_float(
    "GROUNDING_SIMILARITY_THRESHOLD",
    0.9,
    minimum=0.0,
    maximum=1.0,
    help="The cosine similarity of a claim and its cited sentence that counts as support on its own.",
)
GROUNDING_SUPPORT_THRESHOLD = env_float(
    "GROUNDING_SUPPORT_THRESHOLD",
    3.0,
    minimum=-20.0,
    maximum=20.0,
    help="The support verifier's cross-encoder logit from which a claim counts as supported (chosen with manage.py "
    "evaluate grounding).",
)
# The entailment tier: an NLI sequence classifier (local directory or hub id) where a deployment has one;
# empty (the default: none ships on PyPI) uses the support verifier instead.
NLI_MODEL = env_str(
    "NLI_MODEL",
    "",
    help="An NLI sequence classifier (a local folder or a hub id) for grounding's entailment tier; empty (none ships "
    "on PyPI) uses the support verifier instead.",
).strip()
NLI_THRESHOLD = env_float(
    "NLI_THRESHOLD",
    0.5,
    minimum=0.0,
    maximum=1.0,
    help="The entailment probability from which the NLI model counts a claim as supported.",
)

# --- Chat -----------------------------------------------------------------------------------
# The collection the customer widget and the public help pages serve.
CHAT_COLLECTION = env_str(
    "CHAT_COLLECTION", "helpcentre", help="The collection the customer widget and the public help pages serve."
)
# A websocket frame larger than this is refused (a message itself is limited to 2,000 characters).
CHAT_MAX_FRAME_BYTES = env_int(
    "CHAT_MAX_FRAME_BYTES",
    16_384,
    minimum=1_024,
    maximum=1_048_576,
    help="Websocket frames larger than this are refused (a message itself is limited to 2,000 characters).",
)
# Per connection: customer messages may come in a burst of CHAT_MESSAGE_BURST, then one every
# 1/CHAT_MESSAGES_PER_S seconds; any frame (typing included) in a burst of CHAT_FRAME_BURST.
CHAT_MESSAGE_BURST = env_int(
    "CHAT_MESSAGE_BURST",
    5,
    minimum=1,
    maximum=1000,
    help="Customer messages one connection may send in a burst before CHAT_MESSAGES_PER_S applies.",
)
CHAT_MESSAGES_PER_S = env_float(
    "CHAT_MESSAGES_PER_S",
    0.5,
    minimum=0.01,
    maximum=100.0,
    help="Customer messages per second one connection may send after its burst.",
)
CHAT_FRAME_BURST = env_int(
    "CHAT_FRAME_BURST",
    30,
    minimum=1,
    maximum=10_000,
    help="Frames of any kind (typing included) one connection may send in a burst before CHAT_FRAMES_PER_S applies.",
)
CHAT_FRAMES_PER_S = env_float(
    "CHAT_FRAMES_PER_S",
    5.0,
    minimum=0.1,
    maximum=1000.0,
    help="Frames of any kind per second one connection may send after its burst.",
)
# How long a chat can be resumed from the token the widget keeps.
CHAT_SESSION_MAX_AGE_S = env_int(
    "CHAT_SESSION_MAX_AGE_S",
    7 * 24 * 3600,
    minimum=60,
    help="How long, in seconds, a chat can be resumed from the token the widget keeps.",
)
# Load the models when the server starts rather than on the first customer's question.
CHAT_WARM_MODELS = env_bool(
    "CHAT_WARM_MODELS",
    True,
    help="Load the models when the server starts rather than on the first customer's question.",
)
# With the "threads" runner (one process, no Redis), turns run in this many threads of the server process.
CHAT_TURN_WORKERS = env_int(
    "CHAT_TURN_WORKERS",
    2,
    minimum=1,
    maximum=64,
    help="With the threads runner (one process, no Redis), how many threads of the server process answer turns.",
)
# At most this many turns wait for a worker; a message beyond that is kept and the customer told the
# assistant is busy (the server offers it to the queue again every CHAT_BUSY_RETRY_S while they wait).
CHAT_TURN_QUEUE_LIMIT = env_int(
    "CHAT_TURN_QUEUE_LIMIT",
    500,
    minimum=1,
    maximum=1_000_000,
    help="At most this many turns wait for a worker; a message beyond that is kept and the customer told the "
    "assistant is busy.",
)
CHAT_BUSY_RETRY_S = env_float(
    "CHAT_BUSY_RETRY_S",
    2.0,
    minimum=0.1,
    maximum=60.0,
    help="How often, in seconds, the server offers a kept message to the queue again while its customer waits.",
)
# Threads (each with its own database connection) per websocket server process for the sockets' database
# calls, besides the one that stores customer messages.
CHAT_DATABASE_THREADS = env_int(
    "CHAT_DATABASE_THREADS",
    4,
    minimum=1,
    maximum=64,
    help="Threads, each with its own database connection, per websocket server process for the sockets' database "
    "calls, besides the one that stores customer messages.",
)
# Model threads in each Celery turn-worker process; 0: the machine's cores shared among the worker's processes.
CHAT_WORKER_MODEL_THREADS = env_int(
    "CHAT_WORKER_MODEL_THREADS",
    0,
    minimum=0,
    maximum=256,
    help="Model threads in each Celery turn-worker process; 0 shares the machine's cores among the worker's processes.",
)
# A customer message whose answer started this long ago without finishing is answered again on resume.
CHAT_STALE_TURN_S = env_int(
    "CHAT_STALE_TURN_S",
    300,
    minimum=10,
    help="A customer message whose answer started this many seconds ago without finishing is answered again on resume.",
)
# Redis lets several server processes share conversations; without it the channel layer is in-memory.
REDIS_URL = env_str(
    "REDIS_URL",
    "",
    help="A redis://, rediss:// or unix:// URL: the channel layer several server processes share, the Celery broker "
    "of the turn and ingestion workers, and the cache the rate limits count in; empty keeps each in memory.",
).strip()
if REDIS_URL and not REDIS_URL.startswith(("redis://", "rediss://", "unix://")):
    raise ImproperlyConfigured(f"REDIS_URL must be a redis://, rediss:// or unix:// URL, got {REDIS_URL!r}.")
# A chat socket waits for its next event in 5-second blocking reads of Redis; redis-py 8 also gives up on
# any read after 5 s by default, and the loser of that race is the socket (an idle chat was closed after
# ~5 s). Reads may therefore take this long; a Redis that is really gone is still noticed within it.
REDIS_SOCKET_TIMEOUT_S = 15
if REDIS_URL:
    CHANNEL_LAYERS = {
        "default": {
            "BACKEND": "channels_redis.core.RedisChannelLayer",
            # driver_info None: no CLIENT SETINFO on connect, and no scan of the installed packages' metadata
            # (redis-py looks its own version up there for every new connection; one per open chat).
            # capacity: frames waiting for one socket before the layer drops new ones; a reply streams a frame
            # per token, and at 200 chats at once the default 100 overflowed ("over capacity in group").
            "CONFIG": {
                "hosts": [{"address": REDIS_URL, "socket_timeout": REDIS_SOCKET_TIMEOUT_S, "driver_info": None}],
                "capacity": 1000,
            },
        }
    }
# Where turns run. "celery": worker processes (`celery -A supportbot worker -Q turns`) fed through Redis, so
# the server process only validates, stores, acknowledges and relays; the default wherever Redis is set.
# "threads": in the server's own process, for one process without Redis (acknowledgements then wait
# behind the models' CPU under load).
CHAT_TURN_RUNNER = env_choice(
    "CHAT_TURN_RUNNER",
    "celery" if REDIS_URL else "threads",
    ("celery", "threads"),
    help="Where turns run: celery (worker processes fed through Redis; the server only validates, stores, "
    "acknowledges and relays) or threads (in the server's own process, for one process without Redis).",
)
if CHAT_TURN_RUNNER == "celery" and not REDIS_URL:
    raise ImproperlyConfigured("CHAT_TURN_RUNNER=celery needs REDIS_URL (the workers' queue is in Redis).")
CELERY_BROKER_URL = REDIS_URL
CELERY_TASK_IGNORE_RESULT = True
# A task is acknowledged when it ends, and a worker takes one at a time: a worker that dies mid-turn gives
# its turn back instead of losing it, and waiting turns stay in Redis where the queue's length is visible.
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Ingestion has a queue of its own, so a large sync never holds up a customer's turn.
CELERY_TASK_ROUTES = {"conversations.tasks.*": {"queue": "turns"}, "knowledge.tasks.*": {"queue": "ingest"}}
# A turn given back by a dead worker is offered again after this long (Redis has no acknowledgement
# timeout of its own); the claim on the message (CHAT_STALE_TURN_S) keeps it from being answered twice.
CELERY_BROKER_TRANSPORT_OPTIONS = {"visibility_timeout": CHAT_STALE_TURN_S + 60}
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Handing a turn over gives up within about a second when Redis is gone (the server then says so and retries).
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 2, "interval_start": 0, "interval_step": 0.2, "interval_max": 0.5}
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
# Syncs from the admin, the ingestion API and the schedule: written by workers of the "ingest" queue, or
# in the process that asked for them ("here": the admin's request waits for its upload to be indexed).
INGEST_RUNNER = env_choice(
    "INGEST_RUNNER",
    "celery" if REDIS_URL else "here",
    ("celery", "here"),
    help="Where syncs from the admin, the ingestion API and the schedule are written: celery (workers of the ingest "
    "queue) or here (the process that asked for them).",
)
if INGEST_RUNNER == "celery" and not REDIS_URL:
    raise ImproperlyConfigured("INGEST_RUNNER=celery needs REDIS_URL (the workers' queue is in Redis).")
# Host names the ingestion API may be asked to fetch although they resolve to a private or local address
# (an intranet help centre); every other such address is refused.
INGEST_API_PRIVATE_HOSTS = [
    h.strip().lower()
    for h in env_str(
        "INGEST_API_PRIVATE_HOSTS",
        "",
        help="Comma-separated host names the ingestion API may fetch although they resolve to a private or local "
        "address (an intranet help centre); every other such address is refused.",
    ).split(",")
    if h.strip()
]
# How often beat looks for sources due a re-sync (each source has its own interval, in minutes).
SOURCE_RESYNC_CHECK_S = env_int(
    "SOURCE_RESYNC_CHECK_S",
    60,
    minimum=1,
    help="How often, in seconds, beat looks for sources due a re-sync (each source has its own interval, in minutes).",
)
CELERY_BEAT_SCHEDULE = {
    "sync-due-sources": {"task": "knowledge.tasks.sync_due_sources", "schedule": float(SOURCE_RESYNC_CHECK_S)}
}
LOGIN_URL = "staff-login"
LOGIN_REDIRECT_URL = "staff-queue"

# --- Verified customers -----------------------------------------------------------------------
# The host site signs a customer token (HMAC-SHA256 of the customer id and an expiry) with this secret and
# passes it to the widget; empty: every visitor is anonymous and customer tokens are refused.
CUSTOMER_TOKEN_SECRET = env_str(
    "CUSTOMER_TOKEN_SECRET",
    "insecure-development-customer-token-secret" if DEBUG else "",
    help="The secret (at least 32 characters) the host site signs customer tokens with, an HMAC-SHA256 of the "
    "customer id and an expiry; empty: every visitor is anonymous and customer tokens are refused.",
)
if CUSTOMER_TOKEN_SECRET and len(CUSTOMER_TOKEN_SECRET) < 32:
    raise ImproperlyConfigured("CUSTOMER_TOKEN_SECRET must be at least 32 characters (a random secret).")
# The demo page lets a visitor chat as any demo customer: for trying the product, never for production.
DEMO_CUSTOMERS = env_bool(
    "DEMO_CUSTOMERS",
    DEBUG,
    help="Let the demo page's visitors chat as any demo customer: for trying the product, never for production.",
)
# Refunds the gatekeeper approves on its own: up to this amount, on a delivered order, within this window.
REFUND_AUTO_APPROVE_LIMIT = env_float(
    "REFUND_AUTO_APPROVE_LIMIT",
    50.0,
    minimum=0.0,
    maximum=100_000.0,
    help="The largest refund the gatekeeper approves on its own, on a delivered order within REFUND_WINDOW_DAYS.",
)
REFUND_WINDOW_DAYS = env_int(
    "REFUND_WINDOW_DAYS",
    30,
    minimum=0,
    maximum=3650,
    help="Days after delivery within which the gatekeeper approves a refund on its own.",
)

# --- Rate limits --------------------------------------------------------------------------------
# Counted in the cache, so with REDIS_URL every server process shares the counts; without it each
# process counts alone (fine for the single process of a self-hosted install).
CACHES: dict[str, dict[str, object]] = {
    "default": (
        {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": REDIS_URL}
        if REDIS_URL
        else {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}
    )
}
# Per client address, per window of RATE_LIMIT_WINDOW_S: new websockets (chat and staff queue), and
# posts (sign-ins, staff replies, admin edits). An office or a mobile carrier puts many customers behind
# one address, hence generous counts; behind a proxy, run daphne with --proxy-headers so the address is
# the customer's, not the proxy's.
RATE_LIMIT_WINDOW_S = env_int(
    "RATE_LIMIT_WINDOW_S",
    60,
    minimum=1,
    maximum=86_400,
    help="The window, in seconds, of the per-address limits on new websockets and on posts.",
)
RATE_LIMIT_CONNECTIONS_PER_IP = env_int(
    "RATE_LIMIT_CONNECTIONS_PER_IP",
    120,
    minimum=1,
    help="New websockets (chat and staff queue) one client address may open per window.",
)
RATE_LIMIT_WRITES_PER_IP = env_int(
    "RATE_LIMIT_WRITES_PER_IP",
    120,
    minimum=1,
    help="Posts (sign-ins, staff replies, admin edits) one client address may make per window.",
)
# Failed sign-ins (staff queue and admin) before further attempts wait out LOGIN_LOCKOUT_S, counted per
# username and per address.
LOGIN_FAILURES_PER_USERNAME = env_int(
    "LOGIN_FAILURES_PER_USERNAME",
    5,
    minimum=1,
    maximum=1000,
    help="Failed sign-ins (staff queue and admin) for one username before further attempts wait out LOGIN_LOCKOUT_S.",
)
LOGIN_FAILURES_PER_IP = env_int(
    "LOGIN_FAILURES_PER_IP",
    20,
    minimum=1,
    maximum=10_000,
    help="Failed sign-ins (staff queue and admin) from one address before further attempts wait out LOGIN_LOCKOUT_S.",
)
LOGIN_LOCKOUT_S = env_int(
    "LOGIN_LOCKOUT_S",
    900,
    minimum=1,
    maximum=86_400,
    help="Seconds further sign-ins wait once a username or an address has failed too often.",
)

# Staff replies by e-mail, for customers who left an address while nobody was available. Off until
# EMAIL_HOST names an SMTP server; then the sender and the public address of the chat (for the link back
# in each e-mail) must be right, or the server refuses to start.
EMAIL_HOST = env_str(
    "EMAIL_HOST",
    "",
    help="The SMTP server for staff replies by e-mail to customers who left an address while nobody was available; "
    "empty turns them off.",
).strip()
EMAIL_PORT = env_int("EMAIL_PORT", 587, minimum=1, maximum=65_535, help="The SMTP server's port.")
EMAIL_HOST_USER = env_str(
    "EMAIL_HOST_USER", "", help="The SMTP user name; set together with EMAIL_HOST_PASSWORD."
).strip()
EMAIL_HOST_PASSWORD = env_str("EMAIL_HOST_PASSWORD", "", help="The SMTP password; set together with EMAIL_HOST_USER.")
EMAIL_USE_TLS = env_bool("EMAIL_USE_TLS", True, help="Talk to the SMTP server over STARTTLS.")
EMAIL_TIMEOUT = env_float(
    "EMAIL_TIMEOUT_S", 10.0, minimum=1.0, maximum=120.0, help="Seconds one connection to the SMTP server may take."
)
DEFAULT_FROM_EMAIL = env_str(
    "DEFAULT_FROM_EMAIL",
    "Support <support@localhost>",
    help="The sender of e-mailed replies: an address, with or without a display name (support@example.com, or Support "
    "and the address in angle brackets).",
).strip()
SUPPORTBOT_PUBLIC_URL = env_str(
    "SUPPORTBOT_PUBLIC_URL",
    "" if PRODUCTION else "http://127.0.0.1:8000",
    help="The site's public address, like https://support.example.com, that e-mailed replies link back to; required "
    "in production when EMAIL_HOST is set.",
).strip()
EMAIL_REPLIES = bool(EMAIL_HOST)


def _check_email_settings() -> None:
    from email.utils import parseaddr
    from urllib.parse import urlsplit

    from django.core.exceptions import ValidationError
    from django.core.validators import validate_email

    if bool(EMAIL_HOST_USER) != bool(EMAIL_HOST_PASSWORD):
        raise ImproperlyConfigured("EMAIL_HOST_USER and EMAIL_HOST_PASSWORD go together: set both or neither.")
    try:
        validate_email(parseaddr(DEFAULT_FROM_EMAIL)[1])
    except ValidationError:
        raise ImproperlyConfigured(
            f"DEFAULT_FROM_EMAIL={DEFAULT_FROM_EMAIL!r} is not an address ('support@example.com' or "
            "'Support <support@example.com>')."
        ) from None
    public = urlsplit(SUPPORTBOT_PUBLIC_URL)
    if public.scheme not in ("http", "https") or not public.netloc or public.query or public.fragment:
        raise ImproperlyConfigured(
            f"SUPPORTBOT_PUBLIC_URL={SUPPORTBOT_PUBLIC_URL!r} must be the site's address, like "
            "https://support.example.com: e-mailed replies link back to the chat there."
        )


if EMAIL_REPLIES:
    _check_email_settings()
