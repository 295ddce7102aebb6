"""How a task is started, the same from landed.Client and a parent workflow: a closed run of
its id is never started again, and it is searchable by its owner (and loop) from its start."""

from __future__ import annotations

from helpers.task_spec import spec
from temporalio.common import SearchAttributeKey, WorkflowIDReusePolicy

from landed.task.names import SEARCH_ATTRIBUTES
from landed.task.spec import TaskSpec
from landed.task.start import TASK_ID_REUSE, start_search_attributes


def _named(task: TaskSpec) -> dict[str, object]:
    return {pair.key.name: pair.value for pair in start_search_attributes(task)}


def test_a_task_id_never_starts_a_second_run() -> None:
    assert TASK_ID_REUSE is WorkflowIDReusePolicy.REJECT_DUPLICATE


def test_a_task_is_searchable_by_its_owner_and_loop_from_its_start() -> None:
    plain = TaskSpec.model_validate(spec(owner="shop-agent"))
    assert _named(plain) == {"LandedOwner": "shop-agent", "LandedRung": "planned"}
    looped = TaskSpec.model_validate(spec(owner="shop-agent", loop="nightly"))
    assert _named(looped) == {
        "LandedOwner": "shop-agent",
        "LandedRung": "planned",
        "LandedLoop": "nightly",
    }
    # Only the attributes the runner registers, each a keyword.
    assert set(_named(looped)) <= set(SEARCH_ATTRIBUTES)
    keys = [pair.key for pair in start_search_attributes(looped)]
    assert all(isinstance(k, type(SearchAttributeKey.for_keyword("x"))) for k in keys)
