"""Observability: the scorecard exporter (Prometheus, from the ledger) and its page."""
