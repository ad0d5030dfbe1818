"""Settings shared by every runtime; each value can be set from the environment.

The embedded default (no environment at all) is a SQLite file, a filesystem Celery
broker and a diskcache cache under ``var/``, so a fresh clone runs without any server.
"""

import os
import re
from datetime import timedelta
from pathlib import Path

import environ
from django.core.exceptions import ImproperlyConfigured
from kombu import Exchange, Queue

BASE_DIR = Path(__file__).resolve().parent.parent.parent

env = environ.Env()
# The embedded default's files (SQLite, the broker's folders, the cache, media): VAR_DIR
# moves them all, e.g. for a second copy of `make run` beside the first.
VAR_DIR = Path(env("VAR_DIR", default=str(BASE_DIR / "var")))

SECRET_KEY = env(
    "DJANGO_SECRET_KEY", default="insecure-local-only-key-do-not-use-in-production"
)
DEBUG = env.bool("DJANGO_DEBUG", default=False)
ALLOWED_HOSTS = env.list(
    "DJANGO_ALLOWED_HOSTS", default=["localhost", "127.0.0.1", "[::1]"]
)

INSTALLED_APPS = [
    # Support's back office first: its admin/index.html (the overview) overrides Django's.
    "backoffice",
    # django.contrib.admin, with support's site (backoffice/site.py).
    "backoffice.apps.SupportAdminConfig",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "whitenoise.runserver_nostatic",
    "django.contrib.staticfiles",
    "rest_framework",
    "django_filters",
    "django_countries",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "accounts",
    "users",
    # The provider seam: no models, its system checks of the provider settings.
    "providers",
    "consent",
    "leads",
    "calls",
    "scoring",
    "clicktocall",
    "webhooks",
    "insights",
    "texting",
    "appointments",
    # E-mail to leads: the first-touch and not-reached messages, with the opt-out link.
    "emails",
    "consenting",
    "handoffs",
    "cadence",
    "notify",
    "pages",
    "core",
    "demo",
]

# The sessions, signed-in user and messages are Django's, for pages only: the interfaces'
# requests go straight past them (core/middleware.py).
MIDDLEWARE = [
    "core.middleware.RequestSizeLimitMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "core.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "core.middleware.AuthenticationMiddleware",
    "users.middleware.UserTimezoneMiddleware",
    "core.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "core.middleware.NotFoundMiddleware",
]

ROOT_URLCONF = "config.urls"
WSGI_APPLICATION = "config.wsgi.application"
AUTH_USER_MODEL = "users.User"

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
                "pages.context.pages",
            ],
        },
    },
]

DATABASES = {
    "default": env.db("DATABASE_URL", default=f"sqlite:///{VAR_DIR / 'db.sqlite3'}")
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # The web server and the worker write at once: wait for the lock instead of failing,
    # and take it at BEGIN so a read never has to be upgraded mid-transaction.
    DATABASES["default"]["OPTIONS"] = {
        "timeout": 20,
        "transaction_mode": "IMMEDIATE",
        "init_command": "PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;",
    }
else:
    DATABASES["default"]["CONN_MAX_AGE"] = env.int("DATABASE_CONN_MAX_AGE", default=60)
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # Django's, with a health check that asks the socket before it asks the server.
    DATABASES["default"]["ENGINE"] = "core.postgresql"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

REDIS_URL = env("REDIS_URL", default="")
# The cache holds rate-limit counters and the simulator's record of each leg it plays,
# shared by every process (web and workers). When Redis cannot be reached the limits let
# requests through (core/throttling.py), and short timeouts keep that to milliseconds.
REDIS_CACHE_OPTIONS: dict[str, object] = {
    "socket_connect_timeout": env.float("REDIS_CONNECT_TIMEOUT", default=0.25),
    "socket_timeout": env.float("REDIS_SOCKET_TIMEOUT", default=0.5),
}
# The embedded default (`make run`): diskcache's Django backend, SQLite databases under
# var/cache, shared by every process of `make run` (gunicorn's workers and Celery's) as
# Redis would be. Its add and incr are each one SQLite transaction, so the rate-limit
# counters stay exact under concurrency (a file per key, Django's file cache, loses counts:
# its incr is a read and a write). An in-process cache would hide the simulator's leg
# records from the worker that runs the sweep, which then ends live calls as never placed.
EMBEDDED_CACHE = {
    "BACKEND": "diskcache.DjangoCache",
    "LOCATION": str(env.path("EMBEDDED_CACHE_DIR", default=VAR_DIR / "cache")),
}
# Redis behind Sentinel: REDIS_URL and CELERY_BROKER_URL list the sentinels
# (sentinel://10.0.0.5:26379;sentinel://10.0.0.6:26379/1), REDIS_SENTINEL_MASTER names the
# primary they watch (docs/operations.md, "Redis with Sentinel").
REDIS_SENTINEL_MASTER = env("REDIS_SENTINEL_MASTER", default="leadcall")
if REDIS_URL.startswith("sentinel://"):
    REDIS_CACHE_OPTIONS["master_name"] = REDIS_SENTINEL_MASTER
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "core.cache.RedisCache",
            "LOCATION": REDIS_URL,
            "OPTIONS": REDIS_CACHE_OPTIONS,
        }
    }
