"""Extension singletons, bound to an application in create_app."""
from flask_sqlalchemy import SQLAlchemy

db = SQLAlchemy()
