"""Switchyard settings: every knob comes from the environment, with safe defaults.

docs/operating.md's configuration table lists each variable; keep the two in step.
"""
import json
import os
from pathlib import Path

import dj_database_url

BASE_DIR = Path(__file__).resolve().parent.parent


def env_str(name: str, default: str) -> str:
    return os.environ.get(name, default)


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or value == "":
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name)
    return default if value in (None, "") else int(value)


def env_float(name: str, default: float) -> float:
    value = os.environ.get(name)
    return default if value in (None, "") else float(value)


def env_list(name: str, default: str) -> list[str]:
    return [item.strip() for item in env_str(name, default).split(",") if item.strip()]


DATA_DIR = Path(env_str("SWITCHYARD_DATA_DIR", str(BASE_DIR / "data")))
DATA_DIR.mkdir(parents=True, exist_ok=True)  # the default SQLite file lives here

DEBUG = env_bool("DEBUG", False)
DEVELOPMENT_SECRET_KEY = "django-insecure-switchyard-development-key-change-me"


def secret_key(debug: bool, data_dir: Path) -> str:
    """SECRET_KEY from the environment; else, with DEBUG on, the development key; else a
    strong key generated once and kept in the data folder (mode 0600), so that a fresh
    machine runs with one command and sessions survive restarts. A development key is
    refused whenever DEBUG is off."""
    from django.core.exceptions import ImproperlyConfigured

    key = os.environ.get("SECRET_KEY", "")
    if not key:
        if debug:
            return DEVELOPMENT_SECRET_KEY
        path = data_dir / "secret_key"
        if not path.exists():
            # Written whole to a private file, then linked into place: of processes starting
            # at once, one key wins and nobody reads a half-written file.
            import secrets
            import tempfile

            fd, temporary = tempfile.mkstemp(dir=data_dir, prefix=".secret_key.")  # mode 0600
            try:
                with os.fdopen(fd, "w") as file:
                    file.write(secrets.token_urlsafe(50) + "\n")
                os.link(temporary, path)
            except FileExistsError:
                pass
            finally:
                os.unlink(temporary)
        key = path.read_text().strip()
        if not key:
            raise ImproperlyConfigured(f"{path} is empty: remove it to have a new key generated, or set SECRET_KEY.")
    if not debug and key.startswith("django-insecure"):
        raise ImproperlyConfigured("SECRET_KEY is a development key, which is refused with DEBUG off: "
                                   "unset it to use the generated one in the data folder, or set a long random one.")
    return key


SECRET_KEY = secret_key(DEBUG, DATA_DIR)
ALLOWED_HOSTS = env_list("ALLOWED_HOSTS", "localhost,127.0.0.1,[::1]")
CSRF_TRUSTED_ORIGINS = env_list("CSRF_TRUSTED_ORIGINS", "")

# The folder that `file` data references may read; nothing outside it is served.
WORKSPACE_ROOT = Path(env_str("WORKSPACE_ROOT", str(DATA_DIR / "workspace"))).resolve()
# Limits on resolving data references: a db_query's statement timeout (PostgreSQL), the
# largest file read, and how long a node waits for an unfinished task's output.
REF_DB_TIMEOUT_MS = env_int("REF_DB_TIMEOUT_MS", 5_000)
REF_MAX_FILE_BYTES = env_int("REF_MAX_FILE_BYTES", 20_000_000)
REF_WAIT_SECONDS = env_int("REF_WAIT_SECONDS", 0)

REDIS_URL = env_str("REDIS_URL", "redis://127.0.0.1:6379/0")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "ninja",  # serves the API docs page's Swagger UI from its own static files (no CDN)
    "core",
    "tools",  # the tool catalogue: builtin tools and operators' MCP servers
    "agents",
    "workflows",
    "executions",
    "knowledge",
    "experiments",  # datasets (and experiments over them)
    "quality",  # evaluations and quality gates
    "quality.derive_requests",  # derive requests: raising, deciding, the derived child, their API and pages
    "django_celery_beat",  # the beat's schedule in the database (PeriodicTask), which `schedules` keeps in step
    "schedules",  # workflows started on a cron schedule
    "triggers",  # webhooks that start runs, workflow-scoped API keys, callbacks at a run's end
    "retention",  # old runs deleted (or their details) by the sweep and `purge_runs`
    "benchmarks",  # the benchmark_* commands and the large runs they write
    "demo",  # the demo workflows, `load_demo` and the builtin skills only they use
    "axes",  # sign-in rate limiting (see LOGIN_FAILURE_LIMIT)
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "core.middleware.ApiAnswers",  # outside all else: sees every answer under /api/, errors included
    "csp.middleware.CSPMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "core.middleware.PayloadTooLarge",  # before anything reads the body
    "core.middleware.NulInPageQuery",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "core.middleware.AuditSource",  # where a request's changes come from, for the audit trail
    "core.middleware.LoginRequired",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "axes.middleware.AxesMiddleware",  # last, as axes requires: turns a locked-out sign-in into its page
]