else:
    CACHES = {"default": EMBEDDED_CACHE}

PASSWORD_HASHERS = [
    "django.contrib.auth.hashers.PBKDF2PasswordHasher",
    "django.contrib.auth.hashers.ScryptPasswordHasher",
]
AUTH_PASSWORD_VALIDATORS = [
    {
        "NAME": "django.contrib.auth.password_validation.MinimumLengthValidator",
        "OPTIONS": {"min_length": 7},
    },
    {"NAME": "users.passwords.ComplexityValidator"},
]

# The names integrators and dealers use ("country": "United States").
COUNTRIES_OVERRIDE = {"US": "United States", "GB": "United Kingdom"}

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "staticfiles"
MEDIA_URL = "media/"
MEDIA_ROOT = env.path("MEDIA_ROOT", default=VAR_DIR / "media")
# Media (recordings, profile pictures): their own module.
from config.settings.storage import MEDIA_STORAGE, MEDIA_STORAGES  # noqa: E402

STORAGES = {
    "default": MEDIA_STORAGES[MEDIA_STORAGE],
    "staticfiles": {
        "BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"
    },
}

# Links handed to integrators and provider callbacks are built from this address.
PUBLIC_BASE_URL = env("PUBLIC_BASE_URL", default="http://localhost:8000").rstrip("/")

# Every interface refuses bodies over 1 MiB before reading them (CONTRACT.md, Common).
API_MAX_BODY_BYTES = 1024 * 1024
DATA_UPLOAD_MAX_MEMORY_SIZE = API_MAX_BODY_BYTES

API_RATE_LIMIT_DEFAULTS = {
    "users": "600/min",
    "leads": "1200/min",
    "clicktocall": "120/min",
    "scoreddata": "60/min",
    "appointments": "120/min",
    "consent": "120/min",
}
API_RATE_LIMITS = {**API_RATE_LIMIT_DEFAULTS, **env.dict("API_RATE_LIMITS", default={})}
API_KEY_ROTATION_GRACE = timedelta(
    hours=env.float("API_KEY_ROTATION_GRACE_HOURS", default=24)
)
# Failed keys per client address, across every API that takes one (over it: 429), and
# failed admin sign-ins per address and per username. Valid keys never count.
AUTH_FAILURE_LIMIT = env("AUTH_FAILURE_LIMIT", default="20/min")
ADMIN_LOGIN_FAILURE_LIMIT = env("ADMIN_LOGIN_FAILURE_LIMIT", default="10/min")
# Proxies in front of the service that append the client's address to X-Forwarded-For
# (0: clients connect directly and REMOTE_ADDR is theirs).
TRUSTED_PROXY_COUNT = env.int("TRUSTED_PROXY_COUNT", default=0)

