#!/usr/bin/env python3
"""What engram costs in context tokens per Claude Code session.

Three parts, tokens estimated as ceil(characters / 4) everywhere (no tokenizer is installed;
the same estimate as the budgets in core/operations.py, context.py and tests/test_plugin_markdown.py):

* tools/list: the MCP server's tools/list result as sent on the wire (compact JSON), measured
  by spawning `python -m engram_mcp.interfaces.server` and listing its tools with the official SDK client,
  exactly as tests/test_mcp_server.py::test_tools_list_costs_at_most_2000_tokens does. Claude
  Code defers MCP tool schemas by default (only names are sent until a tool is looked up), so
  this is the cost with tool search off, an upper bound otherwise.
* always-on markdown: the skill and agent listing lines Claude Code puts into every session
  (frontmatter name + description, an agent's tool list), and, as `claude plugin details`
  counts them, the commands' descriptions too (they are `disable-model-invocation`, so the
  model never sees them). Read with the helpers of tests/test_plugin_markdown.py; and, when
  the Claude Code CLI is installed (tests/claude-cli/node_modules/.bin/claude), `claude plugin details
  engram@engram-dev` in a throwaway HOME after `claude plugin marketplace add <copy>` +
  `claude plugin install engram@engram-dev`.
* the SessionStart block: `hook_ops.session_start` (what the SessionStart hook asks the daemon
  for) on an empty store and on a populated one (user preferences, project knowledge,
  procedures, a finished session), against `context_token_budget`.

    python bench/token_costs.py [--out DIR] [--no-claude]

Writes tokens.json and tokens.md to --out (default bench/results/<UTC>/tokens/).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import re
import shutil
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

CHARS_PER_TOKEN = 4
OFFLINE = {"ANTHROPIC_BASE_URL": "http://127.0.0.1:9"}  # tests/test_plugin_install.py: avoids a ~19 s network stall
PLUGIN_PARTS = (".claude-plugin", ".mcp.json", "bin", "hooks", "commands", "skills", "agents", "plugin")  # plugin/: what the marketplace lists


def tokens(text: str) -> int:
    return -(-len(text) // CHARS_PER_TOKEN)


# ------------------------------------------------------------------------------------ tools/list
async def _list_tools(env: dict[str, str], cwd: Path):
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=sys.executable, args=["-m", "engram_mcp.interfaces.server"], env=env, cwd=str(cwd))
    with open(os.devnull, "w") as errlog:
        async with stdio_client(params, errlog=errlog) as (read, write):
            async with ClientSession(read, write, read_timeout_seconds=120) as session:
                await session.initialize()
                return await session.list_tools()


def tools_list_cost(tmp: Path) -> dict[str, Any]:
    home, project = tmp / "mcp-home", tmp / "mcp-project"
    (project / ".git").mkdir(parents=True)
    home.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("ENGRAM_", "CLAUDE"))}
    # tools/list never needs the daemon; /bin/false keeps the server's warm-up from starting one.
    env.update(HOME=str(home), ENGRAM_HOME=str(home / ".claude" / "engram"), CLAUDE_PROJECT_DIR=str(project),
               PYTHONPATH=str(ROOT), ENGRAM_PYTHON="/bin/false")
    listed = asyncio.run(_list_tools(env, project))
    wire = listed.model_dump(by_alias=True, exclude_none=True, mode="json")
    text = json.dumps(wire, ensure_ascii=False, separators=(",", ":"))
    tools_only = json.dumps({"tools": wire["tools"]}, ensure_ascii=False, separators=(",", ":"))
    return {
        "what": "tools/list result as sent by the engram MCP server (compact JSON)",
        "method": "as tests/test_mcp_server.py::test_tools_list_costs_at_most_2000_tokens: ceil(chars / 4)",
        "tools": len(wire["tools"]),
        "chars": len(text),
        "tokens_estimate": tokens(text),
        "tools_only_tokens_estimate": tokens(tools_only),
        "budget_tokens": 2000,
        "per_tool_tokens_estimate": {t["name"]: tokens(json.dumps(t, ensure_ascii=False, separators=(",", ":"))) for t in wire["tools"]},
        "note": "Claude Code defers MCP tool schemas by default (tool search): only the names are sent until a tool is "
                "looked up, so this is the per-session cost with ENABLE_TOOL_SEARCH=false and an upper bound otherwise",
    }


# ------------------------------------------------------------------------------------ markdown
def markdown_cost() -> dict[str, Any]:
    from tests import test_plugin_markdown as pm

    comps = pm.components()
    visible = pm.model_visible_lines()
    everything = [pm.listing_line(*key.split(":", 1), meta) for key, (meta, _) in comps.items()]
    per = {}
    for key, (meta, body) in comps.items():
        kind, name = key.split(":", 1)
        line = pm.listing_line(kind, name, meta)
        per[key] = {"listing_tokens": pm.tokens(line), "model_visible": line in visible, "body_tokens_on_invoke": pm.tokens(body)}
    return {
        "model_visible_tokens": pm.tokens("\n".join(visible)),
        "model_visible_budget": pm.MODEL_VISIBLE_BUDGET,
        "all_descriptions_tokens": pm.tokens("\n".join(everything)),
        "all_descriptions_budget": pm.ALL_DESCRIPTIONS_BUDGET,
        "model_visible_lines": visible,
        "per_component": per,
        "method": "listing lines as Claude Code shows them (tests/test_plugin_markdown.py listing_line), ceil(chars / 4); "
                  "commands have disable-model-invocation, so only skills and the agent are model-visible",
    }


def plugin_details(tmp: Path) -> dict[str, Any]:
    """`claude plugin details engram@engram-dev` after installing a copy of the plugin's files."""
    from tests.claude_harness import claude_bin, pinned_claude_version, run_claude

    if claude_bin() is None:
        return {"status": "not measured", "reason": "Claude Code CLI not installed (run `make setup`)"}
    market = tmp / "market"
    for part in PLUGIN_PARTS:  # the plugin's files only: a full checkout copy would carry .venv and node_modules
        src = ROOT / part
        if src.is_dir():
            shutil.copytree(src, market / part)
        elif src.exists():
            market.mkdir(exist_ok=True)
            shutil.copy2(src, market / part)
    home = tmp / "claude-home"
    home.mkdir()
    steps = (["plugin", "marketplace", "add", str(market)], ["plugin", "install", "engram@engram-dev"],
             ["plugin", "details", "engram@engram-dev"])
    proc = None
    for args in steps:
        proc = run_claude(args, home=home, cwd=tmp, env_extra=OFFLINE, timeout=180)
        if proc.returncode != 0:
            raise RuntimeError(f"claude {' '.join(args)} failed ({proc.returncode}): {(proc.stdout + proc.stderr)[-800:]}")
    text = proc.stdout
    m = re.search(r"Always-on:\s+~([\d.]+)(k?) tok", text)
    if not m:
        raise RuntimeError(f"no 'Always-on' figure in `claude plugin details`:\n{text[-1500:]}")
    per = {}
    for line in text.splitlines():
        row = re.match(r"^\s+([\w-]+)\s+~([\d.]+)(k?)\s+~([\d.]+)(k?)\s*$", line)
        if row:
            per[row.group(1)] = {"always_on": round(float(row.group(2)) * (1000 if row.group(3) else 1)),
                                 "on_invoke": round(float(row.group(4)) * (1000 if row.group(5) else 1))}
    version = pinned_claude_version()
    return {"status": "ok", "claude_code": version, "always_on_tokens": round(float(m.group(1)) * (1000 if m.group(2) else 1)),
            "per_component": per, "raw": text}


