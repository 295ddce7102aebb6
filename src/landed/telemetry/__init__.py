"""What landed tells operators while it works: OpenTelemetry spans that carry the receipts, one
structured log line per task event, and the scorecard exporter (Prometheus, computed from the
ledger) with its page and each worker role's metrics port. Nothing here decides a verdict."""
