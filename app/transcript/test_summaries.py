"""Test-run summaries read from a command's output: how many tests passed, failed,
were skipped or errored, for pytest, unittest, jest, vitest, go test, cargo test
and mocha.

Each reader looks for its tool's own summary lines and returns None when they are
absent, so an output that merely mentions "passed" is no test run. Colour codes
are stripped first: agents often run test tools on a terminal-like pipe. Counts are
of tests, but for `go test` without -v, which names no passing test: of packages. Pure.

Agent text is hostile input, so the cost is bounded and linear: only the last
SUMMARY_TAIL_CHARS of an output are read (a run's summary lines are at its end),
and no pattern can backtrack over a run of characters: none crosses a line (blanks
are whitespace other than a line break), and a run that could be tried from each of
its characters is matched whole (possessive) from its first one only.
"""
import re

ANSI = re.compile(r"\x1b\[[0-9;?]*[A-Za-z]")
FIELDS = ("passed", "failed", "skipped", "errors")
# A word every reader's summary line holds; an output with none of them is no test run.
# Looked for as plain substrings: one regex alternation of them scanned each output
# slower (docs/performance.md, Text parsing), and every shell command's output is asked.
REPORT_WORDS = ("passed", "passing", "failed", "error", "skipped", "deselected", "test result",
                "Tests", "--- ", "FAIL", "no tests ran")
RAN_COUNT = re.compile(r"Ran \d")
# Characters of an output's end that are read, trailing blanks left out: a test run's
# summary lines come last. Longer output is cut at a line break inside this tail, so
# `go test -v` and `cargo test`, whose counts add up lines, count the lines in it.
SUMMARY_TAIL_CHARS = 16 * 1024


def summarize(output):
    """{framework, passed, failed, skipped, errors} of the first reader that
    recognises `output`, or None when no test run is reported in it."""
    if not isinstance(output, str) or not output:
        return None
    output = summary_tail(output)
    if not may_report_tests(output):
        return None  # most outputs: a few scans, not one per reader
    text = ANSI.sub("", output)
    for framework, reader in READERS:
        counts = reader(text)
        if counts is not None:
            return {"framework": framework, **{key: counts.get(key, 0) for key in FIELDS}}
    return None


def summary_tail(output):
    """The part of `output` the readers see: its last SUMMARY_TAIL_CHARS, trailing
    blanks dropped, starting at a line (the partial first line is left out)."""
    output = output.rstrip()
    if len(output) <= SUMMARY_TAIL_CHARS:
        return output
    tail = output[-SUMMARY_TAIL_CHARS:]
    return tail[tail.find("\n") + 1:] if "\n" in tail else ""


def may_report_tests(output):
    """True when `output` holds a word of REPORT_WORDS, "Ran <digit>", or a line
    beginning "ok "."""
    return (any(word in output for word in REPORT_WORDS)
            or ("Ran " in output and RAN_COUNT.search(output) is not None)
            or output.startswith("ok ") or "\nok " in output)


# pytest: "==== 41 passed, 1 failed, 2 skipped in 0.52s ====" (with -q the same
# words without the rule of = signs). Words map onto the four counts; parts a plugin
# adds ("2 rerun" of pytest-rerunfailures, "3 subtests passed") are read past and not
# counted, but a line of such parts only is no pytest summary.
PYTEST_LINE = re.compile(
    r"^=*+[^\S\n]*+((?:\d+ [a-z]+(?: [a-z]+)?(?:, )?)+) in [\d.]+s\b.*$", re.M)
PYTEST_NO_TESTS = re.compile(r"^=*+[^\S\n]*+no tests ran in [\d.]+s", re.M)
PYTEST_WORDS = {"passed": "passed", "xpassed": "passed", "failed": "failed", "skipped": "skipped",
                "xfailed": "skipped", "error": "errors", "errors": "errors"}
PYTEST_KNOWN = {*PYTEST_WORDS, "deselected", "warning", "warnings"}
PYTEST_PART = re.compile(r"(?<!\d)(\d++) ([a-z]+(?: [a-z]+)?)(?:, |$)")


def pytest_counts(text):
    lines = [line for line in PYTEST_LINE.findall(text)
             if any(word in PYTEST_KNOWN for _, word in PYTEST_PART.findall(line))]
    if not lines:
        return {} if PYTEST_NO_TESTS.search(text) else None
    counts = {}
    for number, word in PYTEST_PART.findall(lines[-1]):
        key = PYTEST_WORDS.get(word)
        if key:
            counts[key] = counts.get(key, 0) + int(number)
    return counts


# unittest: "Ran 12 tests in 0.003s", a blank line, then "OK", "OK (skipped=2)" or
# "FAILED (failures=1, errors=2, skipped=3)". Between them, blank lines only (at least
# one), each read once.
UNITTEST_RAN = re.compile(r"^Ran (\d+) tests? in [\d.]+s[^\S\n]*+\n(?:[^\S\n]*+\n)+"
                          r"(OK|FAILED)(?: \(([^)\n]*+)\))?", re.M)
UNITTEST_DETAIL = re.compile(r"(?<![a-z ])([a-z ]++)=(\d+)")
UNITTEST_WORDS = {"failures": "failed", "errors": "errors", "skipped": "skipped",
                  "expected failures": "skipped", "unexpected successes": "failed"}


def unittest_counts(text):
    runs = UNITTEST_RAN.findall(text)
    if not runs:
        return None
    ran, _, details = runs[-1]
    counts = {}
    for word, number in UNITTEST_DETAIL.findall(details):
        key = UNITTEST_WORDS.get(word.strip())
        if key:
            counts[key] = counts.get(key, 0) + int(number)
    # Expected failures are counted as run but not failed; they are "skipped" here.
    counts["passed"] = max(0, int(ran) - sum(counts.values()))
    return counts