ROOT_URLCONF = "project.urls"
WSGI_APPLICATION = "project.wsgi.application"

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
                "core.context_processors.roles",
            ],
        },
    },
]

DATABASES = {
    "default": dj_database_url.parse(
        env_str("DATABASE_URL", f"sqlite:///{DATA_DIR / 'switchyard.sqlite3'}"),
        conn_max_age=env_int("DATABASE_CONN_MAX_AGE", 0),
    )
}
if DATABASES["default"]["ENGINE"] == "django.db.backends.postgresql":
    # The statements on every node's path (core/rows.py's cursor) are bound on the server and
    # prepared the second time a connection runs them (a statement run once is not worth
    # the extra round trip); Django's own queries are bound on the client, which never
    # prepares. Off (None) for a pooler that does not keep prepared statements.
    DATABASES["default"].setdefault("OPTIONS", {})["prepare_threshold"] = (
        1 if env_bool("DATABASE_PREPARED_STATEMENTS", True) else None)
if DATABASES["default"]["ENGINE"] == "django.db.backends.sqlite3":
    # Workers and the web process share the file: wait for locks instead of failing.
    # Workers write concurrently: take the write lock when a transaction begins (an upgrade
    # from a read lock would fail at once with "database is locked"), and use WAL so that
    # readers never wait for a writer.
    DATABASES["default"].setdefault("OPTIONS", {}).update(
        timeout=30, transaction_mode="IMMEDIATE", init_command="PRAGMA journal_mode=WAL; PRAGMA synchronous=NORMAL;"
    )
    # Tests keep their SQLite database in a file (not in memory), so that the Celery worker
    # processes of the integration tests can open it too.
    DATABASES["default"]["TEST"] = {"NAME": str(DATA_DIR / "test-switchyard.sqlite3")}
    # The covering indexes' INCLUDE columns let PostgreSQL answer a run's summary from the
    # index alone; SQLite has no INCLUDE and uses the same indexes by their keys.
    SILENCED_SYSTEM_CHECKS = ["models.W040"]

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": REDIS_URL,
        "KEY_PREFIX": "switchyard",
        # A Redis that stops answering must not hold a node run: the cache is only a cache.
        "OPTIONS": {"socket_connect_timeout": 2, "socket_timeout": 2},
    }
}
# Compressed upstream outputs (parallel-agent-compression) stay cached this long.
COMPRESSION_CACHE_SECONDS = env_int("COMPRESSION_CACHE_SECONDS", 7 * 24 * 3600)
# What a node's compress_model (the seed's `flash` / `pro`) calls on each LLM backend:
# COMPRESS_MODELS is JSON, {"<backend>": {"flash": "<model id>", "pro": "<model id>"}}.
# Default {}: a name a backend's entry lacks calls the agent's own model (else the
# backend's default model), never the name itself as a model id.
try:
    COMPRESS_MODELS = json.loads(os.environ.get("COMPRESS_MODELS") or "{}")
except json.JSONDecodeError:
    COMPRESS_MODELS = None
if not (isinstance(COMPRESS_MODELS, dict) and all(
        isinstance(names, dict) and all(isinstance(model, str) and model for model in names.values())
        for names in COMPRESS_MODELS.values())):
    raise ValueError('COMPRESS_MODELS must be a JSON object such as {"openai": {"flash": "gpt-4o-mini", "pro": "gpt-4o"}}')

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = Path(env_str("STATIC_ROOT", str(DATA_DIR / "static")))
STATIC_ROOT.mkdir(parents=True, exist_ok=True)  # collectstatic's target; WhiteNoise looks there too
# The pages' own files, and the JavaScript libraries bin/setup installs from the npm
# registry; WhiteNoise serves them all, DEBUG or not (no CDN).
STATICFILES_DIRS = [
    BASE_DIR / "static",
    ("vendor/cytoscape", BASE_DIR / "node_modules" / "cytoscape" / "dist"),
    ("vendor/cytoscape-dagre", BASE_DIR / "node_modules" / "cytoscape-dagre" / "dist"),
]
WHITENOISE_USE_FINDERS = True  # serve straight from those folders: no collectstatic step to forget