PROFILE_PICTURE_MAX_BYTES = 5 * 1024 * 1024
PROFILE_PICTURE_TIMEOUT = 10.0
# Addresses exempt from the private-network refusal (tests serve pictures from 127.0.0.1),
# and the CA bundle that verifies the picture server (None: the system's).
PROFILE_PICTURE_ALLOWED_ADDRESSES: list[str] = []
PROFILE_PICTURE_CA_BUNDLE: str | None = None

# Outbound webhooks (webhooks/). Every delivery waits at most WEBHOOK_TIMEOUT_SECONDS for
# the receiver; a failed one is retried with exponential backoff and jitter (base doubling
# up to the maximum) for WEBHOOK_RETRY_HOURS, and an endpoint failing that long is disabled.
WEBHOOK_TIMEOUT_SECONDS = env.float("WEBHOOK_TIMEOUT_SECONDS", default=10.0)
WEBHOOK_RETRY_WINDOW = timedelta(hours=env.float("WEBHOOK_RETRY_HOURS", default=24))
WEBHOOK_DISABLE_AFTER = timedelta(hours=env.float("WEBHOOK_DISABLE_HOURS", default=24))
WEBHOOK_BACKOFF_BASE_SECONDS = env.float("WEBHOOK_BACKOFF_BASE_SECONDS", default=2.0)
WEBHOOK_BACKOFF_MAX_SECONDS = env.float("WEBHOOK_BACKOFF_MAX_SECONDS", default=3600.0)
# Sent events are kept this long (what "replay since" can reach), then pruned hourly.
WEBHOOK_EVENT_RETENTION = timedelta(
    days=env.float("WEBHOOK_EVENT_RETENTION_DAYS", default=30)
)
# After a rotation the previous secret still signs deliveries for this long.
WEBHOOK_SECRET_OVERLAP = timedelta(
    hours=env.float("WEBHOOK_SECRET_OVERLAP_HOURS", default=24)
)
# Keys that encrypt stored signing secrets (the first encrypts, any decrypts; default
# SECRET_KEY): add a new key in front to rotate without losing existing secrets.
WEBHOOK_SECRET_KEYS: list[str] = env.list("WEBHOOK_SECRET_KEYS", default=[])
# Addresses exempt from the private-network refusal and the CA bundle receivers are
# verified with (None: the system's). Only tests set them (a receiver on 127.0.0.1).
WEBHOOK_ALLOWED_ADDRESSES: list[str] = env.list("WEBHOOK_ALLOWED_ADDRESSES", default=[])
WEBHOOK_CA_BUNDLE: str | None = env("WEBHOOK_CA_BUNDLE", default=None)
# Plain HTTP to a loopback address (http://127.0.0.1:8765/) accepted as an endpoint: only
# make run's settings (config/settings/local.py) turn it on, for trying webhooks locally.
WEBHOOK_ALLOW_LOCAL_HTTP = False

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [],
    "DEFAULT_PERMISSION_CLASSES": [],
    "DEFAULT_RENDERER_CLASSES": ["core.api.JSONRenderer"],
    # DRF's JSON parser with a nesting limit (core/api.py).
    "DEFAULT_PARSER_CLASSES": ["core.api.JSONParser"],
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "core.api.exception_handler",
    "UNAUTHENTICATED_USER": None,
}

# The OpenAPI schema (drf-spectacular): its own module.
from config.settings.spectacular import SPECTACULAR_SETTINGS  # noqa: E402,F401


def redis_transport_options(url: str) -> dict[str, object]:
    """The Redis broker's options: a task a dead worker held is delivered again after the
    visibility timeout; a Sentinel URL names the primary its sentinels watch."""
    options: dict[str, object] = {
        "visibility_timeout": env.int("CELERY_VISIBILITY_TIMEOUT", default=3600),
        "queue_order_strategy": "priority",
        # Ten priorities per queue, 0 first: the calls' fair order (calls/pipeline/fair.py).
        "priority_steps": list(range(10)),
    }
    if url.startswith("sentinel://"):
        options["master_name"] = REDIS_SENTINEL_MASTER
    return options


