"""One Claude Code "window" for the concurrency test: a real MCP server over stdio plus the
short-lived processes a window spawns (hooks through bin/engram-hook, `engram` CLI calls),
all on one project, driven by a seeded random mix of operations.

Run: python window_worker.py CONFIG_JSON. Every acknowledged write is appended to the
config's `out` file as one JSON line as soon as its answer arrives, so the test can check
the stores against exactly what was acknowledged. Self-checks that fail (a memory that
recall should find and does not) are written as `anomaly` lines.

Per epoch the window is one session: SessionStart, a share of the operations, then the MCP
server closes and SessionEnd promotes the session, as when a window is closed.
"""

from __future__ import annotations

import json
import os
import random
import string
import sys
import time
from pathlib import Path
from typing import Any

import anyio
from mcp.client.session import ClientSession
from mcp.client.stdio import StdioServerParameters, stdio_client

REPO = Path(__file__).resolve().parents[2]
HOOK = REPO / "bin" / "engram-hook"

# operation -> weight (MCP calls; the rest are separate processes)
MCP_WEIGHTS = {
    "store_project": 20, "store_session": 14, "store_user": 3, "update": 14, "recall": 10, "recall_check": 8,
    "forget": 5, "promote": 6, "context": 2, "status": 1, "graph": 1,
}
SIDE_WEIGHTS_HOOKS = {"hook_edit": 5, "hook_bash": 3, "hook_prompt": 3, "cli_tag": 3, "cli_store": 2}
SIDE_WEIGHTS_CLI = {"cli_tag": 5, "cli_store": 6, "cli_recall": 3}
SIDE_SHARE = 0.22


