"""gunicorn configuration for every deployment: ``gunicorn -c config/gunicorn.py config.wsgi``.

Values come from the environment so one file serves ``make run``, benchmarks and production.
"""

import multiprocessing
import os

bind = os.environ.get("GUNICORN_BIND", "0.0.0.0:8000")
workers = int(os.environ.get("GUNICORN_WORKERS", multiprocessing.cpu_count() * 2 + 1))
# Threaded workers, always: the arbiter's timeout then watches each worker's main loop, not
# its requests, so a long streamed answer (a scored-data export read slowly by its client)
# is not killed half-way as a hung worker, as a sync worker's would be.
worker_class = "gthread"
threads = int(os.environ.get("GUNICORN_THREADS", "4"))
# A threaded worker reports to the arbiter once per turn of its loop, and a turn waits up
# to 1 s for a connection: a timeout under about 3 s kills idle workers on a busy machine.
timeout = int(os.environ.get("GUNICORN_TIMEOUT", "30"))
graceful_timeout = 30
keepalive = 5
max_requests = int(os.environ.get("GUNICORN_MAX_REQUESTS", "0"))
max_requests_jitter = 100
accesslog = os.environ.get("GUNICORN_ACCESSLOG", "-") or None  # "" turns it off
errorlog = "-"
reload = os.environ.get("GUNICORN_RELOAD", "") == "1"
# The click-to-call interface sends its key in a header named ``api_key``. gunicorn drops
# headers with underscores by default (they could be spoofed past a proxy that maps dashes);
# the service needs it, and no other header of ours has a dashed twin, so keep them.
header_map = "dangerous"
# gunicorn's control socket (for gunicornc) sits at one path per user by default, so two
# servers on one machine (tests, the bench, make run) took each other's. Off unless a
# path is given.
control_socket = os.environ.get("GUNICORN_CONTROL_SOCKET", "")
control_socket_disable = not control_socket
# Never let gunicorn's access log print the query string's apikey (scored data API).
access_log_format = '%(h)s "%(m)s %(U)s %(H)s" %(s)s %(B)s %(M)sms'


def post_worker_init(worker: object) -> None:
    """Each worker, once it has loaded the app: start-up's objects out of the collector's
    way (config/frozen.py)."""
    from config.frozen import load_then_freeze

    load_then_freeze()
