"""The e2e extra's libraries: a module that needs one calls `require(name)` before
importing it, so that without the extra (`pip install -e '.[test]'`) it is skipped with
the fix named, instead of failing collection. Under CI, which installs the extra, a
missing library fails instead."""
import importlib.util
import os

import pytest


def require(module):
    if importlib.util.find_spec(module) is not None:
        return
    reason = f"{module} is not installed: pip install -e '.[test,e2e]'"
    if os.environ.get("CI"):
        pytest.fail(f"{reason}; CI must install the e2e extra (.ci/run does)", pytrace=False)
    pytest.skip(reason, allow_module_level=True)
