"""gunicorn settings for turnlog (`gunicorn` in the project folder reads this file)."""
import gc
import os

# Server socket
# Loopback by default: put a reverse proxy in front for anything else.
bind = os.environ.get("GUNICORN_BIND", "127.0.0.1:8000")

# Worker processes
# The app to serve.
wsgi_app = "wsgi:app"
# gthread: a thread pool per worker, and a heartbeat thread that keeps a worker
# busy with a long response (live streams) from being killed at `timeout`.
worker_class = "gthread"
workers = int(os.environ.get("GUNICORN_WORKERS", "2"))
# Each open stream holds one thread: concurrency = workers * threads.
threads = int(os.environ.get("GUNICORN_THREADS", "8"))
timeout = 30
keepalive = 5
# No database connection may exist before fork, so the app loads in each worker.
preload_app = False

# Logging
accesslog = "-"
errorlog = "-"
loglevel = os.environ.get("GUNICORN_LOG_LEVEL", "info")


# Server hooks
def post_worker_init(worker):
    """Move what the worker loaded at start (the app, its modules: ~69,000 objects)
    out of the cyclic garbage collector's sight; it lives as long as the worker.
    Replay allocates a tuple per row and so sets collections off often: measured
    over 400,000 replayed events, a full collection walking those objects cost
    35-40 ms and came once; with them frozen none came (bench/stream.py)."""
    gc.collect()
    gc.freeze()
