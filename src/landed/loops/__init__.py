"""The loops room: a loop's declaration and the ids derived from its name (``spec``), its
tripwire's rules and state as pure decisions (``tripwire``), and the tripwire's ledger steps
declared as a typed interface (``steps``). Above the task and the ledger (a loop's run is a
task, its stream is the ledger's), below what operators see (telemetry counts its trips).
"""