# Celery: a service that must not lose work. A task is acknowledged only after it ran,
# goes back to the queue when its worker dies, and a worker holds one task at a time.
CELERY_BROKER_URL = env("CELERY_BROKER_URL", default="filesystem://")
CELERY_BROKER_TRANSPORT_OPTIONS: dict[str, object] = {}
if CELERY_BROKER_URL == "filesystem://":
    _broker_dir = VAR_DIR / "broker"
    for _folder in ("queue", "control"):
        (_broker_dir / _folder).mkdir(parents=True, exist_ok=True)
    CELERY_BROKER_TRANSPORT_OPTIONS = {
        "data_folder_in": str(_broker_dir / "queue"),
        "data_folder_out": str(_broker_dir / "queue"),
        "control_folder": str(_broker_dir / "control"),
        "store_processed": False,
        # The filesystem transport polls; a tenth of a second keeps the demo's first dial prompt.
        "polling_interval": 0.1,
    }
else:
    CELERY_BROKER_TRANSPORT_OPTIONS = redis_transport_options(CELERY_BROKER_URL)
# Publishing (intake, click-to-call, the pipeline) never waits long on a broker that is down:
# a connection is given up after this many seconds, with no retry, and the process then
# leaves the broker alone for BROKER_BREAK_SECONDS (core/handover.py, ``Breaker``); the
# sweeps hand the work over once it answers again.
BROKER_PUBLISH_TIMEOUT_SECONDS = env.float(
    "BROKER_PUBLISH_TIMEOUT_SECONDS", default=1.0
)
BROKER_BREAK_SECONDS = env.float("BROKER_BREAK_SECONDS", default=3.0)
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
# Keep a worker's database connection across tasks (Celery closes it after every task
# otherwise: a new PostgreSQL connection per task); CONN_MAX_AGE and health checks still
# apply, through close_old_connections around each task (config/celery.py).
CELERY_DB_REUSE_MAX = 1000
CELERY_TASK_TIME_LIMIT = 300
CELERY_TASK_SOFT_TIME_LIMIT = 240
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_IGNORE_RESULT = True
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# The worker keeps the LOGGING below (its lines in LOG_FORMAT); --loglevel still sets the level.
CELERY_WORKER_HIJACK_ROOT_LOGGER = False
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = True
CELERY_TIMEZONE = "UTC"
# Queues: `calls` for what a waiting lead waits on (call setup, dials), `events` for the
# simulator's provider callbacks, `default` for the rest (sweeps, housekeeping). The
# Procfile's `calls` worker consumes `events` before `calls` (Redis "priority" order, the
# order of -Q): a switch hangs up on a callback left unanswered, and callbacks, bounded by
# the calls under way, are what frees agents; the `worker` process takes `default`, so a
# backlog of slow work never delays either. `transcription` holds the media work (a
# simulated call's speech, a provider's recording fetched, speech-to-text): its own worker,
# so a GPU machine can take it alone and its backlog never delays a dial or a webhook. A
# worker started without -Q consumes all four, in the order listed here. Texts to leads and
# the team (texting/) go on `calls` too: a text follows a call's end within a second.
CELERY_TASK_DEFAULT_QUEUE = "default"
CELERY_TASK_QUEUES = [
    Queue(name, Exchange(name), routing_key=name)
    for name in ("events", "calls", "default", "transcription")
]
CELERY_TASK_ROUTES = {
    "calls.tasks.call_setup_task": {"queue": "calls"},
    "calls.tasks.attempt_dial_task": {"queue": "calls"},
    "calls.tasks.simulator_event_task": {"queue": "events"},
    "calls.tasks.simulator_events_task": {"queue": "events"},
    "texting.tasks.simulator_text_status_task": {"queue": "events"},
    "texting.tasks.simulator_text_reply_task": {"queue": "events"},
    "texting.tasks.text_send_task": {"queue": "calls"},
    # A follow-up step runs beside the texts and calls it makes. The scheduler's ticks stay
    # on `default` (the worker that runs the scheduler), so a backlog on `calls` never
    # delays the hand-over of what falls due next.
    "cadence.tasks.step_run_task": {"queue": "calls"},
    "calls.tasks.calls_hand_over_task": {"queue": "calls"},
    "calls.tasks.recording_store_task": {"queue": "transcription"},
    "insights.tasks.transcription_task": {"queue": "transcription"},
}
# The scheduler's sweeps and timers, and the sweeps sent on reconnecting: their own module.
from config.settings.schedule import CELERY_BEAT_SCHEDULE, SWEEPS_ON_CONNECT  # noqa: E402,F401

