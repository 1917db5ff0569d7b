"""Test-run summaries, each read from its tool's real output format."""
import pathlib
import re

import pytest

from app.transcript.test_summaries import may_report_tests
from app.transcript.test_summaries import summarize

OUTPUTS = pathlib.Path(__file__).resolve().parents[1] / "fixtures" / "test_outputs"


def summary(name):
    return summarize((OUTPUTS / name).read_text("utf-8"))


# (file, framework, passed, failed, skipped, errors): what the tool's own summary says.
CASES = [
    ("pytest.txt", "pytest", 41, 1, 1, 1),
    ("pytest_quiet.txt", "pytest", 40, 0, 2, 0),
    ("unittest.txt", "unittest", 7, 1, 1, 1),
    ("unittest_ok.txt", "unittest", 7, 0, 0, 0),
    ("jest.txt", "jest", 40, 1, 2, 0),
    ("vitest.txt", "vitest", 40, 1, 1, 0),
    ("go_test.txt", "go", 2, 2, 1, 0),
    ("go_build_failed.txt", "go", 1, 0, 0, 1),  # without -v: packages (1 ok, 1 did not build)
    ("cargo_test.txt", "cargo", 5, 1, 1, 0),
    ("mocha.txt", "mocha", 2, 1, 1, 0),
]


@pytest.mark.parametrize(("name", "framework", "passed", "failed", "skipped", "errors"), CASES)
def test_each_tool_s_summary_is_read_from_its_own_output(name, framework, passed, failed,
                                                           skipped, errors):
    assert summary(name) == {"framework": framework, "passed": passed, "failed": failed,
                             "skipped": skipped, "errors": errors}


def test_vitest_counts_an_expected_failure_as_a_pass():
    text = (" Test Files  1 failed | 32 passed (33)\n"
            "      Tests  1 failed | 425 passed | 2 expected fail (428)\n"
            "   Start at  10:00:00\n")
    assert summarize(text) == {"framework": "vitest", "passed": 427, "failed": 1, "skipped": 0,
                               "errors": 0}


def test_colour_codes_do_not_hide_the_summary():
    coloured = "\x1b[31m\x1b[1m1 failed\x1b[0m, \x1b[32m3 passed\x1b[0m\x1b[31m in 0.10s\x1b[0m\n"
    assert summarize(coloured)["failed"] == 1
    assert summarize(coloured)["passed"] == 3


def test_the_last_pytest_summary_counts_when_a_run_repeats():
    text = "1 failed, 2 passed in 0.1s\n...\n3 passed in 0.1s\n"
    assert summarize(text)["failed"] == 0
    assert summarize(text)["passed"] == 3


@pytest.mark.parametrize(("line", "counts"), [
    ("==== 2 failed in 0.10s ====", (0, 2, 0, 0)),
    ("==== 1 error in 0.10s ====", (0, 0, 0, 1)),
    ("==== 3 skipped in 0.10s ====", (0, 0, 3, 0)),
    ("==== 4 deselected in 0.10s ====", (0, 0, 0, 0)),
])
def test_a_pytest_run_without_any_pass_is_still_read(line, counts):
    found = summarize(f"collected 4 items\n\n{line}\n")
    assert found["framework"] == "pytest"
    assert (found["passed"], found["failed"], found["skipped"], found["errors"]) == counts


def test_pytest_with_nothing_collected_is_a_run_of_zero():
    assert summarize("collected 0 items\n\n============ no tests ran in 0.01s ============\n") == {
        "framework": "pytest", "passed": 0, "failed": 0, "skipped": 0, "errors": 0}


@pytest.mark.parametrize("output", [
    "", None, "ls: cannot access 'x': No such file or directory\n",
    "all 12 checks passed\n", "Tests passed!\n", "diff --git a/x b/x\n+assert passed\n",
])
def test_output_that_reports_no_test_run_has_no_summary(output):
    assert summarize(output) is None


