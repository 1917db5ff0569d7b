"""The address a local user opens, from the bind gunicorn.conf.py serves on."""
import os

# gunicorn.conf.py reads the same variable with the same default.
BIND_VARIABLE = "GUNICORN_BIND"
DEFAULT_BIND = "127.0.0.1:8000"
# gunicorn's port when a bind names a host only.
DEFAULT_PORT = "8000"
# A wildcard bind listens everywhere; locally it answers on loopback.
WILDCARDS = {"0.0.0.0": "127.0.0.1", "": "127.0.0.1", "[::]": "[::1]"}


def configured_bind():
    return os.environ.get(BIND_VARIABLE) or DEFAULT_BIND


def base_url(bind):
    """`http://host:port` for a TCP bind (`host:port`, `host`, `[v6]:port`); None for
    a unix socket or a file descriptor, which a browser cannot open directly."""
    bind = bind.strip()
    if bind.startswith(("unix:", "fd://")):
        return None
    if bind.startswith("["):
        host, _, rest = bind.partition("]")
        host, port = host + "]", rest.removeprefix(":") or DEFAULT_PORT
    elif ":" in bind:
        host, port = bind.rsplit(":", 1)
    else:
        host, port = bind, DEFAULT_PORT
    return f"http://{WILDCARDS.get(host, host)}:{port}"
