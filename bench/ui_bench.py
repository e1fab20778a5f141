#!/usr/bin/env python3
"""`engram ui` at scale: page load and search over HTTP, at 1k / 10k memories.

    .venv/bin/python bench/ui_bench.py [--sizes 1000 10000] [--repeats 30] [--out DIR]

For each size: a throwaway HOME and project, filled through the real daemon (`engram import` of
a generated export carrying vectors of the real model, as bench/speed_bench.py builds them),
then `engram ui --no-open` started as a user starts it, and timed over HTTP on loopback with
the session cookie (for the page) and the token header (for the API), the way the browser
fetches the page:
  * page load: GET / (HTML) + app.js + style.css + icon.svg + the API calls the browse page makes
    on opening (/api/info, /api/list newest page of 25, the first /api/live poll), fetched one
    after another (a browser fetches the assets in parallel, so this sum is an upper bound of its
    network part; rendering the rows is not in it);
  * search: GET /api/search?q=... (the same recall as `engram recall` with strengthen off,
    page 1 of 20; each query a new one, so nothing is cached);
  * the other pages' API calls once warm: a memory (get + history + decay curve), health
    (the quality rates and counts from the index), sessions, graph (1 hop), the consolidation
    plan (a dry run) as the page asks for it: first the summaries of episodes, then the whole.
Targets (issues 16 and 34): page load <= 300 ms, search <= 100 ms, health <= 100 ms and the
consolidation plan's first part <= 1 s at 10k memories (p95 reported, judged on p95). Writes ui.json and ui.md.
"""

from __future__ import annotations

import argparse
import json
import os
import random
import subprocess
import sys
import tempfile
import time
import urllib.parse
import urllib.request
from pathlib import Path
from typing import Any

import numpy as np

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
for p in (str(ROOT), str(BENCH)):
    if p not in sys.path:
        sys.path.insert(0, p)

from speed_bench import query_text, sentence, summary_ms, write_fill_export  # noqa: E402

TARGET_PAGE_MS = 300
TARGET_SEARCH_MS = 100
TARGET_HEALTH_MS = 100
TARGET_PLAN_MS = 1000
DISTINCT_VECTORS = 300
ASSETS = ("/", "/static/app.js", "/static/style.css", "/static/icon.svg", "/api/info", "/api/list?page=1", "/api/live")


class Ui:
    """One HOME + project with N memories, its daemon, and `engram ui` serving them."""

    def __init__(self, base: Path, models: Path) -> None:
        self.home, self.project = base / "home", base / "project"
        self.user_dir = self.home / ".claude" / "engram"
        (self.project / ".git").mkdir(parents=True)
        self.user_dir.mkdir(parents=True)
        (self.home / ".claude" / "engram.local.md").write_text(
            f"---\nembedding_cache_dir: {json.dumps(str(models))}\n---\nui bench\n", encoding="utf-8")
        env = {k: v for k, v in os.environ.items() if not k.startswith(("ENGRAM_", "CLAUDE"))}
        env.update(HOME=str(self.home), ENGRAM_HOME=str(self.user_dir), ENGRAM_PYTHON=sys.executable, PYTHONPATH=str(ROOT))
        self.env = env
        self.proc: subprocess.Popen | None = None
        self.base = self.cookie = self.token = ""

    def cli(self, *args: str) -> str:
        return subprocess.run([sys.executable, "-m", "engram_mcp.interfaces.cli", *args], cwd=self.project, env=self.env,
                              capture_output=True, text=True, check=True, timeout=1800).stdout

    def start(self) -> None:
        self.proc = subprocess.Popen([sys.executable, "-m", "engram_mcp.interfaces.cli", "ui", "--no-open"], cwd=self.project,
                                     env=self.env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True)
        assert self.proc.stdout is not None
        url = self.proc.stdout.readline().split(": ", 1)[1].strip()
        self.base, self.token = url.split("/?token=")
        with urllib.request.urlopen(f"{self.base}/?token={self.token}", timeout=120) as r:
            self.cookie = r.headers["Set-Cookie"].split(";", 1)[0]  # the session cookie, as the browser keeps it

    def get(self, path: str) -> tuple[float, bytes]:
        req = urllib.request.Request(self.base + path, headers={"Cookie": self.cookie, "X-Engram-UI": self.token})
        started = time.perf_counter()
        with urllib.request.urlopen(req, timeout=120) as r:
            body = r.read()
            if r.status != 200:
                raise RuntimeError(f"{path}: HTTP {r.status}")
        return time.perf_counter() - started, body

    def stop(self) -> None:
        if self.proc is not None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
        from engram_mcp.daemon.client import DaemonClient, socket_path

        try:
            DaemonClient(self.user_dir, autostart=False, timeout=30).call("shutdown")
        except Exception:
            pass
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and socket_path(self.user_dir).exists():
            time.sleep(0.1)


