"""turnlog: durable, replayable transcripts of CLI coding agents."""
import os
import secrets
from pathlib import Path

from flask import Flask

from app.config import Config
from app.config import check_numbers


def create_app(test_config=None):
    """Build and wire a turnlog application.

    Settings come from `Config`, then `TURNLOG_*` environment variables, then
    `test_config`, so a test always has the last word.
    """
    app = Flask(__name__, instance_relative_config=True)
    app.json.sort_keys = False  # payload keys in schema order, session_id first
    app.config.from_object(Config)
    app.config.from_prefixed_env("TURNLOG")
    if test_config is not None:
        app.config.update(test_config)
    check_numbers(app.config)
    _fill_defaults(app)

    from app import auth
    from app import cli
    from app import db
    from app import errors
    from app import request_log
    from app import security_headers
    from app.api_docs import bp as api_docs_bp
    from app.control import bp as control_bp
    from app.ingest import bp as ingest_bp
    from app.inputs import bp as inputs_bp
    from app.sessions import bp as sessions_bp
    from app.streaming import bp as streaming_bp
    from app.ui import bp as ui_bp

    request_log.init_app(app)  # first, so every other hook's log lines carry the id
    db.init_app(app)
    errors.init_app(app)
    security_headers.init_app(app)
    cli.init_app(app)
    auth.init_app(app)
    app.register_blueprint(auth.bp)
    app.register_blueprint(sessions_bp)
    app.register_blueprint(ingest_bp)
    app.register_blueprint(inputs_bp)
    app.register_blueprint(control_bp)
    app.register_blueprint(streaming_bp)
    app.register_blueprint(ui_bp)
    app.register_blueprint(api_docs_bp)
    return app


def _fill_defaults(app):
    """Settings whose defaults depend on where the app lives."""
    if not app.config.get("SQLALCHEMY_DATABASE_URI"):
        os.makedirs(app.instance_path, exist_ok=True)
        path = Path(app.instance_path) / "turnlog.sqlite"
        app.config["SQLALCHEMY_DATABASE_URI"] = f"sqlite:///{path}"
    if not app.config.get("MIGRATIONS_DIR"):
        app.config["MIGRATIONS_DIR"] = str(Path(app.root_path).parent / "migrations")
    if not app.config.get("SECRET_KEY"):
        app.config["SECRET_KEY"] = _instance_secret_key(Path(app.instance_path) / "secret_key")


def _instance_secret_key(path):
    """The key in `path`, created once. Made under a temporary name and linked into
    place, so workers starting together all end up reading the same key."""
    if not path.exists():
        path.parent.mkdir(parents=True, exist_ok=True)
        draft = path.with_name(f"{path.name}.{os.getpid()}.tmp")
        fd = os.open(draft, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w") as handle:
            handle.write(secrets.token_hex(32))
        try:
            os.link(draft, path)
        except FileExistsError:
            pass  # another worker won the race; its key is the one
        finally:
            os.unlink(draft)
    return path.read_text().strip()