class Window:
    def __init__(self, cfg: dict[str, Any]) -> None:
        self.cfg = cfg
        self.w = cfg["window"]
        self.rnd = random.Random(cfg["seed"])
        self.project = cfg["project"]
        self.env = dict(os.environ)
        self.env.update(cfg["env"])
        self.out = open(cfg["out"], "a", encoding="utf-8")
        self.mem: dict[str, dict[str, Any]] = {}  # id -> state (this window's memories)
        self.captures: list[dict[str, Any]] = []
        self.n = 0
        self.vocab = ["".join(self.rnd.choice(string.ascii_lowercase) for _ in range(7)) for _ in range(4000)]
        self.hooks = cfg["side"] == "hooks"
        self.limiter = anyio.CapacityLimiter(cfg.get("side_parallel", 2))

    # -- bookkeeping ------------------------------------------------------------------
    def emit(self, **event: Any) -> None:
        self.out.write(json.dumps(event, ensure_ascii=False) + "\n")
        self.out.flush()

    def anomaly(self, what: str, **detail: Any) -> None:
        self.emit(ev="anomaly", window=self.w, what=what, **detail)

    def token(self) -> str:
        self.n += 1
        return f"tk{self.w}x{self.n}q{self.rnd.randrange(10**6)}"

    def words(self, k: int = 9) -> str:
        return " ".join(self.rnd.choice(self.vocab) for _ in range(k))

    def live(self, *, scope: str | None = None, forgotten: bool | None = None) -> list[str]:
        return [i for i, m in self.mem.items() if not m["gone"] and (scope is None or scope in m["scopes"])
                and (forgotten is None or m["forgotten"] == forgotten)]

    # -- MCP operations -------------------------------------------------------------------
    async def tool(self, session: ClientSession, name: str, args: dict[str, Any]) -> tuple[bool, Any]:
        res = await session.call_tool(name, args)
        payload = json.loads(res.content[0].text)
        self.emit(ev="op", via="mcp", kind=name, ok=not res.is_error)
        if res.is_error and payload.get("error") not in ("not_found", "invalid_input"):
            self.anomaly("tool error", tool=name, envelope=payload)
        return (not res.is_error), payload

    async def mcp_op(self, s: ClientSession, sid: str, kind: str) -> None:
        r = self.rnd
        if kind.startswith("store_"):
            scope = kind.split("_", 1)[1]
            tok = self.token()
            content = f"{tok} {self.words()}"
            imp = round(r.uniform(0.5, 1.0), 3)
            tags = [f"w{self.w}", r.choice(["alpha", "beta", "gamma"])]
            ok, res = await self.tool(s, "store_memory", {"content": content, "type": r.choice(["semantic", "procedural", "episodic"]),
                                                          "scope": scope, "importance": imp, "tags": tags})
            if ok:
                self.emit(ev="store", via="mcp", id=res["memory_id"], action=res["action"], scope=scope, token=tok,
                          content=content, tags=tags, session=sid)
                if res["action"] == "created":
                    self.mem[res["memory_id"]] = {"scopes": {scope}, "content": content, "token": tok, "forgotten": False,
                                                  "gone": False, "tags": set(tags), "session": sid}
            return
        if kind == "update":
            ids = self.live()
            if not ids:
                return
            mid = r.choice(ids)
            m = self.mem[mid]
            args: dict[str, Any] = {"memory_id": mid}
            if r.random() < 0.6:
                args["content"] = f"{m['token']} v{self.n} {self.words()}"
            if r.random() < 0.5:
                args["tags"] = {"add": [f"u{self.w}n{self.n}"]}
            if r.random() < 0.4:
                args["importance"] = round(r.uniform(0.5, 1.0), 3)
            if len(args) == 1:
                args["summary"] = f"summary {self.n}"
            ok, res = await self.tool(s, "update_memory", args)
            if ok:
                self.emit(ev="update", via="mcp", id=mid, content=args.get("content"), tags_add=(args.get("tags") or {}).get("add", []),
                          version=res["version"])
                if "content" in args:
                    m["content"] = args["content"]
                m["tags"] |= set((args.get("tags") or {}).get("add", []))
            else:
                self.anomaly("update of a live memory failed", id=mid, res=res)
            return
        if kind == "forget":
            forgotten = self.live(forgotten=True)
            if forgotten and r.random() < 0.3:
                mid = r.choice(forgotten)
                ok, res = await self.tool(s, "forget_memory", {"memory_id": mid, "undo": True})
                if ok:
                    self.emit(ev="forget", via="mcp", id=mid, undo=True)
                    self.mem[mid]["forgotten"] = False
                return
            ids = self.live(forgotten=False)
            if ids:
                mid = r.choice(ids)
                ok, res = await self.tool(s, "forget_memory", {"memory_id": mid, "reason": f"test {self.n}"})
                if ok:
                    self.emit(ev="forget", via="mcp", id=mid, undo=False)
                    self.mem[mid]["forgotten"] = True
            return
        if kind == "promote":
            session_ids = [i for i in self.live(scope="session", forgotten=False) if "project" not in self.mem[i]["scopes"]]
            project_ids = [i for i in self.live(scope="project", forgotten=False) if "user" not in self.mem[i]["scopes"]]
            if session_ids and (r.random() < 0.75 or not project_ids):
                mid, target = r.choice(session_ids), "project"
            elif project_ids:
                mid, target = r.choice(project_ids), "user"
            else:
                return
            ok, res = await self.tool(s, "promote_memory", {"memory_id": mid, "target_scope": target, "reason": "test"})
            if ok:
                self.emit(ev="promote", via="mcp", id=mid, target=target, action=res["action"], target_id=res["target_id"])
                if res["action"] == "created":
                    self.mem[mid]["scopes"].add(target)
            return
        if kind == "recall":
            await self.tool(s, "recall_memories", {"query": self.words(3), "limit": r.choice([3, 10, 25])})
            return
        if kind == "recall_check":
            ids = self.live()
            if not ids:
                return
            mid = r.choice(ids)
            m = self.mem[mid]
            scope = sorted(m["scopes"])[0]
            args = {"query": m["token"], "strategy": "keyword", "scope": scope, "limit": 10}
            if m["forgotten"] and r.random() < 0.5:
                args["include_forgotten"] = True
            ok, res = await self.tool(s, "recall_memories", args)
            found = ok and mid in [x["id"] for x in res.get("memories", [])]
            expect = (not m["forgotten"]) or args.get("include_forgotten", False)
            if found != expect:
                self.anomaly("recall disagrees with the acknowledged state", id=mid, expected=expect, found=found, scope=scope,
                             forgotten=m["forgotten"])
            return
        if kind == "context":
            ok, res = await self.tool(s, "get_memory_context", {"task_description": self.words(4), "max_tokens": 800})
            block = res.get("context_block", "") if ok else ""
            if block and not (block.startswith("<engram-memory>") and block.rstrip().endswith("</engram-memory>")):
                self.anomaly("context block not fenced", block=block[:200])
            return
        if kind == "status":
            await self.tool(s, "get_memory_status", {})
            return
        if kind == "graph":
            await self.tool(s, "search_knowledge_graph", {"limit": 10})

    # -- separate processes -----------------------------------------------------------------
    async def run_proc(self, cmd: list[str], stdin: bytes | None = None, *, env: dict[str, str] | None = None) -> Any:
        async with self.limiter:
            return await anyio.run_process(cmd, input=stdin, check=False, env=env or self.env, cwd=self.project)

    def hook_payload(self, sid: str, event: str, **extra: Any) -> bytes:
        base = {"session_id": sid, "transcript_path": f"/nonexistent/{sid}.jsonl", "cwd": self.project,
                "hook_event_name": event, "permission_mode": "default"}
        base.update(extra)
        return json.dumps(base).encode()

    async def hook(self, sid: str, event: str, **extra: Any) -> Any:
        proc = await self.run_proc([str(HOOK), event], self.hook_payload(sid, event, **extra))
        self.emit(ev="op", via="hook", kind=event, ok=proc.returncode == 0)
        if proc.returncode != 0 or b"Traceback" in proc.stderr:
            self.anomaly("hook failed", event=event, rc=proc.returncode, stderr=proc.stderr.decode(errors="replace")[-500:])
        return proc

    async def cli(self, sid: str, *args: str) -> tuple[bool, Any]:
        proc = await self.run_proc([sys.executable, "-m", "engram_mcp.interfaces.cli", "--json", "--session", sid, *args])
        ok = proc.returncode == 0
        self.emit(ev="op", via="cli", kind=args[0], ok=ok)
        if not ok:
            return False, proc.stderr.decode(errors="replace")
        return True, json.loads(proc.stdout) if proc.stdout.strip() else None

    async def side_op(self, sid: str, kind: str, target: str | None) -> None:
        r = self.rnd
        if kind == "hook_edit":
            tok = self.token()
            old, new = self.words(6), f"{tok} {self.words(10)}"
            path = f"{self.project}/src/m{self.w}_{self.n}.py"
            proc = await self.hook(sid, "PostToolUse", tool_name="Edit",
                                   tool_input={"file_path": path, "old_string": old, "new_string": new, "replace_all": False},
                                   tool_response={"filePath": path, "oldString": old, "newString": new, "userModified": False},
                                   tool_use_id=f"toolu_{tok}")
            if proc.returncode == 0:
                self.captures.append({"token": tok, "session": sid})
                self.emit(ev="capture", kind="edit", token=tok, session=sid)
        elif kind == "hook_bash":
            tok = self.token()
            proc = await self.hook(sid, "PostToolUse", tool_name="Bash",
                                   tool_input={"command": f"make check-{tok}", "description": "check"},
                                   tool_response={"stdout": "", "stderr": f"error: target check-{tok} failed: {self.words(8)}",
                                                  "interrupted": False, "isImage": False},
                                   tool_use_id=f"toolu_{tok}")
            if proc.returncode == 0:
                self.captures.append({"token": tok, "session": sid})
                self.emit(ev="capture", kind="bash", token=tok, session=sid)
        elif kind == "hook_prompt":
            words = self.mem[target]["token"] if target else self.words(3)
            proc = await self.hook(sid, "UserPromptSubmit", prompt=f"please look again at {words} and {self.words(4)}")
            out = proc.stdout.decode(errors="replace").strip()
            if out:
                ctx = json.loads(out)["hookSpecificOutput"]["additionalContext"]
                if not (ctx.startswith("<engram-memory>") and ctx.rstrip().endswith("</engram-memory>")):
                    self.anomaly("prompt context not fenced", block=ctx[:200])
        elif kind == "cli_tag":
            if target is None:
                return
            # a label, not a token: "c0n0x6q250308" as a whole tag reads as a password and is redacted
            self.token()  # advances self.n: the tag is unique per window and operation
            tag = f"label-c{self.w}-n{self.n}"
            ok, res = await self.cli(sid, "update", target, "--add-tags", tag)
            if ok:
                self.emit(ev="update", via="cli", id=target, content=None, tags_add=[tag], version=res["version"])
                self.mem[target]["tags"].add(tag)
            else:
                self.anomaly("cli tag of a live memory failed", id=target, err=res)
        elif kind == "cli_store":
            tok = self.token()
            content = f"{tok} {self.words()}"
            scope = r.choice(["project", "session"])
            ok, res = await self.cli(sid, "store", content, "--type", "semantic", "--scope", scope, "--tags", f"cli{self.w}",
                                     "--importance", "0.6")
            if ok:
                self.emit(ev="store", via="cli", id=res["memory_id"], action=res["action"], scope=scope, token=tok,
                          content=content, tags=[f"cli{self.w}"], session=sid)
                if res["action"] == "created":
                    self.mem[res["memory_id"]] = {"scopes": {scope}, "content": content, "token": tok, "forgotten": False,
                                                  "gone": False, "tags": {f"cli{self.w}"}, "session": sid}
        elif kind == "cli_recall":
            await self.cli(sid, "recall", self.words(2), "--limit", "5")

    # -- session lifecycle ----------------------------------------------------------------------
    async def check_captures(self, sid: str) -> None:
        """Every capture acknowledged in this session is in the session scope exactly once (once drained)."""
        from engram_mcp.daemon.client import DaemonClient

        pending = [c for c in self.captures if c["session"] == sid]
        deadline = time.monotonic() + 60
        with DaemonClient(Path(self.env["ENGRAM_HOME"]), autostart=False, client_name=f"check{self.w}") as c:
            while pending and time.monotonic() < deadline:
                still = []
                for cap in pending:
                    res = await anyio.to_thread.run_sync(lambda: c.call(
                        "recall", {"query": cap["token"], "strategy": "keyword", "scope": "session", "limit": 10, "strengthen": False},
                        project_root=self.project, session_id=sid))
                    hits = [m for m in res["memories"] if cap["token"] in m["content"]]
                    if len(hits) > 1:
                        self.anomaly("capture stored more than once", token=cap["token"], ids=[m["id"] for m in hits])
                    elif not hits:
                        still.append(cap)
                pending = still
                if pending:
                    await anyio.sleep(0.5)
        for cap in pending:
            self.anomaly("acknowledged capture never reached the session", token=cap["token"], session=sid)
        self.emit(ev="captures_checked", session=sid, n=len([c for c in self.captures if c["session"] == sid]))

    async def end_session(self, sid: str) -> None:
        if self.hooks:
            await self.check_captures(sid)
            proc = await self.hook(sid, "SessionEnd", reason="other")
            ok = proc.returncode == 0
            result: Any = None
        else:
            from engram_mcp.daemon.client import DaemonClient

            with DaemonClient(Path(self.env["ENGRAM_HOME"]), autostart=False, client_name=f"end{self.w}") as c:
                result = await anyio.to_thread.run_sync(lambda: c.call("session_end", {}, project_root=self.project, session_id=sid))
            ok = True
            self.emit(ev="op", via="daemon", kind="session_end", ok=True)
        if ok:
            self.emit(ev="session_end", session=sid, result=result)
            for mid, m in self.mem.items():
                if m["gone"] or "session" not in m["scopes"] or m["session"] != sid:
                    continue
                m["scopes"].discard("session")
                if not m["forgotten"]:
                    m["scopes"].add("project")
                elif not m["scopes"]:
                    m["gone"] = True

    async def epoch(self, e: int, n_ops: int) -> None:
        sid = f"w{self.w}-e{e}-{self.rnd.randrange(16**8):08x}"
        env = dict(self.env)
        env["CLAUDE_PROJECT_DIR"] = self.project
        env["CLAUDE_CODE_SESSION_ID"] = sid
        if self.hooks:
            proc = await self.hook(sid, "SessionStart", source="startup")
            out = proc.stdout.decode(errors="replace").strip()
            if out:
                ctx = json.loads(out)["hookSpecificOutput"]["additionalContext"]
                if not ctx.startswith("<engram-memory>"):
                    self.anomaly("session start context not fenced", block=ctx[:200])
        params = StdioServerParameters(command=sys.executable, args=["-m", "engram_mcp.interfaces.server"], env=env, cwd=self.project)
        side = SIDE_WEIGHTS_HOOKS if self.hooks else SIDE_WEIGHTS_CLI
        with open(self.cfg["out"] + f".server{e}.stderr", "w") as errlog:
            async with stdio_client(params, errlog=errlog) as (read, write):
                async with ClientSession(read, write, read_timeout_seconds=300) as s:
                    await s.initialize()
                    async with anyio.create_task_group() as tg:
                        for _ in range(n_ops):
                            if self.rnd.random() < SIDE_SHARE:
                                kind = self.rnd.choices(list(side), weights=list(side.values()))[0]
                                targets = self.live(forgotten=False) if kind in ("cli_tag", "hook_prompt") else []
                                target = self.rnd.choice(targets) if targets else None
                                tg.start_soon(self.side_op, sid, kind, target)
                                await anyio.sleep(0)
                            else:
                                kind = self.rnd.choices(list(MCP_WEIGHTS), weights=list(MCP_WEIGHTS.values()))[0]
                                await self.mcp_op(s, sid, kind)
        await self.end_session(sid)

    async def run(self) -> None:
        epochs = self.cfg["epochs"]
        per = self.cfg["ops"] // epochs
        for e in range(epochs):
            await self.epoch(e, per + (self.cfg["ops"] - per * epochs if e == epochs - 1 else 0))
        self.emit(ev="done", window=self.w, memories=len(self.mem))


def main() -> None:
    cfg = json.loads(Path(sys.argv[1]).read_text())
    anyio.run(Window(cfg).run)


if __name__ == "__main__":
    main()
