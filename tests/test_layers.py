"""The seam between the service and its operations, checked on the real import graph.

`MemoryService` (services/service.py) is the one composition root: the operations depend on
`ScopeAccess` (services/access.py) and on each other, never on the service, and no import
cycle runs through the services package (a cycle hidden behind TYPE_CHECKING or a
function-level import is still an edge grimp sees). The service exposes each operation with
the operation's own signature, so a caller's bad argument names fail before any code runs.
"""

from __future__ import annotations

import inspect

import grimp
import pytest

from engram_mcp.services import (
    browse,
    consolidate,
    context,
    edit,
    graph,
    lifecycle,
    promotion,
    recall,
    status,
    store,
    transfer,
)
from engram_mcp.services.access import ScopeAccess
from engram_mcp.services.service import MemoryService

SERVICES = "engram_mcp.services"
ROOT = f"{SERVICES}.service"

#: MemoryService method -> the operation function it delegates to (access, ctx, ...).
DELEGATES = {
    "store": store.store,
    "recall": recall.recall,
    "list_memories": browse.list_memories,
    "get": edit.get,
    "update": edit.update,
    "tag": edit.tag,
    "forget": edit.forget,
    "link": edit.link,
    "status": status.status,
    "graph_search": graph.search,
    "promote": promotion.promote,
    "context": context.build_context,
    "consolidate": consolidate.consolidate,
    "import_": transfer.import_,
    "export": transfer.export,
    "reindex": transfer.reindex,
}
#: Methods that expose fewer arguments than their operation (the rest is internal).
NARROWER = {"session_start": promotion.session_start, "session_end": promotion.session_end, "maintain": lifecycle.maintain}


@pytest.fixture(scope="module")
def graph_() -> grimp.ImportGraph:
    return grimp.build_graph("engram_mcp")


def _services_modules(g: grimp.ImportGraph) -> list[str]:
    return sorted(m for m in g.modules if m.startswith(f"{SERVICES}."))


def importers_of_the_root(g: grimp.ImportGraph) -> set[str]:
    """Services modules that import the composition root, directly or through others."""
    return {m for m in _services_modules(g) if m != ROOT and g.chain_exists(importer=m, imported=ROOT)}


def cycles_among(g: grimp.ImportGraph, modules: list[str]) -> list[tuple[str, str]]:
    """Pairs of modules that reach each other through imports (a cycle runs through both)."""
    return [
        (a, b)
        for i, a in enumerate(modules)
        for b in modules[i + 1 :]
        if g.chain_exists(importer=a, imported=b) and g.chain_exists(importer=b, imported=a)
    ]


def test_no_services_module_but_the_root_imports_the_service(graph_: grimp.ImportGraph) -> None:
    assert importers_of_the_root(graph_) == set()


def test_there_is_no_import_cycle_among_the_services_modules(graph_: grimp.ImportGraph) -> None:
    assert cycles_among(graph_, _services_modules(graph_)) == []


def test_the_checks_see_an_operation_that_imports_the_service_and_the_cycle_it_makes() -> None:
    """The two checks above fail when the seam breaks: a real graph with one added edge."""
    g = grimp.build_graph("engram_mcp")
    g.add_import(importer=f"{SERVICES}.promotion", imported=ROOT)
    assert f"{SERVICES}.promotion" in importers_of_the_root(g)
    assert (f"{SERVICES}.promotion", ROOT) in cycles_among(g, _services_modules(g))


def test_the_service_builds_one_scope_access_its_operations_share(home) -> None:
    from tests.fakes import FakeEmbedder

    svc = MemoryService(home=home, embedder=FakeEmbedder())
    try:
        assert isinstance(svc.access, ScopeAccess)
        assert svc.lock is svc.access.lock and svc.registry is svc.access.registry
    finally:
        svc.close()


def _after_access(fn) -> list[inspect.Parameter]:
    params = list(inspect.signature(fn).parameters.values())
    assert params[0].name == "access", f"{fn.__module__}.{fn.__name__} must take the scope access first"
    return params[1:]


@pytest.mark.parametrize("method", sorted(DELEGATES))
def test_each_service_method_has_its_operations_signature(method: str) -> None:
    """Same names, kinds and defaults: a bad argument fails at the call, as it would on the operation."""
    op = DELEGATES[method]
    mine = list(inspect.signature(getattr(MemoryService, method)).parameters.values())[1:]
    assert [(p.name, p.kind, p.default) for p in mine] == [(p.name, p.kind, p.default) for p in _after_access(op)]


@pytest.mark.parametrize("method", sorted(NARROWER))
def test_a_narrower_service_method_passes_only_arguments_its_operation_takes(method: str) -> None:
    op_params = {p.name: p for p in _after_access(NARROWER[method])}
    for p in list(inspect.signature(getattr(MemoryService, method)).parameters.values())[1:]:
        assert p.name in op_params and p.default == op_params[p.name].default


def test_no_operation_is_attached_to_the_service_at_import_time() -> None:
    """Every public attribute of MemoryService is written in its class body (no lambdas bound later)."""
    for name, value in vars(MemoryService).items():
        if callable(value):
            assert value.__name__ != "<lambda>", name
            assert value.__qualname__.startswith("MemoryService."), name
