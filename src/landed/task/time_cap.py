"""GOV-4: which time cap a task runs under.

Precedence: the task's own ``time_cap`` when it names one; else the deployment's
(``LANDED_RUNNER_TIME_CAP``, carried in the runner's routing); else 30 minutes.
"""

from __future__ import annotations

from datetime import timedelta

from landed.task.spec import TaskSpec

__all__ = ["effective_time_cap"]


def effective_time_cap(spec: TaskSpec, deployment: timedelta | None) -> timedelta:
    """The cap the task runs under (see the module's precedence)."""
    if spec.deployment_time_cap and deployment is not None:
        return deployment
    return spec.time_cap
