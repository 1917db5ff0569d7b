"""The bottom of turnlog: plain records, named failures and UTC time.

Every other server package may import it (services, storage, providers, the web);
it imports nothing of `app` (docs/architecture.md, tests/unit/test_layers.py).
"""