# Consent ledger (consent/): a lead's text opt-out also stops the account's own lead calls
# to the number (a manager's revocation of calls always does) until a new lead or START.
CONSENT_TEXT_OPT_OUT_STOPS_CALLS = env.bool(
    "CONSENT_TEXT_OPT_OUT_STOPS_CALLS", default=True
)

# Telephony: "simulator" (default; places no real calls) or "twilio".
TELEPHONY_PROVIDER = env("TELEPHONY_PROVIDER", default="simulator")
# The carrier's pace: outbound calls a second per provider account, shared by every worker
# (core/pace.py). Twilio's default for an account is 1 (others 2-5: ask the carrier);
# 0 is no pace, the simulator's default, so `make run` and the tests are not slowed.
TELEPHONY_CALLS_PER_SECOND = env.int(
    "TELEPHONY_CALLS_PER_SECOND", default=1 if TELEPHONY_PROVIDER == "twilio" else 0
)
# A lead whose ADF requestdate is older than this is a re-send: its call is set up after
# every fresh lead (calls/pipeline/fair.py).
LEAD_RESEND_AFTER_SECONDS = env.int("LEAD_RESEND_AFTER_SECONDS", default=3600)
# A dialed leg we hear nothing of for this long (at its provider's time scale) is checked
# with the provider: the sweep ends it as the provider's record says, or leaves it up.
CALLS_LOST_AFTER_SECONDS = env.int("CALLS_LOST_AFTER_SECONDS", default=45)
SIMULATOR_TIME_SCALE = env.float("SIMULATOR_TIME_SCALE", default=1.0)
# Real seconds the simulator delivers its status callbacks late (a slow provider; tests).
SIMULATOR_CALLBACK_DELAY = env.float("SIMULATOR_CALLBACK_DELAY", default=0.0)
# How long "score next" holds a call for one scorer before it returns to the queue.
SCORING_CLAIM_SECONDS = env.int("SCORING_CLAIM_SECONDS", default=300)
TWILIO_ACCOUNT_SID = env("TWILIO_ACCOUNT_SID", default="")
TWILIO_AUTH_TOKEN = env("TWILIO_AUTH_TOKEN", default="")
# Tests point the official client at a local server that speaks Twilio's REST shapes.
TWILIO_API_BASE_URL = env("TWILIO_API_BASE_URL", default="")

# Understanding calls (the insights app; docs/transcription.md). The simulator speaks its
# calls' conversations into their recordings (espeak-ng, offline) unless this is off.
SIMULATOR_SPEECH = env.bool("SIMULATOR_SPEECH", default=True)
# The simulator's recordings as a carrier makes them (8000: 8 kHz, 300-3400 Hz, through
# G.711 µ-law, stored as 16-bit PCM like Twilio's WAV) or as synthesised (16000).
SIMULATOR_RECORDING_RATE = env.int("SIMULATOR_RECORDING_RATE", default=8000)
if SIMULATOR_RECORDING_RATE not in (8000, 16000):
    raise ImproperlyConfigured("SIMULATOR_RECORDING_RATE must be 8000 or 16000")
