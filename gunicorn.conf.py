"""gunicorn settings for turnlog (`gunicorn` in the project folder reads this file)."""
import gc
import os

# Server socket
# Loopback by default: put a reverse proxy in front for anything else.
bind = os.environ.get("GUNICORN_BIND", "127.0.0.1:8000")

# Worker processes
# The app to serve.
wsgi_app = "wsgi:app"
# gevent (the default): each connection is a greenlet, so an open live stream, which
# mostly waits, costs a few kilobytes instead of a thread, and ingest and reads keep
# answering however many streams are open. The worker monkey-patches the standard
# library itself, in the worker process before it loads the app (preload_app below).
# gthread stays selectable: a thread per connection, workers * threads in all.
worker_class = os.environ.get("GUNICORN_WORKER_CLASS", "gevent")
workers = int(os.environ.get("GUNICORN_WORKERS", "2"))
# gevent: connections (streams included) one worker holds at once; each is a file
# descriptor, so the process's open-files limit must exceed it (docs/deploy.md).
worker_connections = int(os.environ.get("GUNICORN_WORKER_CONNECTIONS", "2000"))
# gthread: each open stream holds one of these threads.
threads = int(os.environ.get("GUNICORN_THREADS", "8"))
# gthread: a worker serves at most half its threads' worth of streams (at least one);
# the next gets 429 too_many_streams, so streams cannot take every thread and leave
# ingest and reads waiting (32 streams of one token would hold 2 workers x 8 threads).
# The app reads TURNLOG_MAX_STREAMS_PER_PROCESS; an explicit value wins.
if worker_class == "gthread":
    os.environ.setdefault("TURNLOG_MAX_STREAMS_PER_PROCESS", str(max(1, threads // 2)))
timeout = 30
keepalive = 5
# No database connection may exist before fork, so the app loads in each worker.
preload_app = False

# Logging
accesslog = "-"
# gunicorn's default line, then the request id the app logged the request under (its
# X-Request-ID response header), so an access line leads to the app's own lines.
access_log_format = '%(h)s %(l)s %(u)s %(t)s "%(r)s" %(s)s %(b)s "%(f)s" "%(a)s" rid=%({x-request-id}o)s'
errorlog = "-"
loglevel = os.environ.get("GUNICORN_LOG_LEVEL", "info")


# Server hooks
def post_worker_init(worker):
    """Move what the worker loaded at start (the app, its modules) out of the cyclic
    garbage collector's sight; it lives as long as the worker. Replay allocates a
    tuple per row and so sets collections off often, and a full one walked all of
    those objects, a pause in the stream; frozen, they are never walked
    (docs/performance.md, Streaming)."""
    gc.collect()
    gc.freeze()
