"""landed's Grafana dashboards, generated from code with grafana-foundation-sdk.

``python -m dashboards`` writes ``landed-fleet.json`` and ``landed-owner.json`` beside this
file; ``python -m dashboards --check`` exits 1 when the committed JSON differs from the code.
"""
