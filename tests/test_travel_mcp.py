"""Claude shares a memory through the MCP protocol: `store_memory` with `share: true`."""

from __future__ import annotations

import pytest

from tests.test_mcp_server import anyio_backend, call, call_error, engram_home, env, mcp_session, project  # noqa: F401

TEAM = ".claude/team-memory"


@pytest.mark.anyio
async def test_store_memory_with_share_writes_the_team_file(env, project) -> None:
    async with mcp_session(env) as s:
        stored = await call(s, "store_memory", {"content": "Release branches are cut on Mondays.", "type": "semantic",
                                                "scope": "project", "share": True, "tags": ["release"]})
        assert stored["action"] == "created" and stored["shared"]["path"].startswith(f"{TEAM}/")
        text = (project / stored["shared"]["path"]).read_text()
        assert "Release branches are cut on Mondays." in text and stored["memory_id"] in text

        refused = await call_error(s, "store_memory", {"content": "a scratch thought", "type": "episodic",
                                                       "scope": "session", "share": True})
        assert refused["field"] == "share"
        listed = await call(s, "recall_memories", {"scope": "session"})
        assert "a scratch thought" not in str(listed)  # refused before anything was stored
    assert len(list((project / TEAM).glob("*.md"))) == 1
