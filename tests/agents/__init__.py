"""The real agent CLIs under test: scripted fake model servers they talk to on loopback,
the scenarios those servers play, and how to start each CLI against them (docs/agents.md)."""
