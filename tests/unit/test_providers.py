"""The provider registry: one parser per provider name, an unknown name is a named error."""
import pytest

from app.core.errors import UnknownProvider
from app.providers import PROVIDERS
from app.providers import claude
from app.providers import get_parser


def test_known_providers_have_parsers_and_claude_is_the_classic_one():
    assert PROVIDERS == ("claude", "codex", "gemini")
    assert get_parser("claude") is claude.parse_line


@pytest.mark.parametrize("name", ["openai", "", None, ["claude"]])
def test_an_unknown_provider_is_a_named_error(name):
    with pytest.raises(UnknownProvider) as info:
        get_parser(name)
    assert info.value.code == "unknown_provider"
    assert info.value.details["known"] == list(PROVIDERS)


@pytest.mark.parametrize("provider", PROVIDERS)
def test_every_parser_ignores_junk(provider):
    parse = get_parser(provider)
    for raw in ["", "x", "{}", "[1]", '{"type": "no_such_type"}', "\ud800", "9" * 5000]:
        assert parse(raw).kind == "ignored"
