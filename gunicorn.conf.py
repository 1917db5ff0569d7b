"""gunicorn settings for turnlog (`gunicorn` in the project folder reads this file)."""
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
