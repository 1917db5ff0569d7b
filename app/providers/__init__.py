"""Provider parsing: one line parser per agent CLI, chosen by the session's `provider`.

Every parser takes one raw stdout line and returns a `StreamEvent`, and never
raises: a line it does not understand is an `ignored` event (the raw line stays
in the output buffer anyway). This registry is the one place providers are named;
the API accepts exactly these names.
"""
from app.core.errors import UnknownProvider
from app.providers import claude
from app.providers import codex
from app.providers import gemini

REGISTRY = {
    "claude": claude.parse_line,
    "codex": codex.parse_line,
    "gemini": gemini.parse_line,
}
PROVIDERS = tuple(REGISTRY)


def get_parser(name):
    """The line parser of provider `name`; UnknownProvider when there is none."""
    try:
        return REGISTRY[name]
    except (KeyError, TypeError):
        raise UnknownProvider(f"no parser for provider {name!r}",
                              {"provider": name, "known": list(PROVIDERS)}) from None