@pytest.mark.parametrize("duration", ["12ms", "3s", "1.5s", "1m", "2h"])
def test_a_mocha_run_of_any_length_is_read(duration):
    text = (f"\n  Parser\n    ✓ reads a line\n    1) rejects a bad line\n\n"
            f"  41 passing ({duration})\n  2 pending\n  1 failing\n\n"
            "  1) Parser\n       rejects a bad line:\n     AssertionError: expected 1 to equal 2\n")
    assert summarize(text) == {"framework": "mocha", "passed": 41, "failed": 1, "skipped": 2,
                               "errors": 0}


@pytest.mark.parametrize(("line", "counts"), [
    ("==== 3 failed, 40 passed, 2 rerun in 5.10s ====", (40, 3, 0, 0)),
    ("1 passed, 3 subtests passed in 0.10s", (1, 0, 0, 0)),
    ("==== 1 failed, 2 passed, 1 subtests failed, 5 warnings in 0.31s ====", (2, 1, 0, 0)),
    ("==== 2 passed, 1 rerun, 1 error in 65.12s (0:01:05) ====", (2, 0, 0, 1)),
])
def test_parts_a_pytest_plugin_adds_are_read_past(line, counts):
    found = summarize(f"collected 4 items\n\n{line}\n")
    assert found["framework"] == "pytest"
    assert (found["passed"], found["failed"], found["skipped"], found["errors"]) == counts


def test_a_line_of_counts_pytest_does_not_print_is_no_summary():
    assert summarize("3 packages in 0.50s\nFAILED to fetch 1 mirror\n") is None


def test_pytest_quiet_with_nothing_collected_is_a_run_of_zero():
    assert summarize("\nno tests ran in 0.01s\n") == {
        "framework": "pytest", "passed": 0, "failed": 0, "skipped": 0, "errors": 0}


GO_ALL_PASS = ("ok  \texample.com/strs\t0.012s\n"
               "?   \texample.com/cmd/tool\t[no test files]\n"
               "ok  \texample.com/nums\t(cached)\n"
               "ok  \texample.com/store\t0.031s\tcoverage: 81.2% of statements\n")
GO_ONE_FAILS = ("--- FAIL: TestSplit (0.00s)\n"
                "    --- FAIL: TestSplit/comma (0.00s)\n"
                "        split_test.go:21: got [a b], want [a b c]\n"
                "FAIL\n"
                "FAIL\texample.com/strs\t0.020s\n"
                "ok  \texample.com/nums\t0.002s\n"
                "?   \texample.com/cmd/tool\t[no test files]\n"
                "FAIL\n")


@pytest.mark.parametrize(("output", "counts"), [
    (GO_ALL_PASS, (3, 0, 0, 0)),
    (GO_ONE_FAILS, (1, 1, 0, 0)),
    ("FAIL\texample.com/strs\t0.003s\nFAIL\n", (0, 1, 0, 0)),  # a panic: no --- FAIL line
])
def test_go_test_without_v_counts_packages(output, counts):
    # Without -v go test prints no line for a passing test: the packages are counted.
    found = summarize(output)
    assert found["framework"] == "go"
    assert (found["passed"], found["failed"], found["skipped"], found["errors"]) == counts


def test_go_failures_without_package_lines_are_the_failing_tests():
    found = summarize("--- FAIL: TestSplit (0.00s)\n    --- FAIL: TestSplit/comma (0.00s)\n")
    assert (found["passed"], found["failed"]) == (0, 2)


# The pre-check as one regex: what may_report_tests answers with substring tests.
REPORT_PATTERN = re.compile(
    r"passed|passing|failed|error|skipped|deselected|Ran \d|test result|Tests|--- |^ok |FAIL"
    r"|no tests ran", re.M)


@pytest.mark.parametrize("output", [
    *(path.read_text("utf-8") for path in sorted(OUTPUTS.iterdir())),
    "README.md\nsetup.cfg\n", "ok 1 - adds\n", "built\nok  \tpkg/a\t0.01s", "look ok here",
    "\rok 1", "Ran 12 tests", "Ran twelve", "Ran \u0663 tests", "0 FAILED", "fail", "Test", "--",
    "collected 0 items\n\nno tests ran in 0.01s", "",
])
def test_the_pre_check_says_what_the_pattern_of_its_words_says(output):
    assert may_report_tests(output) == (REPORT_PATTERN.search(output) is not None)