# Speech-to-text: "faster_whisper" (default), "remote" (an OpenAI-compatible
# /v1/audio/transcriptions endpoint) or "none". The default model is one shipped in a
# package (TRANSCRIPTION_SHIPPED_MODEL: a test and demo model, offline, CPU); production
# names a larger one (large-v3, large-v3-turbo) by name or path, on "cuda".
TRANSCRIPTION_BACKEND = env("TRANSCRIPTION_BACKEND", default="faster_whisper")
TRANSCRIPTION_MODEL = env("TRANSCRIPTION_MODEL", default="")
# With no TRANSCRIPTION_MODEL, the shipped model: "base" (Whisper base, multilingual: on
# 8 kHz telephone audio WER 45.7 % against tiny.en's 53.5 %) or "tiny.en" (the tests').
TRANSCRIPTION_SHIPPED_MODEL = env("TRANSCRIPTION_SHIPPED_MODEL", default="base")
# Where the shipped base model is put together on first use (145 MB).
TRANSCRIPTION_MODEL_DIR = env(
    "TRANSCRIPTION_MODEL_DIR", default=str(VAR_DIR / "models")
)
TRANSCRIPTION_DEVICE = env("TRANSCRIPTION_DEVICE", default="cpu")
# "" = the device's: int8 on the CPU, float16 on a GPU (insights.engines).
TRANSCRIPTION_COMPUTE_TYPE = env("TRANSCRIPTION_COMPUTE_TYPE", default="")
# faster-whisper's batched pipeline decodes a channel's speech in batches of this many
# pieces: "" = the device's (16 on a GPU, none on the CPU, where it does not pay), 0 = off.
TRANSCRIPTION_BATCH_SIZE = env("TRANSCRIPTION_BATCH_SIZE", default="")
# A model named (not a path) may be downloaded from the Hugging Face hub only if this is on.
TRANSCRIPTION_DOWNLOAD = env.bool("TRANSCRIPTION_DOWNLOAD", default=False)
# How faster_whisper is told the call's names and vehicles: "hotwords" (best on 8 kHz
# telephone audio), "prompt" (Whisper's initial prompt: best on 16 kHz) or "none".
TRANSCRIPTION_HINTS = env("TRANSCRIPTION_HINTS", default="hotwords")
# The languages a call may be in (ISO 639-1 codes), the dealer's first: a multilingual
# model tells each channel's language among them and transcribes it in that language;
# one code, or an English-only model, means no detection. Summaries and suggestions read
# English only (understanding.LANGUAGES): a call in another language says so instead.
TRANSCRIPTION_LANGUAGES = [
    c.lower() for c in env.list("TRANSCRIPTION_LANGUAGES", default=["en", "es"])
]
if not TRANSCRIPTION_LANGUAGES or not all(
    re.fullmatch(r"[a-z]{2,3}", c) for c in TRANSCRIPTION_LANGUAGES
):
    raise ImproperlyConfigured("TRANSCRIPTION_LANGUAGES must list codes such as en,es")
TRANSCRIPTION_REMOTE_URL = env("TRANSCRIPTION_REMOTE_URL", default="")
TRANSCRIPTION_REMOTE_KEY = env("TRANSCRIPTION_REMOTE_KEY", default="")
TRANSCRIPTION_REMOTE_MODEL = env("TRANSCRIPTION_REMOTE_MODEL", default="whisper-1")
TRANSCRIPTION_MAX_TRIES = env.int("TRANSCRIPTION_MAX_TRIES", default=3)
# A transcription worker first checks that its engine transcribes (insights/selftest.py).
TRANSCRIPTION_SELF_TEST = env.bool("TRANSCRIPTION_SELF_TEST", default=True)
# A media task's (a recording stored, a transcription) Celery time limits, sized to the
# recording: this many seconds of work per second of audio, at least the floor, at most
# the cap; the hard limit 30 s past the soft one, and a claim's lease 30 s past that.
MEDIA_TIME_LIMIT_PER_AUDIO_SECOND = env.float(
    "MEDIA_TIME_LIMIT_PER_AUDIO_SECOND", default=3.0
)
MEDIA_TIME_LIMIT_FLOOR_SECONDS = env.int("MEDIA_TIME_LIMIT_FLOOR_SECONDS", default=120)
MEDIA_TIME_LIMIT_CAP_SECONDS = env.int("MEDIA_TIME_LIMIT_CAP_SECONDS", default=1800)
# The process synthesising speech or transcribing runs at this Unix nice level (0-19), so on
# a busy machine it yields the CPU to dials and callbacks (core/priority.py).
MEDIA_NICE = env.int("MEDIA_NICE", default=15)
# Summaries: "builtin" (rules over the transcript and the lead; no model) or "openai" (an
# OpenAI-compatible chat endpoint).
SUMMARY_BACKEND = env("SUMMARY_BACKEND", default="builtin")
SUMMARY_URL = env("SUMMARY_URL", default="")
SUMMARY_MODEL = env("SUMMARY_MODEL", default="")
SUMMARY_KEY = env("SUMMARY_KEY", default="")