# ------------------------------------------------------------------------------------ SessionStart
PREFERENCES = [
    "Prefers pytest with plain asserts over unittest classes; fixtures in conftest.py.",
    "Wants commit messages in the imperative mood, subject under 72 characters, body explaining why.",
    "Uses ruff for linting and formatting; never black. Line length 120.",
    "Prefers small focused pull requests; one concern per PR.",
    "Likes type hints everywhere, `from __future__ import annotations` at the top of modules.",
    "Answers should be concise: code first, then a short explanation.",
    "Prefers pathlib over os.path and f-strings over format().",
    "Never push directly to main; always open a PR, even for one-line fixes.",
    "Works in Europe/Berlin time; schedules and cron expressions should say their time zone.",
    "Dislikes mocks of the database in tests; use a real throwaway instance.",
]
PROJECT = [
    "The API service lives in services/api and is a FastAPI app; its entry point is services/api/main.py.",
    "Postgres 16 is the main database; migrations are Alembic revisions in services/api/migrations.",
    "Redis is used only as a cache with a 15 minute TTL; losing it must never lose data.",
    "Background jobs run on Celery with the broker on RabbitMQ; task modules are in services/worker/tasks/.",
    "The frontend is a Vite + React app in web/; it talks to the API through the generated client in web/src/api.",
    "Authentication uses short-lived JWTs (15 min) plus refresh tokens stored httpOnly; see services/api/auth.py.",
    "CI runs on GitHub Actions: lint, unit tests, then integration tests against docker compose services.",
    "Feature flags are read from config/flags.yaml at start-up; changing one needs a restart.",
    "The billing module integrates Stripe; webhooks are verified in services/api/billing/webhooks.py.",
    "Staging is refreshed nightly at 02:00 UTC from an anonymised production snapshot.",
    "Fixed the flaky login test by waiting for the session cookie before asserting.",
    "Decided to keep the monorepo; the mobile app stays in its own repository.",
    "Logging is structured JSON via structlog; request ids are propagated in the X-Request-ID header.",
    "The search endpoint paginates with opaque cursors, never offsets.",
    "Image uploads go to S3 through presigned URLs; the API never proxies file bytes.",
]
PROCEDURES = [
    "Run the tests with `make test`; `make test-fast` skips the slow integration tests.",
    "To add a migration: `alembic revision --autogenerate -m '<what>'`, review the file, then `make migrate`.",
    "Release: bump the version in pyproject.toml, update CHANGELOG.md, tag vX.Y.Z, push the tag; CI publishes.",
    "To reproduce a production bug locally, load the anonymised snapshot with `scripts/load_snapshot.sh`.",
    "Regenerate the web API client with `make client` after changing any API schema.",
    "Rotate the Stripe webhook secret in the vault, then restart the api deployment.",
]


