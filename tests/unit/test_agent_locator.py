"""Finding the agent CLIs (tests/agents/clis.py): where they are looked for, the skip
reason when one is missing, and the node version a CLI's package asks for."""
import json

from tests.agents import clis


def install(root, name, engines=None):
    """A stand-in package of CLI `name` under `root`/node_modules (its script and package.json)."""
    script = root / "node_modules" / clis.SCRIPT[name]
    script.parent.mkdir(parents=True, exist_ok=True)
    script.write_text("// a stand-in\n")
    package = root / "node_modules" / clis.PACKAGES[name] / "package.json"
    package.parent.mkdir(parents=True, exist_ok=True)
    package.write_text(json.dumps({"version": "9.9.9", **({"engines": engines} if engines else {})}))


def test_a_cli_not_installed_gives_a_reason_naming_the_package_and_the_install_script(tmp_path, monkeypatch):
    monkeypatch.setenv("TURNLOG_AGENTS_DIR", str(tmp_path))
    reason = clis.missing("gemini")
    assert "@google/gemini-cli" in reason and str(tmp_path) in reason and ".ci/agents/install" in reason
    assert clis.version("gemini") is None


def test_the_agents_folder_defaults_to_dot_agents_at_the_root(monkeypatch):
    monkeypatch.delenv("TURNLOG_AGENTS_DIR", raising=False)
    assert clis.modules() == clis.ROOT / ".agents" / "node_modules"


def test_the_version_and_the_node_a_package_needs_come_from_its_package_json(tmp_path, monkeypatch):
    monkeypatch.setenv("TURNLOG_AGENTS_DIR", str(tmp_path))
    install(tmp_path, "gemini", {"node": ">=20.0.0"})
    install(tmp_path, "codex")
    assert clis.version("gemini") == "9.9.9"
    assert clis.node_needed("gemini") == 20
    assert clis.node_needed("codex") is None


def test_each_cli_has_a_headless_and_a_resumed_command_line(tmp_path):
    agent = clis.Agent("codex", ["codex"], {}, tmp_path, tmp_path)
    assert agent.headless("hi")[-1] == "hi" and "--json" in agent.headless("hi")
    assert agent.resumed("next", "T")[-3:] == ["resume", "T", "next"]
    assert clis.Agent("claude", ["claude"], {}, tmp_path, tmp_path).resumed("x", "S")[-2:] == ["--resume", "S"]
