"""Authentication: bearer tokens for the API, a session cookie for the viewer.

Views say who may call them with `requires(...)`; the /login and /logout pages
let a person trade a user token for an HttpOnly cookie once.
"""
from app.auth.guard import current_caller
from app.auth.guard import init_app
from app.auth.guard import login_redirect
from app.auth.guard import requires
from app.auth.routes import bp

__all__ = ["bp", "current_caller", "init_app", "login_redirect", "requires"]
