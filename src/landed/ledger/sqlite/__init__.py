"""The embedded backend: one SQLite file (WAL), written by one thread of the process that opened
it. Opened only through ``landed.ledger.factory``; the append path itself is shared
(``landed.ledger.append``), this package supplies its SQL, transactions and file lock."""
