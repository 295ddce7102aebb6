"""The ledger room: the append-only outcome ledger (interface, the shared append path, one
subpackage per backend: ``sqlite``, ``postgres``).

Open one with ``landed.ledger.factory.open_ledger``, the only module that imports a backend.
"""
