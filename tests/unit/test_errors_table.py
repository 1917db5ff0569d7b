"""Every service error lives in app/core/errors.py and has its own row in the status table."""
import inspect

from app import errors as web_errors
from app.core import errors as service_errors


def service_error_classes():
    return [cls for _, cls in inspect.getmembers(service_errors, inspect.isclass)
            if issubclass(cls, service_errors.ServiceError)]


def test_every_service_error_has_a_status_of_its_own():
    missing = [cls.__name__ for cls in service_error_classes()
               if cls not in web_errors.SERVICE_STATUS]
    assert missing == []


def test_every_service_error_has_a_distinct_code():
    codes = [cls.code for cls in service_error_classes()]
    assert len(codes) == len(set(codes))


def test_no_service_error_is_defined_outside_the_errors_module():
    import app.services.ingest  # noqa: F401  (load every use case module)
    import app.services.search  # noqa: F401
    import app.services.sessions  # noqa: F401
    import app.services.streaming  # noqa: F401
    import app.services.tokens  # noqa: F401
    import app.storage.migrations  # noqa: F401

    def subclasses(cls):
        for sub in cls.__subclasses__():
            yield sub
            yield from subclasses(sub)

    # Only app's own classes: a test may subclass one to check the status walk.
    stray = [cls.__qualname__ for cls in subclasses(service_errors.ServiceError)
             if cls.__module__.startswith("app.") and cls.__module__ != service_errors.__name__]
    assert stray == []


def test_a_subclass_not_in_the_table_gets_its_ancestors_status():
    class Narrower(service_errors.SessionNotFound):
        pass

    assert web_errors.service_status(Narrower("gone")) == 404
