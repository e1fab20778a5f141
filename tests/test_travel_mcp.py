"""Claude shares a memory through the MCP protocol: `promote_memory` to target scope `team`."""

from __future__ import annotations

import pytest

from tests.test_mcp_server import anyio_backend, call, call_error, engram_home, env, mcp_session, project  # noqa: F401

TEAM = ".claude/team-memory"


@pytest.mark.anyio
async def test_promote_memory_to_team_writes_the_team_file(env, project) -> None:
    async with mcp_session(env) as s:
        stored = await call(s, "store_memory", {"content": "Release branches are cut on Mondays.", "type": "semantic",
                                                "scope": "project", "tags": ["release"]})
        shared = await call(s, "promote_memory", {"memory_id": stored["memory_id"], "target_scope": "team"})
        assert shared["memory_id"] == stored["memory_id"] and shared["path"].startswith(f"{TEAM}/")
        text = (project / shared["path"]).read_text()
        assert "Release branches are cut on Mondays." in text and stored["memory_id"] in text

        scratch = await call(s, "store_memory", {"content": "a scratch thought", "type": "episodic", "scope": "session"})
        refused = await call_error(s, "promote_memory", {"memory_id": scratch["memory_id"], "target_scope": "team"})
        assert refused["field"] == "memory_id" and "promote it to the project first" in refused["message"]
        user = await call(s, "store_memory", {"content": "I like tabs.", "type": "semantic", "scope": "user"})
        refused = await call_error(s, "promote_memory", {"memory_id": user["memory_id"], "target_scope": "team"})
        assert "never written into a project" in refused["message"]
        promoted = await call(s, "promote_memory", {"memory_id": scratch["memory_id"], "target_scope": "project"})
        assert promoted  # an ordinary promotion still goes to the service
    assert len(list((project / TEAM).glob("*.md"))) == 1
