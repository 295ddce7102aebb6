"""The Temporal room: the one plugin, connections, clients, per-role settings and the worker
assembly (the only core module that imports ``landed.workflows`` and ``landed.activities``).
"""