LOGIN_URL = "login"
LOGIN_REDIRECT_URL = "overview"
LOGOUT_REDIRECT_URL = "login"

# Sign-in rate limiting (django-axes), on /login/ and /admin/login/ alike: after
# LOGIN_FAILURE_LIMIT failed sign-ins for one user name, or from one address, sign-ins
# there are refused with a 429 page until LOGIN_COOLOFF_MINUTES after the last failure.
# Unknown user names are counted like existing ones (the page says the same for both);
# failures older than the cool-off are forgotten. A successful sign-in clears nothing:
# else one valid account would reset an address's count of guesses at other accounts.
# API tokens are not sign-ins and are never counted.
AUTHENTICATION_BACKENDS = ["axes.backends.AxesStandaloneBackend", "django.contrib.auth.backends.ModelBackend"]
LOGIN_FAILURE_LIMIT = env_int("LOGIN_FAILURE_LIMIT", 5)
LOGIN_COOLOFF_MINUTES = env_int("LOGIN_COOLOFF_MINUTES", 15)
# Behind this many reverse proxies that append to X-Forwarded-For, the client's address is
# read from that header (core/login_limits.py); with 0 the header is ignored, as a client
# could write anything in it.
TRUSTED_PROXY_COUNT = env_int("TRUSTED_PROXY_COUNT", 0)
AXES_FAILURE_LIMIT = LOGIN_FAILURE_LIMIT
AXES_COOLOFF_TIME = LOGIN_COOLOFF_MINUTES / 60  # hours, as a float
AXES_LOCKOUT_PARAMETERS = ["ip_address", "username"]  # each counted on its own
AXES_RESET_ON_SUCCESS = False
AXES_LOCKOUT_CALLABLE = "core.login_limits.locked_out"
AXES_CLIENT_IP_CALLABLE = "core.login_limits.client_address"