def session_start_cost(tmp: Path) -> dict[str, Any]:
    from engram_mcp.services import hook_ops
    from engram_mcp.index.embeddings import DEFAULT_MODEL, FastEmbedEmbedder
    from engram_mcp.services.service import MemoryService, RequestContext

    home, project = tmp / "ss-home", tmp / "ss-project"
    (project / ".git").mkdir(parents=True)
    home.mkdir()
    embedder = FastEmbedEmbedder(DEFAULT_MODEL, cache_dir=str(tmp / "models"))
    svc = MemoryService(home=home, embedder=embedder)
    out: dict[str, Any] = {}
    try:
        budget = int(svc.config(project).context_token_budget)
        empty = hook_ops.session_start(svc.access, RequestContext(project, "tokens-empty"))
        out["empty_store"] = {"tokens": empty["tokens"], "chars": len(empty["additional_context"] or "")}
        ctx = RequestContext(project, "tokens-first")
        for text in PREFERENCES:
            svc.store(ctx, content=text, type="semantic", scope="user", importance=0.8, category="preference")
        for i, text in enumerate(PROJECT):
            svc.store(ctx, content=text, type="semantic" if i % 4 else "episodic", scope="project", importance=0.6 + (i % 4) / 10)
        for text in PROCEDURES:
            svc.store(ctx, content=text, type="procedural", scope="project", importance=0.7)
        for i in range(8):
            svc.store(ctx, content=f"Edited services/api/routes/item_{i}.py: added validation for the {i}th field.", type="episodic",
                      scope="session", importance=0.6)
        svc.session_end(ctx, summary="Added request validation to the item routes and fixed the flaky login test; "
                                     "CI is green. Next: paginate the search endpoint with cursors.")
        full = hook_ops.session_start(svc.access, RequestContext(project, "tokens-second"))
        block = full["additional_context"] or ""
        out["populated_store"] = {"tokens": full["tokens"], "chars": len(block),
                                  "memories": {"user": len(PREFERENCES), "project": len(PROJECT) + len(PROCEDURES), "finished_sessions": 1},
                                  "sections": [line[4:] for line in block.splitlines() if line.startswith("### ")]}
        out["budget_tokens"] = budget
        out["budget_setting"] = "context_token_budget (default 1200)"
        out["share_of_budget"] = round(full["tokens"] / budget, 3) if budget else None
        out["block"] = block
    finally:
        svc.close()
    return out