# One machine-readable line per record: "kv" (key=value pairs) or "json" (core/logging.py).
LOG_FORMAT = env("LOG_FORMAT", default="kv")
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "events": {"()": "core.logging.EventFormatter", "log_format": LOG_FORMAT}
    },
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "events"}},
    "root": {"handlers": ["console"], "level": env("LOG_LEVEL", default="INFO")},
    "loggers": {"django.db.backends": {"level": "WARNING"}},
}

# Pages for scorers, managers and agents (pages/views.py): our own static files (htmx,
# the stylesheet), sign-in, and password-reset mail (printed to the console unless set).
STATICFILES_DIRS = [BASE_DIR / "static"]
# Files served at the site's root by WhiteNoise: /favicon.ico (browsers ask for it on
# every page; a 404 there was two log lines a page view).
WHITENOISE_ROOT = BASE_DIR / "static" / "root"
LOGIN_URL = "auth:login"
LOGIN_REDIRECT_URL = "pages:home"
LOGOUT_REDIRECT_URL = "auth:login"
# E-mail (password resets, notify/: CRM write-back, alerts, the morning report): printed
# readably on the sending process's standard output (core/mail.py; under `make run`, a
# framed "E-mail (not sent ...)" block among the worker's or web's lines) unless EMAIL_URL
# names an SMTP server (smtp://user:pass@host:587 or submission://... for STARTTLS) or
# EMAIL_BACKEND a provider's backend through django-anymail
# (e.g. anymail.backends.postmark.EmailBackend, its keys in ANYMAIL_*).
_email_url = (
    env.email_url_config(env("EMAIL_URL")) if env("EMAIL_URL", default="") else {}
)
if _email_url:
    EMAIL_HOST = _email_url["EMAIL_HOST"]
    EMAIL_PORT = _email_url["EMAIL_PORT"]
    EMAIL_HOST_USER = _email_url["EMAIL_HOST_USER"]
    EMAIL_HOST_PASSWORD = _email_url["EMAIL_HOST_PASSWORD"]
    EMAIL_USE_TLS = _email_url.get("EMAIL_USE_TLS", False)
    EMAIL_USE_SSL = _email_url.get("EMAIL_USE_SSL", False)
EMAIL_BACKEND = env(
    "EMAIL_BACKEND",
    default=_email_url.get("EMAIL_BACKEND") or "core.mail.ConsoleEmailBackend",
)
# A mail server that does not answer within this is a failed try (tried again later).
EMAIL_TIMEOUT = env.float("EMAIL_TIMEOUT", default=10)
# A provider's settings for django-anymail: every ANYMAIL_<NAME> variable, as ANYMAIL[NAME].
ANYMAIL = {
    name.removeprefix("ANYMAIL_"): value
    for name, value in os.environ.items()
    if name.startswith("ANYMAIL_")
}
DEFAULT_FROM_EMAIL = env("DEFAULT_FROM_EMAIL", default="leadcall@localhost")
# The sender of the CRM write-back, the alerts and the morning report.
NOTIFY_FROM_EMAIL = env("NOTIFY_FROM_EMAIL", default=DEFAULT_FROM_EMAIL)
