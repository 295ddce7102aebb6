"""The ledger room: the append-only outcome ledger (interface, SQLite, PostgreSQL, schema).

Open one with ``landed.ledger.factory.open_ledger``; the backends import only ``base``.
"""
