"""``landed demo``: ``command`` (the scenarios on ``landed dev`` and their table), with
``approval`` (the held task and its signed approval), ``reconcile`` (the claim stream),
``loop`` (a loop's tripwire and repair) and ``pause`` (the fleet switch)."""
