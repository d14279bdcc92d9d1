"""How the suite shares out its tests between pytest-xdist workers (`make test`: `-n N --dist loadgroup`).

Every worker starts its own local clusters (tests/support/clusters.py), so tests on two workers share
nothing but the machine. The scheduler (`Scheduling`, installed for `--dist loadgroup` by the hooks
below, which tests/conftest.py imports) decides what else must stay together, and what must run alone:

* a module is one unit of work: its tests run on one worker in file order, as in a serial run, its
  module-scoped clusters and managers start once, and a data-driven module's count of the cases it
  ran (``test_every_case_ran``) sees every case;
* tests marked ``xdist_group(name)`` form one unit: the packages whose package-scoped cluster is
  expensive (Kueue's, the install cluster, the real nodes) mark every module with one name;
* a test marked ``alone(reason)`` needs the machine to itself: the alone tests run, in file order on one
  worker, after every other test has finished and the other workers have stopped;
* the other units start in file order, unit-test modules last: they are short and fill the gaps at the end.

Without xdist (a plain `pytest` run) none of this applies: everything runs serially in file order.
"""

from __future__ import annotations

from collections import OrderedDict

import pytest
from _pytest.nodeid import NodeId
from xdist.remote import Producer
from xdist.scheduler import LoadGroupScheduling
from xdist.workermanage import WorkerController

ALONE = "alone"
GROUP = "xdist_group"
UNIT_TESTS = "tests/unit/"


@pytest.hookimpl(trylast=True)  # after xdist has tagged the ids of its groups
def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    check_alone_reasons(items)
    tag(config, items)


@pytest.hookimpl(tryfirst=True, optionalhook=True)  # before xdist's own choice
def pytest_xdist_make_scheduler(config: pytest.Config, log: Producer) -> Scheduling | None:
    return Scheduling(config, log) if config.getvalue("dist") == "loadgroup" else None


def check_alone_reasons(items: list[pytest.Item]) -> None:
    """An `alone` test says why it cannot share the machine (a serialised test costs everyone time)."""
    for item in items:
        mark = item.get_closest_marker(ALONE)
        if mark is not None and not (mark.args or mark.kwargs.get("reason")):
            raise pytest.UsageError(
                f"{item.nodeid}: alone(reason) needs the reason it cannot share the machine"
            )


def tag(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Append its unit to the id of each grouped or alone test (``<id>@<group>``, ``<id>@alone``), the
    way xdist tags a group: the controller does not collect, so the ids are how it learns them.

    xdist's own tagging (pytest-xdist 3.8) writes an attribute pytest 9.2 no longer reads
    (pytest-dev/pytest-xdist#1386), so this does it for both; an alone test drops its group (the alone
    tests run on one worker anyway)."""
    if not getattr(config.option, "loadgroup", False):  # what xdist sets on a worker of `--dist loadgroup`
        return
    for item in items:
        groups = {
            str(m.args[0] if m.args else m.kwargs.get("name", "default")) for m in item.iter_markers(GROUP)
        }
        unit = ALONE if item.get_closest_marker(ALONE) is not None else "_".join(sorted(groups))
        if unit:
            _set_id(item, f"{unit_free(item.nodeid)}@{unit}")


def _set_id(item: pytest.Item, nodeid: str) -> None:
    if hasattr(item, "_id"):  # pytest >= 9.2: a structured id, its string form cached as given
        item._id = NodeId.parse(nodeid)
    else:
        item._nodeid = nodeid


def unit_free(nodeid: str) -> str:
    """The id without xdist's group tag."""
    test, _, group = nodeid.rpartition("@")
    return test if test and "]" not in group else nodeid  # a parametrize id may hold an "@"


def unit_of(nodeid: str) -> str:
    """The unit of work of a test (see the module docstring)."""
    test = unit_free(nodeid)
    if test != nodeid:
        return nodeid[len(test) + 1 :]
    return nodeid.split("::", 1)[0]


class Scheduling(LoadGroupScheduling):
    """xdist's `loadgroup` with the units, the order and the alone phase of the module docstring.

    The alone unit is held back until the queue is empty and every worker but one (the first to find
    the queue empty) has finished and left; then that one runs it and stops.
    """

    alone: dict[str, bool] | None = None
    runner: WorkerController | None = None

    def _split_scope(self, nodeid: str) -> str:
        return unit_of(nodeid)

    def schedule(self) -> None:
        """xdist's first distribution, with the queue in the order of the module docstring."""
        if self.collection is not None or not self._check_nodes_have_same_collection():
            super().schedule()
            return
        self.collection = list(next(iter(self.registered_collections.values())))
        units: OrderedDict[str, dict[str, bool]] = OrderedDict()
        for nodeid in self.collection:
            units.setdefault(unit_of(nodeid), {})[nodeid] = False
        self.alone = units.pop(ALONE, None)
        for unit in sorted(units, key=lambda u: u.startswith(UNIT_TESTS)):  # stable: file order
            self.workqueue[unit] = units[unit]
        for node in self.nodes[max(len(self.workqueue), 1) :]:  # more workers than units
            del self.assigned_work[node]
            node.shutdown()
        for _ in range(2):  # two units each to start with, as xdist does: a worker holds its last test back
            for node in self.nodes:
                self._reschedule(node)

    @property
    def tests_finished(self) -> bool:
        return not self.alone and super().tests_finished

    @property
    def has_pending(self) -> bool:
        return bool(self.alone) or super().has_pending

    def _reschedule(self, node: WorkerController) -> None:
        if self.workqueue or not self.alone or node.shutting_down:
            super()._reschedule(node)
            return
        self.runner = self.runner or node
        if node is self.runner:
            self._start_alone()
        else:
            node.shutdown()  # it runs what it holds, then leaves (remove_node)

    def remove_node(self, node: WorkerController) -> str | None:
        crashed = super().remove_node(node)
        if node is self.runner:
            self.runner = None  # it crashed: the next worker to find the queue empty runs the alone unit
        elif self.runner is not None and self.alone and not self.workqueue:
            self._start_alone()
        return crashed

    def _start_alone(self) -> None:
        """Hand the alone unit to the runner once it is the last worker and idle: it has run all it was
        given but the last test, which xdist holds back until more work or the shutdown arrives."""
        runner = self.runner
        if runner is None or len(self.assigned_work) > 1 or self._pending_of(self.assigned_work[runner]) > 1:
            return
        assert self.alone is not None
        self.workqueue[ALONE], self.alone = self.alone, None
        self._assign_work_unit(runner)
        runner.shutdown()
