"""Numeric settings are checked when the app starts, by name."""
import pytest

from app import create_app
from app.config import Config
from app.config import check_numbers


def defaults(**overrides):
    settings = {key: getattr(Config, key) for key in dir(Config) if key.isupper()}
    return {**settings, **overrides}


def test_the_defaults_pass():
    check_numbers(defaults())


@pytest.mark.parametrize("key, value", [
    ("STREAM_PAGE_SIZE", 0), ("STREAM_PAGE_SIZE", 2.5), ("STREAM_PAGE_SIZE", "many"),
    ("STREAM_POLL_SECONDS", 0), ("STREAM_HEARTBEAT_SECONDS", -1), ("MAX_LINE_LENGTH", True),
    ("OUTPUT_RETENTION_SECONDS", 0), ("RATE_LIMIT_REQUESTS", -1), ("SQLITE_BUSY_TIMEOUT", None),
])
def test_a_value_out_of_range_names_its_setting(key, value):
    with pytest.raises(ValueError, match=f"TURNLOG_{key}"):
        check_numbers(defaults(**{key: value}))


@pytest.mark.parametrize("key, value", [("RATE_LIMIT_REQUESTS", 0), ("SQLITE_BUSY_TIMEOUT", 0),
                                        ("STREAM_POLL_SECONDS", 0.01), ("STREAM_PAGE_SIZE", 1)])
def test_edge_values_that_mean_something_pass(key, value):
    check_numbers(defaults(**{key: value}))


def test_the_default_page_cannot_exceed_the_largest():
    with pytest.raises(ValueError, match="DEFAULT_PAGE_SIZE"):
        check_numbers(defaults(DEFAULT_PAGE_SIZE=50, MAX_PAGE_SIZE=10))


def test_the_app_refuses_to_start_with_a_bad_setting(monkeypatch):
    monkeypatch.setenv("TURNLOG_STREAM_PAGE_SIZE", "0")
    with pytest.raises(ValueError, match="STREAM_PAGE_SIZE"):
        create_app()
