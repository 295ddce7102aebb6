"""Which schema version a ledger holds, and what brings it to this landed's: what
``landed worker runner --check`` reports before a runner starts (nothing is created or changed).

In a cluster the runner's login may only insert and select; the schema is created and upgraded
by the owner's login in the landed-ledger-init Job (deploy/k8s), never by a running role.
"""

from __future__ import annotations

from typing import Any

from landed.ledger.factory import backend_of, schema_at

__all__ = ["INIT_COMMAND", "schema_report"]

# What the landed-ledger-init Job runs (with the owner's URL from the landed-ledger-owner Secret).
INIT_COMMAND = "landed ledger init --ledger $LANDED_LEDGER_OWNER_URL"
_JOB = (
    "as the database owner: kubectl -n landed create job --from=job/landed-ledger-init "
    "landed-ledger-init-$(date +%s), or `landed ledger init --ledger OWNER_URL`"
)


async def schema_report(url: str) -> dict[str, Any]:
    """{found, needs, status, where, run}; status: current, missing, behind or ahead. Raises
    what connecting raised (the caller reports it: an unreachable ledger is not a 'missing')."""
    found, needs, where = await schema_at(url)
    if backend_of(url) == "postgres":
        upgrade = _JOB
    else:
        # The runner owns its SQLite file: it creates or upgrades it when it opens it.
        upgrade = f"nothing: the runner brings {where} to version {needs} at start"
    if found == needs:
        status, run = "current", "nothing"
    elif found > needs:
        status = "ahead"
        run = "upgrade landed on this runner: the ledger was set up by a newer release"
    else:
        status, run = ("missing" if found == 0 else "behind"), upgrade
    return {"found": found, "needs": needs, "status": status, "where": where, "run": run}
