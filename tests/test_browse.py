"""`engram list` / recall without a query: one page costs one read of the page's records."""

from __future__ import annotations

from pathlib import Path

from tests.fakes import FakeEmbedder
from engram_mcp.services.handles import ScopeHandle
from engram_mcp.services.service import MemoryService, RequestContext

MEMORIES = 300
PAGE = 7


def test_a_page_reads_only_its_own_records(tmp_path: Path, monkeypatch) -> None:
    (tmp_path / "p" / ".git").mkdir(parents=True)
    svc = MemoryService(home=tmp_path, user_dir=tmp_path / "u", embedder=FakeEmbedder())
    ctx = RequestContext(tmp_path / "p")
    try:
        ids = [svc.store(ctx, content=f"fact {i}: the {i}th service listens on port {8000 + i}", type="semantic",
                         scope="project")["memory_id"] for i in range(MEMORIES)]
        reads: list[tuple[str, int]] = []
        real_q = ScopeHandle.q

        def counting_q(self, sql, params=None):
            rows = real_q(self, sql, params)
            reads.append((sql, len(rows) if isinstance(rows, list) else 1))
            return rows

        monkeypatch.setattr(ScopeHandle, "q", counting_q)
        page = svc.list_memories(ctx, limit=PAGE, page=3)
        assert [m["id"] for m in page["memories"]] == list(reversed(ids))[2 * PAGE: 3 * PAGE]
        assert page["total_matched"] == MEMORIES and page["next_page"] == 4
        assert sum(n for _, n in reads) == PAGE, reads  # the page's records, nothing else decoded
    finally:
        svc.close()