# Celery: Redis is the broker and the result backend. Messages carry ids only;
# the database is the source of truth for the state of every run.
CELERY_BROKER_URL = env_str("CELERY_BROKER_URL", REDIS_URL)
CELERY_RESULT_BACKEND = env_str("CELERY_RESULT_BACKEND", REDIS_URL)
CELERY_TASK_SERIALIZER = "json"
CELERY_RESULT_SERIALIZER = "json"
CELERY_ACCEPT_CONTENT = ["json"]
CELERY_TASK_ACKS_LATE = True
CELERY_TASK_REJECT_ON_WORKER_LOST = True
CELERY_WORKER_PREFETCH_MULTIPLIER = 1
CELERY_TASK_DEFAULT_QUEUE = env_str("CELERY_QUEUE", "switchyard")
CELERY_BROKER_CONNECTION_RETRY_ON_STARTUP = True
# Broker loss (a Redis restart, a network cut): workers and the beat reconnect for as long
# as it takes, never giving up after Celery's default 100 tries.
CELERY_BROKER_CONNECTION_RETRY = True
CELERY_BROKER_CONNECTION_MAX_RETRIES = None
# A task running when the connection drops is let finish: its result is written to the
# database, which is the truth, so nothing is redone. (Cancelling it would only leave its
# node run silent until the sweep sends it again.)
CELERY_WORKER_CANCEL_LONG_RUNNING_TASKS_ON_CONNECTION_LOSS = False
# Sending a task while Redis is away fails within a few seconds instead of hanging: the
# rows are committed, the failure is logged (core.tasks.send_after_commit), and the sweep
# sends the work again once Redis is back.
CELERY_TASK_PUBLISH_RETRY_POLICY = {"max_retries": 2, "interval_start": 0, "interval_step": 0.5, "interval_max": 1}
# A message a worker took and had not acknowledged when it died goes back to its queue after
# this long (the Redis transport's visibility timeout). The sweep sends the node of a silent
# worker again long before, so the late delivery finds it claimed or done and does nothing.
# Keep it above NODE_HARD_TIME_LIMIT_SECONDS and the longest retry backoff (a retry is sent
# with a countdown and held by a worker until then), or those are delivered again meanwhile.
BROKER_VISIBILITY_TIMEOUT_SECONDS = env_float("BROKER_VISIBILITY_TIMEOUT_SECONDS", 3600.0)
CELERY_BROKER_TRANSPORT_OPTIONS = {"socket_connect_timeout": 2, "visibility_timeout": BROKER_VISIBILITY_TIMEOUT_SECONDS}
# The same for the result store (only tasks with a result use it, such as core.tasks.ping):
# a few tries rather than Celery's twenty, a second apart.
CELERY_RESULT_BACKEND_TRANSPORT_OPTIONS = {"retry_policy": CELERY_TASK_PUBLISH_RETRY_POLICY}
CELERY_REDIS_SOCKET_CONNECT_TIMEOUT = 2
CELERY_REDIS_SOCKET_TIMEOUT = 10
# Workers keep their database connection across tasks (Celery would otherwise open a new
# one for every task); it is renewed after this many tasks.
CELERY_DB_REUSE_MAX = env_int("CELERY_DB_REUSE_MAX", 500)
# Node runs: the first retry waits this long, doubling each time; a running node touches its
# heartbeat this often; the sweep re-dispatches runs silent for longer than NODE_STALE_SECONDS.
NODE_RETRY_BACKOFF_SECONDS = env_float("NODE_RETRY_BACKOFF_SECONDS", 1.0)
NODE_HEARTBEAT_SECONDS = env_float("NODE_HEARTBEAT_SECONDS", 5.0)
NODE_STALE_SECONDS = env_float("NODE_STALE_SECONDS", 30.0)
NODE_MAX_DISPATCHES = env_int("NODE_MAX_DISPATCHES", 5)  # then a node whose worker keeps dying fails
# A node task is stopped after NODE_SOFT_TIME_LIMIT_SECONDS (Celery's soft time limit; the
# prefork pool, the default, enforces it): the node fails with NODE_TIME_LIMIT and the
# workflow's failure handling applies. 600 s is above one model call's worst case, so that
# a backend times out by itself first: OPENAI_TIMEOUT_SECONDS × (OPENAI_MAX_RETRIES + 1)
# plus its backoffs is 60 × 4 + 3 × 30 = 330 s by default, COMMAND_BACKEND_TIMEOUT_SECONDS
# 120 s. A node that makes many calls (batches, summaries, a Tree-of-Thoughts search) may
# need more. A node still running NODE_HARD_TIME_LIMIT_SECONDS after it started is killed
# with its pool process; the sweep then fails it with the same code. The 60 s between the
# two let the soft limit's handling kill the command backend's processes and store the
# failure, waiting for SQLite's lock (up to 30 s) if it must.
NODE_SOFT_TIME_LIMIT_SECONDS = env_float("NODE_SOFT_TIME_LIMIT_SECONDS", 600.0)
NODE_HARD_TIME_LIMIT_SECONDS = env_float("NODE_HARD_TIME_LIMIT_SECONDS", NODE_SOFT_TIME_LIMIT_SECONDS + 60)
if not 0 < NODE_SOFT_TIME_LIMIT_SECONDS < NODE_HARD_TIME_LIMIT_SECONDS:
    raise ValueError(f"NODE_HARD_TIME_LIMIT_SECONDS ({NODE_HARD_TIME_LIMIT_SECONDS:g}) must be greater than "
                     f"NODE_SOFT_TIME_LIMIT_SECONDS ({NODE_SOFT_TIME_LIMIT_SECONDS:g}), which must be above 0")
# A re-run copies the node runs it reuses (executions/services/rerun.py) while it answers
# when they are at most RERUN_COPY_INLINE_MAX (0.1–0.2 ms a copy on PostgreSQL); more are
# copied on a worker, RERUN_COPY_CHUNK at a time (one transaction each, about half a
# second), and the run starts once all are.
RERUN_COPY_INLINE_MAX = env_int("RERUN_COPY_INLINE_MAX", 2_000)
RERUN_COPY_CHUNK = env_int("RERUN_COPY_CHUNK", 5_000)
if RERUN_COPY_INLINE_MAX < 0 or RERUN_COPY_CHUNK < 1:
    raise ValueError(f"RERUN_COPY_INLINE_MAX ({RERUN_COPY_INLINE_MAX}) cannot be negative and RERUN_COPY_CHUNK "
                     f"({RERUN_COPY_CHUNK}) must be at least 1")
