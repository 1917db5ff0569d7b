"""WSGI entry point: `gunicorn wsgi:app` and `flask --app wsgi ...` both load this."""
from app import create_app

app = create_app()
