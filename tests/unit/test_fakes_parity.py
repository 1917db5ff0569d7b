"""tests/fakes.py keeps the real repositories' methods: every fake stands for the
repository the SQL unit of work binds under the same name, and every public method a
fake has is the real one's, with the same signature (names, order, kinds, defaults)."""
import inspect

import pytest

from app.storage.unit_of_work import SqlUnitOfWork
from tests import fakes

# Fake methods the real repositories do not have: they let a test do to the fake what
# something outside the unit of work does to the database.
TEST_ONLY = {("FakeOutputs", "forget_before")}


class NoDatabase:
    """Just enough of a SQLAlchemy session for SqlUnitOfWork to bind its repositories."""

    def in_transaction(self):
        return False

    def connection(self, execution_options=None):
        return object()


def repository_pairs():
    """(name, fake class, real class) for every repository the fake unit of work has."""
    real = SqlUnitOfWork(NoDatabase()).__enter__()
    fake = fakes.FakeUnitOfWork()
    names = [name for name, value in vars(fake).items()
             if type(value).__module__ == fakes.__name__]
    return [(name, type(getattr(fake, name)), type(getattr(real, name))) for name in names]


PAIRS = [(fakes.FakeUnitOfWork, SqlUnitOfWork),
         *[(fake, real) for _, fake, real in repository_pairs()]]


def public_methods(cls):
    return {name: member for name, member in vars(cls).items()
            if callable(member) and not name.startswith("_")}


def test_every_fake_class_stands_for_a_real_one():
    fake_classes = {cls for name, cls in vars(fakes).items()
                    if inspect.isclass(cls) and cls.__module__ == fakes.__name__}
    assert fake_classes == {fake for fake, _ in PAIRS}
    for name, fake, real in repository_pairs():
        assert real is not type(None), f"the SQL unit of work binds no {name}"
        assert fake.__name__.startswith("Fake") and real.__module__.startswith("app.storage")


@pytest.mark.parametrize("fake, real", PAIRS, ids=[fake.__name__ for fake, _ in PAIRS])
def test_each_fake_method_has_the_real_signature(fake, real):
    for name, method in public_methods(fake).items():
        if (fake.__name__, name) in TEST_ONLY:
            assert not hasattr(real, name), f"{real.__name__}.{name} exists: drop it from TEST_ONLY"
            continue
        assert hasattr(real, name), f"{fake.__name__}.{name} is not a method of {real.__name__}"
        assert inspect.signature(method) == inspect.signature(getattr(real, name)), \
            f"{fake.__name__}.{name}{inspect.signature(method)} != {real.__name__}.{name}" \
            f"{inspect.signature(getattr(real, name))}"


def test_the_comparison_covers_every_repository_method_the_use_cases_call():
    compared = {(fake.__name__, name) for fake, _ in PAIRS for name in public_methods(fake)}
    assert len(PAIRS) == 17  # the unit of work and its sixteen faked repositories
    assert {("FakeSessions", "get_for_update"), ("FakeOutputs", "add_many"),
            ("FakeTurnStates", "replace_parts"), ("FakeEvidence", "add_many"),
            ("FakeToolResults", "add_many"), ("FakeMessages", "newest_before"),
            ("FakeInputs", "add_if_new"), ("FakeInputs", "mark_applied"),
            ("FakePermissions", "add_if_new"), ("FakePermissions", "resolve_if_pending"),
            ("FakeUnitOfWork", "commit")} <= compared