# A sub-workflow node's child run may itself run workflows, this many runs deep at most
# (a run started by a person is 0 deep): deeper, the node fails with SUBWORKFLOW_TOO_DEEP.
SUBWORKFLOW_MAX_DEPTH = env_int("SUBWORKFLOW_MAX_DEPTH", 5)
SWEEP_EVERY_SECONDS = env_float("SWEEP_EVERY_SECONDS", 10.0)
# A sweep holds a lock in Redis, so two beats (two machines) never sweep at once; a sweep
# that died holding it frees it after this many seconds.
SWEEP_LOCK_SECONDS = env_float("SWEEP_LOCK_SECONDS", 120.0)
# Retention (retention/README.md): ended runs are deleted RETENTION_DAYS days after they were
# created (0, the default: kept for ever), failed ones after RETENTION_FAILED_DAYS (0: as the
# others; never sooner than they), and a successful run keeps only its summary and cost after
# RETENTION_SUCCESS_DETAIL_DAYS (0: its details are kept as long as it is). A workflow's own
# rule, set by its authors, replaces any of the three for its runs. The sweep deletes
# RETENTION_BATCH node runs per transaction (small ones: a running run never waits long on
# them) and at most RETENTION_SWEEP_MAX_BATCHES batches per sweep, every RETENTION_EVERY_SECONDS.
RETENTION_DAYS = env_int("RETENTION_DAYS", 0)
RETENTION_FAILED_DAYS = env_int("RETENTION_FAILED_DAYS", 0)
RETENTION_SUCCESS_DETAIL_DAYS = env_int("RETENTION_SUCCESS_DETAIL_DAYS", 0)
RETENTION_BATCH = env_int("RETENTION_BATCH", 2_000)
RETENTION_SWEEP_MAX_BATCHES = env_int("RETENTION_SWEEP_MAX_BATCHES", 200)
RETENTION_EVERY_SECONDS = env_float("RETENTION_EVERY_SECONDS", 300.0)
# After each transaction the sweep (and purge_runs, unless told otherwise) rests this many
# times as long as the transaction took: deleting competes with the runs going on for the
# machine's cores and disk, not for their locks (docs/benchmarks.md, Retention).
RETENTION_PAUSE = env_float("RETENTION_PAUSE", 3.0)
RETENTION_LOCK_SECONDS = env_float("RETENTION_LOCK_SECONDS", 900.0)  # as SWEEP_LOCK_SECONDS, for this sweep
if min(RETENTION_DAYS, RETENTION_FAILED_DAYS, RETENTION_SUCCESS_DETAIL_DAYS, RETENTION_PAUSE) < 0 or RETENTION_BATCH < 1 \
        or RETENTION_SWEEP_MAX_BATCHES < 1:
    raise ValueError(f"RETENTION_DAYS ({RETENTION_DAYS}), RETENTION_FAILED_DAYS ({RETENTION_FAILED_DAYS}) and "
                     f"RETENTION_SUCCESS_DETAIL_DAYS ({RETENTION_SUCCESS_DETAIL_DAYS}) and RETENTION_PAUSE "
                     f"({RETENTION_PAUSE:g}) cannot be negative; "
                     f"RETENTION_BATCH ({RETENTION_BATCH}) and RETENTION_SWEEP_MAX_BATCHES "
                     f"({RETENTION_SWEEP_MAX_BATCHES}) must be at least 1")
CELERY_BEAT_SCHEDULE = {
    "sweep-node-runs": {"task": "executions.sweep", "schedule": SWEEP_EVERY_SECONDS},
    # Approved derive requests whose child-creation message was lost.
    "sweep-derive-requests": {"task": "agents.sweep", "schedule": SWEEP_EVERY_SECONDS},
    # Experiments' items whose run ended unscored (a lost message, a killed worker), and
    # experiments with room to start more items.
    "sweep-experiments": {"task": "experiments.sweep", "schedule": SWEEP_EVERY_SECONDS},
    # Runs past their retention deleted, or their details (retention/README.md).
    "sweep-retention": {"task": "retention.sweep", "schedule": RETENTION_EVERY_SECONDS},
    # Callbacks whose run's end, message or attempt was lost (triggers/callbacks.py).
    "sweep-callbacks": {"task": "triggers.sweep", "schedule": SWEEP_EVERY_SECONDS},
}
# The beat runs with django-celery-beat's DatabaseScheduler (`--scheduler
# django_celery_beat.schedulers:DatabaseScheduler`, deploy/supervisord.conf): the sweeps above
# are written to its PeriodicTask table as it starts, and each schedule (schedules/) keeps a
# PeriodicTask of its own there, which the beat picks up within seconds without a restart.
# Its times are aware and in UTC, as the database's are (USE_TZ); a schedule's cron is read
# in its own time zone.
CELERY_TIMEZONE = TIME_ZONE
CELERY_ENABLE_UTC = True
DJANGO_CELERY_BEAT_TZ_AWARE = USE_TZ
# A schedule's fire that reaches a worker more than this many seconds after its time (the
# beat was down across it) is a missed one: a schedule that skips missed fires starts no run
# for it, one that catches up starts one for the latest (schedules/firing.py).
SCHEDULE_MISSED_AFTER_SECONDS = env_float("SCHEDULE_MISSED_AFTER_SECONDS", 60.0)

