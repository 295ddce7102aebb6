"""The fleet backend: PostgreSQL, shared by every runner of a fleet, written through an
INSERT-only role. Opened only through ``landed.ledger.factory``; the append path itself is
shared (``landed.ledger.append``), this package supplies its SQL, transactions and locks."""