# jest: "Tests:       1 failed, 2 skipped, 40 passed, 43 total".
JEST_LINE = re.compile(r"^Tests:[^\S\n]++(.*\d total)[^\S\n]*+$", re.M)
COUNT_WORD = re.compile(r"(?<!\d)(\d++) (\w+)")
JEST_WORDS = {"passed": "passed", "failed": "failed", "skipped": "skipped", "todo": "skipped"}


def jest_counts(text):
    lines = JEST_LINE.findall(text)
    if not lines:
        return None
    return _word_counts(lines[-1], COUNT_WORD, JEST_WORDS)


# vitest: "      Tests  1 failed | 41 passed | 2 expected fail (44)" (the "Test Files"
# line counts files). An `it.fails` test that failed as expected is a pass.
VITEST_LINE = re.compile(r"^[^\S\n]*+Tests[^\S\n]{2,}+(\d+ [a-z ]+?(?: \| \d+ [a-z ]+?)*) \(\d+\)"
                         r"[^\S\n]*+$", re.M)
VITEST_PART = re.compile(r"(?<!\d)(\d++) ([a-z ]+?)(?: \||$)")
VITEST_WORDS = {"passed": "passed", "failed": "failed", "skipped": "skipped", "todo": "skipped",
                "expected fail": "passed"}


def vitest_counts(text):
    lines = VITEST_LINE.findall(text)
    if not lines:
        return None
    return _word_counts(lines[-1], VITEST_PART, VITEST_WORDS)


# cargo test: one "test result: ok. 12 passed; 0 failed; 1 ignored; 0 measured;
# 0 filtered out; finished in 0.00s" per test binary (unit, integration, doc tests): summed.
CARGO_LINE = re.compile(r"^test result: (?:ok|FAILED)\. (.*)$", re.M)
CARGO_WORDS = {"passed": "passed", "failed": "failed", "ignored": "skipped"}


def cargo_counts(text):
    lines = CARGO_LINE.findall(text)
    if not lines:
        return None
    counts = {}
    for line in lines:
        for key, number in _word_counts(line, COUNT_WORD, CARGO_WORDS).items():
            counts[key] = counts.get(key, 0) + number
    return counts


# mocha (spec reporter): "  41 passing (12ms)", "  2 pending", "  1 failing"; a run of
# a minute or more gives its duration as "(1m)" or "(2h)".
MOCHA_PASSING = re.compile(r"^[^\S\n]*+(\d++) passing \(\d++(?:\.\d++)?(?:ms|s|m|h)\)[^\S\n]*+$",
                           re.M)
MOCHA_OTHER = re.compile(r"^[^\S\n]*+(\d++) (pending|failing)[^\S\n]*+$", re.M)
MOCHA_WORDS = {"pending": "skipped", "failing": "failed"}


def mocha_counts(text):
    passing = MOCHA_PASSING.findall(text)
    if not passing:
        return None
    counts = {"passed": int(passing[-1])}
    for number, word in MOCHA_OTHER.findall(text):
        counts[MOCHA_WORDS[word]] = int(number)
    return counts


# go test -v: one "--- PASS: TestX (0.00s)" line per test and subtest (indented),
# each after its "=== RUN" line; these are counted. Without -v (the usual `go test ./...`)
# only failing tests get a line and passing ones none, so tests cannot be counted: the
# package lines are, "ok  \tpkg\t0.01s" a pass and "FAIL\tpkg\t0.02s" a failure
# ("?   \tpkg\t[no test files]" neither). "FAIL\tpkg [build failed]" is an error either way.
GO_RESULT = re.compile(r"^[^\S\n]*+--- (PASS|FAIL|SKIP): \S+ \([\d.]+s\)", re.M)
GO_VERBOSE = re.compile(r"^[^\S\n]*+(?:=== RUN |--- PASS: )", re.M)
GO_PACKAGE = re.compile(r"^(ok|FAIL|\?)[^\S\n]++\S++[^\S\n]++([\d.]+s|\[[^\]\n]++\]|\(cached\))",
                        re.M)
GO_BROKEN = ("[build failed]", "[setup failed]")
GO_WORDS = {"PASS": "passed", "FAIL": "failed", "SKIP": "skipped"}
GO_PACKAGE_WORDS = {"ok": "passed", "FAIL": "failed"}


def go_counts(text):
    packages = GO_PACKAGE.findall(text)
    results = GO_RESULT.findall(text)
    if not results and not packages:
        return None
    broken = sum(1 for _, status in packages if status in GO_BROKEN)
    counts = {"errors": broken} if broken else {}
    if GO_VERBOSE.search(text):
        for word in results:
            counts[GO_WORDS[word]] = counts.get(GO_WORDS[word], 0) + 1
    elif packages:
        for word, status in packages:
            key = GO_PACKAGE_WORDS.get(word)
            if key and status not in GO_BROKEN:
                counts[key] = counts.get(key, 0) + 1
    else:  # "--- FAIL" lines and no package line: only the failing tests are known
        counts["failed"] = results.count("FAIL")
    return counts


def _word_counts(line, pattern, words):
    counts = {}
    for number, word in pattern.findall(line):
        key = words.get(word)
        if key:
            counts[key] = counts.get(key, 0) + int(number)
    return counts


# Most specific first: cargo's and unittest's lines are unmistakable, pytest's
# summary could otherwise hide inside nothing else; go's package lines last.
READERS = (
    ("cargo", cargo_counts),
    ("pytest", pytest_counts),
    ("unittest", unittest_counts),
    ("jest", jest_counts),
    ("vitest", vitest_counts),
    ("mocha", mocha_counts),
    ("go", go_counts),
)