# Evaluations (core-data-structures §7): overall_score = the weighted scores; a run passes
# at EVALUATION_PASS_SCORE, is sent back for revision from EVALUATION_REVISE_SCORE, and is
# rejected below it. An agent's or workflow's aggregate is the mean of its last
# EVALUATION_AGGREGATE_WINDOW evaluations.
EVALUATION_WEIGHTS = {
    "accuracy": env_float("EVALUATION_WEIGHT_ACCURACY", 0.4),
    "completeness": env_float("EVALUATION_WEIGHT_COMPLETENESS", 0.4),
    "efficiency": env_float("EVALUATION_WEIGHT_EFFICIENCY", 0.2),
}
EVALUATION_PASS_SCORE = env_float("EVALUATION_PASS_SCORE", 0.7)
EVALUATION_REVISE_SCORE = env_float("EVALUATION_REVISE_SCORE", 0.4)
EVALUATION_AGGREGATE_WINDOW = env_int("EVALUATION_AGGREGATE_WINDOW", 20)

# The rules that raise derive requests (core-data-structures §6), checked after each run
# is evaluated. Evidence counts only since the last decision on the same agent and trigger.
# quality_issue: the mean overall_score of an agent's last DERIVE_QUALITY_WINDOW
# evaluations (at least DERIVE_QUALITY_MIN_EVALUATIONS of them) is below the threshold.
DERIVE_QUALITY_THRESHOLD = env_float("DERIVE_QUALITY_THRESHOLD", 0.6)
DERIVE_QUALITY_WINDOW = env_int("DERIVE_QUALITY_WINDOW", 5)
DERIVE_QUALITY_MIN_EVALUATIONS = env_int("DERIVE_QUALITY_MIN_EVALUATIONS", 3)
# capability_gap: this many node runs of an agent failed with CAPABILITY_GAP.
DERIVE_CAPABILITY_GAP_FAILURES = env_int("DERIVE_CAPABILITY_GAP_FAILURES", 1)
# frequency_threshold: an agent ran this many successful nodes in runs of one knowledge
# domain within the last DERIVE_FREQUENCY_WINDOW_DAYS days.
DERIVE_FREQUENCY_THRESHOLD = env_int("DERIVE_FREQUENCY_THRESHOLD", 20)
DERIVE_FREQUENCY_WINDOW_DAYS = env_int("DERIVE_FREQUENCY_WINDOW_DAYS", 30)

# HTTPS hardening, switched on by the environment for deployments behind TLS.
SECURE_SSL_REDIRECT = env_bool("SECURE_SSL_REDIRECT", False)
SESSION_COOKIE_SECURE = env_bool("SESSION_COOKIE_SECURE", SECURE_SSL_REDIRECT)
CSRF_COOKIE_SECURE = env_bool("CSRF_COOKIE_SECURE", SECURE_SSL_REDIRECT)
SECURE_HSTS_SECONDS = env_int("SECURE_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env_bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", SECURE_HSTS_SECONDS > 0)
SECURE_HSTS_PRELOAD = env_bool("SECURE_HSTS_PRELOAD", SECURE_HSTS_SECONDS > 0)
if env_bool("SECURE_PROXY_SSL_HEADER", False):
    SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https")