# ------------------------------------------------------------------------------------ driver
def run_tokens(out_dir: Path | None = None, use_claude: bool = True) -> dict[str, Any]:
    started = time.perf_counter()
    tmp = Path(tempfile.mkdtemp(prefix="engram-tokens-"))
    res: dict[str, Any] = {"method": "tokens = ceil(characters / 4)"}
    errors: dict[str, str] = {}
    try:
        for name, fn in (("tools_list", lambda: tools_list_cost(tmp)), ("markdown", markdown_cost),
                         ("plugin_details", (lambda: plugin_details(tmp)) if use_claude else
                          (lambda: {"status": "not measured", "reason": "--no-claude"})),
                         ("session_start", lambda: session_start_cost(tmp))):
            print(f"  tokens: {name}", flush=True)
            try:
                res[name] = fn()
            except Exception as exc:  # one sub-measurement failing must not hide the others
                errors[name] = f"{type(exc).__name__}: {exc}"
                print(f"  tokens: {name} failed: {errors[name]}", flush=True)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    tl = res.get("tools_list", {}).get("tokens_estimate")
    md = res.get("markdown", {}).get("model_visible_tokens")
    ss = res.get("session_start", {}).get("populated_store", {}).get("tokens")
    if None not in (tl, md, ss):
        res["per_session"] = {"tools_list": tl, "always_on_markdown": md, "session_start_block": ss, "total": tl + md + ss,
                              "total_with_deferred_tools": md + ss,
                              "note": "tools/list counted in full (tool search off); with Claude Code's default deferred tools "
                                      "only the tool names are sent until used"}
    res["errors"] = errors
    res["wall_s"] = round(time.perf_counter() - started, 1)
    if out_dir is not None:
        out_dir = Path(out_dir)
        out_dir.mkdir(parents=True, exist_ok=True)
        pd = res.get("plugin_details", {})
        if pd.get("raw"):
            (out_dir / "plugin_details.txt").write_text(pd["raw"], encoding="utf-8")
        ssb = res.get("session_start", {}).get("block")
        if ssb:
            (out_dir / "session_start_block.md").write_text(ssb, encoding="utf-8")
        (out_dir / "tokens.json").write_text(json.dumps(res, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
        (out_dir / "tokens.md").write_text(markdown(res), encoding="utf-8")
    if errors:
        raise SystemExit(f"token costs: {len(errors)} measurement(s) failed: {errors}")
    return res


def markdown(res: dict[str, Any]) -> str:
    L = ["# engram token costs per session", "", "Tokens = ceil(characters / 4).", ""]
    ps = res.get("per_session")
    if ps:
        L += ["| part | tokens |", "|---|---|", f"| tools/list (9 tool schemas) | {ps['tools_list']} |",
              f"| always-on skills + agent listing | {ps['always_on_markdown']} |",
              f"| SessionStart block (populated store) | {ps['session_start_block']} |", f"| **total** | **{ps['total']}** |", "",
              ps["note"] + ".", ""]
    pd = res.get("plugin_details", {})
    if pd.get("status") == "ok":
        L += [f"`claude plugin details engram@engram-dev` (Claude Code {pd['claude_code']}): always-on ~{pd['always_on_tokens']} tokens.", ""]
    for k, v in res.get("errors", {}).items():
        L.append(f"- {k} failed: {v}")
    return "\n".join(L) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--no-claude", action="store_true", help="skip `claude plugin details`")
    a = ap.parse_args(argv)
    out = a.out or ROOT / "bench" / "results" / time.strftime("%Y%m%dT%H%M%SZ", time.gmtime()) / "tokens"
    res = run_tokens(out, use_claude=not a.no_claude)
    print(markdown(res))
    print(f"wrote {out / 'tokens.json'} ({res['wall_s']:.0f} s)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