def run_size(n: int, embedder, base_vectors: np.ndarray, tmp: Path, repeats: int, rnd: random.Random) -> dict[str, Any]:
    ui = Ui(tmp / f"n{n}", tmp / "models")
    try:
        export = tmp / f"fill{n}.jsonl"
        write_fill_export(export, n, base_vectors, embedder.model_name, rnd, np.random.default_rng(n))
        t = time.perf_counter()
        ui.cli("import", str(export))
        fill_s = time.perf_counter() - t
        ui.start()
        for path in ASSETS:  # warm: the daemon has the store open and the index built
            ui.get(path)
        ui.get("/api/search?q=warm+up")  # and the model loaded (the daemon loads it on first use)
        page = []
        for _ in range(repeats):
            page.append(sum(ui.get(path)[0] for path in ASSETS))
        list_only = [ui.get("/api/list?page=1")[0] for _ in range(repeats)]
        deep = [ui.get(f"/api/list?page={rnd.randint(2, max(2, n // 25))}&limit=25")[0] for _ in range(repeats)]
        # A/B in one loop: the same query through the page's API, and straight to the daemon (what
        # the HTTP layer adds), alternating which goes first.
        from engram_mcp.daemon.client import DaemonClient

        search, direct, in_daemon = [], [], []
        with DaemonClient(ui.user_dir, autostart=False, timeout=120) as client:
            for i in range(repeats):
                text = query_text(rnd)
                for which in ((0, 1) if i % 2 else (1, 0)):
                    if which == 0:
                        took, body = ui.get(f"/api/search?q={urllib.parse.quote(text)}")
                        search.append(took)
                        in_daemon.append(json.loads(body)["query_time_ms"] / 1000.0)
                    else:
                        started = time.perf_counter()
                        client.call("recall", {"query": text, "limit": 20, "strengthen": False}, project_root=ui.project)
                        direct.append(time.perf_counter() - started)
        first = json.loads(ui.get("/api/list?page=1&limit=1")[1])["memories"][0]["id"]
        others = {}
        for name, path in (("memory", f"/api/memory/{first}"), ("health", "/api/health"), ("sessions", "/api/sessions"),
                           ("graph", "/api/graph?depth=1"), ("consolidation_first", "/api/consolidate?strategy=summarize"),
                           ("consolidation", "/api/consolidate")):
            ui.get(path)
            others[name] = summary_ms([ui.get(path)[0] for _ in range(max(3, repeats // 5))])
        return {
            "memories": n,
            "fill_s": round(fill_s, 1),
            "page_load_ms": summary_ms(page),
            "browse_api_ms": summary_ms(list_only),
            "browse_deep_page_ms": summary_ms(deep),
            "search_ms": summary_ms(search),
            "search_direct_daemon_ms": summary_ms(direct),
            "search_recall_in_daemon_ms": summary_ms(in_daemon),
            "other_pages_api_ms": others,
        }
    finally:
        ui.stop()


def markdown(res: dict[str, Any]) -> str:
    L = ["# engram ui at scale", "",
         f"HTTP on loopback with the session cookie; {res['repeats']} repetitions each; p50 / p95 in ms. "
         f"Targets (issues 16, 34): page load <= {TARGET_PAGE_MS} ms, search <= {TARGET_SEARCH_MS} ms, health <= {TARGET_HEALTH_MS} ms, "
         f"consolidation plan <= {TARGET_PLAN_MS} ms at 10k memories (judged on p95). "
         "Page load = HTML + app.js + style.css + icon + the browse page's /api/info, /api/list and first /api/live, fetched one after another. "
         "Health is warm: its near-duplicate figure is kept until the index changes.", "",
         "| memories | page load | search | browse API (page 1) | browse API (deep page) | memory | health | sessions | graph | plan, first part | plan, whole |",
         "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
    def cell(s: dict[str, Any]) -> str:
        return f"{s['p50']} / {s['p95']}"

    for r in res["sizes"]:
        o = r["other_pages_api_ms"]
        L.append(f"| {r['memories']:,} | {cell(r['page_load_ms'])} | {cell(r['search_ms'])} | {cell(r['browse_api_ms'])} | "
                 f"{cell(r['browse_deep_page_ms'])} | {cell(o['memory'])} | {cell(o['health'])} | {cell(o['sessions'])} | {cell(o['graph'])} | "
                 f"{cell(o['consolidation_first'])} | {cell(o['consolidation'])} |")
    L += ["", "Search, where the time goes (same queries, alternating): through the page's API / the same recall sent "
          "straight to the daemon with `DaemonClient` / the recall's own `query_time_ms` inside the daemon (p50 / p95):", ""]
    for r in res["sizes"]:
        L.append(f"- {r['memories']:,}: {cell(r['search_ms'])} / {cell(r['search_direct_daemon_ms'])} / "
                 f"{cell(r['search_recall_in_daemon_ms'])} ms")
    L.append("")
    for r in res["sizes"]:
        ok_page = r["page_load_ms"]["p95"] <= TARGET_PAGE_MS
        ok_search = r["search_ms"]["p95"] <= TARGET_SEARCH_MS
        health, plan = r["other_pages_api_ms"]["health"]["p95"], r["other_pages_api_ms"]["consolidation_first"]["p95"]
        whole = r["other_pages_api_ms"]["consolidation"]["p95"]
        L.append(f"- {r['memories']:,} memories: page load p95 {r['page_load_ms']['p95']} ms ({'meets' if ok_page else 'misses'} "
                 f"{TARGET_PAGE_MS}), search p95 {r['search_ms']['p95']} ms ({'meets' if ok_search else 'misses'} {TARGET_SEARCH_MS}), "
                 f"health p95 {health} ms ({'meets' if health <= TARGET_HEALTH_MS else 'misses'} {TARGET_HEALTH_MS}), "
                 f"consolidation plan shown progressively: first part p95 {plan} ms ({'meets' if plan <= TARGET_PLAN_MS else 'misses'} "
                 f"{TARGET_PLAN_MS}), whole plan p95 {whole} ms; "
                 f"filled in {r['fill_s']} s")
    L += ["", f"Load average at the start: {res['load_avg_start']} (other work on the machine makes these noisier, never faster).", ""]
    return "\n".join(L)


def run_ui(sizes: list[int], out_dir: Path | None, *, repeats: int = 30, seed: int = 16) -> dict[str, Any]:
    from engram_mcp.index.embeddings import DEFAULT_MODEL, make_embedder

    rnd = random.Random(seed)
    tmp = Path(tempfile.mkdtemp(prefix="engram-ui-bench-"))
    try:
        embedder = make_embedder(DEFAULT_MODEL, cache_dir=str(tmp / "models"))
        base_vectors = embedder.embed_documents([sentence(rnd) for _ in range(DISTINCT_VECTORS)]).astype(np.float32)
        res: dict[str, Any] = {"repeats": repeats, "load_avg_start": [round(x, 2) for x in os.getloadavg()], "sizes": []}
        for n in sizes:
            print(f"[ui] {n} memories", flush=True)
            res["sizes"].append(run_size(n, embedder, base_vectors, tmp, repeats, rnd))
            print(json.dumps(res["sizes"][-1]), flush=True)
        res["targets"] = {"page_load_p95_ms": TARGET_PAGE_MS, "search_p95_ms": TARGET_SEARCH_MS,
                          "health_p95_ms": TARGET_HEALTH_MS, "consolidation_plan_p95_ms": TARGET_PLAN_MS}
        if out_dir is not None:
            out_dir.mkdir(parents=True, exist_ok=True)
            (out_dir / "ui.json").write_text(json.dumps(res, indent=2) + "\n", encoding="utf-8")
            (out_dir / "ui.md").write_text(markdown(res), encoding="utf-8")
        return res
    finally:
        import shutil

        shutil.rmtree(tmp, ignore_errors=True)


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", type=int, nargs="+", default=[1000, 10000])
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--out", type=Path, default=ROOT / "bench" / "results" / "ui")
    a = ap.parse_args(argv)
    res = run_ui(a.sizes, a.out, repeats=a.repeats)
    print(markdown(res))
    return 0


if __name__ == "__main__":
    sys.exit(main())
