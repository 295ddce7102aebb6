"""What landed tells operators while it works: OpenTelemetry spans that carry the receipts, and
one structured log line per task event. Off unless configured; nothing here decides a verdict."""