X_FRAME_OPTIONS = "DENY"
# Content-Security-Policy on every response: scripts, styles, fonts and connections only
# from this server, and nothing inline — the pages keep their code in static/js and their
# looks in static/css, and set sizes through the DOM (element.style), which CSP allows.
# data: images are the icons Swagger UI's stylesheet embeds (a select's arrow, the copy button).
CONTENT_SECURITY_POLICY = {
    "DIRECTIVES": {
        "default-src": ["'self'"],
        "script-src": ["'self'"],
        "style-src": ["'self'"],
        "img-src": ["'self'", "data:"],
        "connect-src": ["'self'"],
        "font-src": ["'self'"],
        "object-src": ["'none'"],
        "base-uri": ["'self'"],
        "form-action": ["'self'"],
        "frame-ancestors": ["'none'"],
    },
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "root": {"handlers": ["console"], "level": env_str("LOG_LEVEL", "INFO")},
    # django-axes says hello at every start of every command; its lockouts are still logged.
    # The MCP SDK's HTTP client logs each request of each tool call; failures are still logged.
    "loggers": {"axes.apps": {"level": "WARNING"}, "httpx2": {"level": "WARNING"}},
}

# LLM backends are defined by operators here, never by workflow authors: an agent names
# one of these. `builtin` is the deterministic, offline engine shipped with Switchyard.
# SWITCHYARD_BACKENDS_FILE names a TOML file of any number of named backends, compress_model
# aliases and model catalogue overrides (agents/backends/config.py); the variables below
# add an `openai` and a `command` backend without a file.
LLM_BACKENDS: dict[str, dict] = {"builtin": {"kind": "builtin"}}
MODEL_ALIASES: dict[str, dict] = {}  # compress_model name → {"backend", "model"}
MODEL_OVERRIDES: dict[str, dict] = {}  # model id → context_window, max_output, encoding, prices
TOOL_SERVERS: dict[str, dict] = {}  # MCP servers agents' tools are called on (the file's [tools.NAME])
# The largest result a builtin tool may answer (JSON, in bytes); MCP servers set their own cap.
TOOL_RESULT_MAX_BYTES = env_int("TOOL_RESULT_MAX_BYTES", 100_000)
# The largest dataset file an import reads (upload, API or command); larger ones are refused (413).
DATASET_MAX_BYTES = env_int("DATASET_MAX_BYTES", 10_000_000)
# Experiments: how many items of one experiment run at once by default, and how many items of
# all experiments together may run at once, so that people's own runs always find workers.
EXPERIMENT_CONCURRENCY = env_int("EXPERIMENT_CONCURRENCY", 4)
EXPERIMENT_MAX_RUNNING_ITEMS = env_int("EXPERIMENT_MAX_RUNNING_ITEMS", 16)
# An item's scoring: a claim silent this long (its worker died; renewed before each judge call)
# is taken over by the sweep; an item whose scoring failed this many times fails (SCORING_FAILED).
EXPERIMENT_SCORING_STALE_SECONDS = env_float("EXPERIMENT_SCORING_STALE_SECONDS", 300.0)
EXPERIMENT_SCORING_ATTEMPTS = env_int("EXPERIMENT_SCORING_ATTEMPTS", 5)
if EXPERIMENT_SCORING_ATTEMPTS < 1:
    raise ValueError(f"EXPERIMENT_SCORING_ATTEMPTS ({EXPERIMENT_SCORING_ATTEMPTS}) must be at least 1")
if EXPERIMENT_CONCURRENCY < 1 or EXPERIMENT_MAX_RUNNING_ITEMS < 1:
    raise ValueError(f"EXPERIMENT_CONCURRENCY ({EXPERIMENT_CONCURRENCY}) and EXPERIMENT_MAX_RUNNING_ITEMS "
                     f"({EXPERIMENT_MAX_RUNNING_ITEMS}) must be at least 1")
# Triggers (triggers/): webhooks that start runs, workflow keys, callbacks at a run's end.
# A webhook's request is refused (401) unless its X-Switchyard-Timestamp is within this many
# seconds of the server's time (a signed body cannot be replayed later).
TRIGGER_REPLAY_WINDOW_SECONDS = env_int("TRIGGER_REPLAY_WINDOW_SECONDS", 300)
# A new webhook's body limit unless it sets its own (never above DATA_UPLOAD_MAX_MEMORY_SIZE).
WEBHOOK_MAX_BODY_BYTES = env_int("WEBHOOK_MAX_BODY_BYTES", 256 * 1024)
# A new workflow key's requests per minute unless it sets its own; past it, 429 with Retry-After.
WORKFLOW_KEY_RATE_PER_MINUTE = env_int("WORKFLOW_KEY_RATE_PER_MINUTE", 60)
# The only hosts a callback is ever sent to ("host" or "host:port", comma-separated): a callback
# URL elsewhere is refused when it is given, and again before each attempt. Empty: none.
CALLBACK_ALLOWED_HOSTS = [host.lower() for host in env_list("CALLBACK_ALLOWED_HOSTS", "")]
# A callback is tried this many times at most; the first retry waits CALLBACK_BACKOFF_SECONDS,
# doubling each time (capped at 15 minutes, below the broker's visibility timeout); each
# attempt waits CALLBACK_TIMEOUT_SECONDS for an answer.
CALLBACK_MAX_ATTEMPTS = env_int("CALLBACK_MAX_ATTEMPTS", 6)
CALLBACK_BACKOFF_SECONDS = env_float("CALLBACK_BACKOFF_SECONDS", 5.0)
CALLBACK_TIMEOUT_SECONDS = env_float("CALLBACK_TIMEOUT_SECONDS", 10.0)
if CALLBACK_MAX_ATTEMPTS < 1 or WORKFLOW_KEY_RATE_PER_MINUTE < 1 or WEBHOOK_MAX_BODY_BYTES < 1:
    raise ValueError("CALLBACK_MAX_ATTEMPTS, WORKFLOW_KEY_RATE_PER_MINUTE and WEBHOOK_MAX_BODY_BYTES must be at least 1")
if os.environ.get("SWITCHYARD_BACKENDS_FILE"):
    from django.core.exceptions import ImproperlyConfigured

    from agents.backends.config import BackendsFileError, read_backends_file

    try:
        _backends_file = read_backends_file(os.environ["SWITCHYARD_BACKENDS_FILE"], workspace_root=WORKSPACE_ROOT)
    except BackendsFileError as _error:
        raise ImproperlyConfigured(f"SWITCHYARD_BACKENDS_FILE {_error}") from None
    LLM_BACKENDS.update(_backends_file["backends"])
    MODEL_ALIASES, MODEL_OVERRIDES = _backends_file["aliases"], _backends_file["models"]
    TOOL_SERVERS = _backends_file["tools"]
if os.environ.get("OPENAI_BASE_URL"):
    from django.core.exceptions import ImproperlyConfigured

    from core.backend_urls import base_url_problem

    if "openai" in LLM_BACKENDS:
        raise ValueError("OPENAI_BASE_URL defines the backend 'openai', which SWITCHYARD_BACKENDS_FILE defines too")
    if _problem := base_url_problem(os.environ["OPENAI_BASE_URL"]):  # as the file's base_url is checked
        raise ImproperlyConfigured(f"OPENAI_BASE_URL {_problem}")
    LLM_BACKENDS["openai"] = {
        "kind": "openai_compatible",
        "base_url": os.environ["OPENAI_BASE_URL"],
        "api_key_env": "OPENAI_API_KEY",
        "timeout_seconds": env_int("OPENAI_TIMEOUT_SECONDS", 60),
        "max_retries": env_int("OPENAI_MAX_RETRIES", 3),
        "model": env_str("OPENAI_MODEL", ""),  # used when an agent names no model
    }
# A local command as a backend (e.g. a CLI that talks to a model): the prompt goes on its
# stdin and its stdout is the reply. COMMAND_BACKEND_ARGV is a JSON list of strings, run
# without a shell; the command sees only PATH, HOME, LANG, LC_ALL, TMPDIR and the names in COMMAND_BACKEND_ENV.
if os.environ.get("COMMAND_BACKEND_ARGV"):
    try:
        _command_argv = json.loads(os.environ["COMMAND_BACKEND_ARGV"])
    except json.JSONDecodeError:
        _command_argv = None
    if not (isinstance(_command_argv, list) and _command_argv and all(isinstance(a, str) and a for a in _command_argv)):
        raise ValueError("COMMAND_BACKEND_ARGV must be a JSON list of non-empty strings, e.g. [\"llm\", \"-m\", \"gpt-4o\"]")
    if "command" in LLM_BACKENDS:
        raise ValueError("COMMAND_BACKEND_ARGV defines the backend 'command', which SWITCHYARD_BACKENDS_FILE defines too")
    LLM_BACKENDS["command"] = {
        "kind": "command",
        "argv": _command_argv,
        "timeout_seconds": env_int("COMMAND_BACKEND_TIMEOUT_SECONDS", 120),
        "env": env_list("COMMAND_BACKEND_ENV", ""),
    }
