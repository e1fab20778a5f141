#!/usr/bin/env python3
"""Store-time dedup precision: does a near-duplicate that changes one fact stay apart, and does
a true duplicate still merge? (issues 32 item 4, 33 item 5)

    .venv/bin/python bench/dedup_bench.py [--out DIR] [--code DIR] [--no-devset]

Two sets, both stored through `MemoryService.store` (dedup on, default threshold, real model):

* **Generated pairs** (`generate_pairs`, seeded, no model involved): templates over several
  domains (services and ports, clusters and hosts, releases and versions, tickets, owners,
  tools of several families, timeouts, limits, regions, branches, paths, env vars). Each pair
  is an older text and a newer one, stored in that order into a fresh project:
  - `value`: the same sentence with one value changed (port 8443 -> 9443, colima -> orbstack);
  - `correction`: the newer text says it replaces the value ("(was A)", "instead of A",
    "now", "switched from A", "replacing A");
  - `distinct`: another item that reads alike ("Fact 7 ... OPS-1007" / "Fact 97 ... OPS-1097");
  - `paraphrase`: the same facts reworded (must merge).
  A merge of a `value`, `correction` or `distinct` pair is a false merge (the older text is kept
  and the newer fact lost). Reported over all pairs and over the pairs "at risk" (cosine >= the
  dedup threshold: below it no design merges). Also: the share of value/correction pairs where
  the newer memory supersedes the older, and of distinct pairs wrongly superseded.
* **The coding-memory dev set's near-duplicate groups** (`coding_memory_bench.measure_dedup`):
  groups and members merged, and wrong merges of distinct facts.

`--code DIR` imports engram from another checkout (the "before" figures were measured with
`--code /tmp/engram-base`, the commit before this change, and are kept in
bench/dedup_baseline.json for the report). Writes dedup.json and dedup.md. ~1-2 min.
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
SEED = 3233
BASELINE = BENCH / "dedup_baseline.json"
PAIR_KINDS = ("value", "correction", "distinct", "paraphrase")

# ------------------------------------------------------------------------------------ the pairs
# Each subject: a sentence with one {v} slot, a second wording of it (for paraphrases) and the
# pool its value is drawn from. Values of one pool are interchangeable in the sentence.
POOLS: dict[str, list[str]] = {
    "port": ["8443", "9443", "5432", "6432", "6379", "6380", "3000", "3001", "8080", "8081", "9090", "9091"],
    "duration": ["15 minutes", "30 minutes", "45 minutes", "2 hours", "90 seconds", "10 seconds", "6 hours"],
    "version": ["4.2.0", "4.6.0", "1.19.3", "1.21.0", "3.11", "3.12", "16.4", "17.1", "2.8.1", "2.9.0"],
    "ticket": ["OPS-1007", "OPS-1097", "INFRA-221", "INFRA-212", "SEC-88", "SEC-808", "PAY-4410", "PAY-4401"],
    "host": ["nomad-stg-2", "nomad-stg-3", "db-eu-1", "db-eu-2", "build-07", "build-11", "k8s-prod-a", "k8s-prod-b"],
    "person": ["Priya", "Marcus", "Dana", "Tomasz", "Aiko", "Lena", "Ravi", "Sofia", "Jonas", "Amara"],
    "container": ["colima", "orbstack", "podman", "lima"],
    "secrets": ["doppler", "infisical", "vault", "sops", "chamber"],
    "package": ["pnpm", "yarn", "npm", "bun"],
    "ci": ["buildkite", "circleci", "drone", "woodpecker", "jenkins"],
    "database": ["postgres", "mysql", "cockroachdb", "mariadb"],
    "region": ["eu-west-1", "eu-central-1", "us-east-2", "ap-southeast-1"],
    "branch": ["main", "trunk", "develop", "release-candidate"],
    "path": ["/var/lib/app/cache", "/srv/app/cache", "/mnt/data/cache", "/tmp/app-cache"],
    "envvar": ["API_BASE_URL", "API_ROOT_URL", "SERVICE_URL", "BACKEND_URL"],
    "limit": ["50", "100", "250", "20", "500"],
    "percent": ["80%", "90%", "65%", "95%"],
    "jdk": ["17", "21", "11"],
    "node": ["18", "20", "22"],
    "memory": ["4 GB", "8 GB", "16 GB"],
    "weekday": ["Monday", "Tuesday", "Thursday", "Friday"],
    "clock": ["09:30", "14:00", "16:30"],
    "lead": ["Nadia", "Oskar", "Wei", "Fatima", "Kenji"],
    "queue": ["rabbitmq", "kafka", "nats", "sqs"],
    "orm": ["sqlalchemy", "prisma", "drizzle", "typeorm"],
    "linter": ["eslint", "biome", "oxlint"],
    "url": ["https://grafana.internal/d/abc", "https://grafana.internal/d/xyz", "https://grafana.internal/d/k8s"],
    "bucket": ["s3://acme-logs-prod", "s3://acme-logs-archive", "s3://acme-logs-cold"],
    "replicas": ["3", "5", "7"],
    "flag": ["ENABLE_NEW_CHECKOUT", "ENABLE_FAST_CHECKOUT", "CHECKOUT_V2"],
    "cron": ["0 3 * * *", "30 2 * * *", "15 4 * * 1"],
}
SUBJECTS: list[tuple[str, str, str]] = [  # (pool, sentence, a rewording of it)
    ("port", "The payments API gateway listens on port {v}.", "Port {v} is where the payments API gateway listens."),
    ("port", "The metrics exporter serves on port {v} inside the cluster.", "Inside the cluster the metrics exporter serves on port {v}."),
    ("port", "Local Redis for the worker runs on port {v}.", "The worker's local Redis runs on port {v}."),
    ("duration", "Session tokens expire after {v}.", "After {v} a session token expires."),
    ("duration", "The nightly backup job times out after {v}.", "After {v} the nightly backup job times out."),
    ("duration", "The Redis cache entries are refreshed every {v}.", "Every {v} the Redis cache entries are refreshed."),
    ("version", "The mobile app pins the payments SDK to {v}.", "The payments SDK is pinned to {v} in the mobile app."),
    ("version", "CI builds the backend with Go {v}.", "The backend is built in CI with Go {v}."),
    ("version", "Production runs Postgres {v}.", "Postgres {v} is what production runs."),
    ("ticket", "The flaky checkout test is tracked in {v}.", "{v} tracks the flaky checkout test."),
    ("ticket", "The disk-pressure alert on the ingest nodes is tracked in {v}.", "{v} tracks the disk-pressure alert on the ingest nodes."),
    ("host", "The staging cluster is {v}; deploy previews there.", "Deploy previews to the staging cluster, {v}."),
    ("host", "Release builds run on the {v} runner.", "The {v} runner is where release builds run."),
    ("person", "{v} owns the billing service on-call rotation.", "The billing service on-call rotation is owned by {v}."),
    ("person", "Schema changes need a review from {v} before merging.", "Before merging, schema changes need {v}'s review."),
    ("container", "We run local containers with {v} on macOS.", "On macOS, local containers run with {v}."),
    ("secrets", "Secrets for all services are managed in {v}.", "All services get their secrets from {v}."),
    ("package", "Install JS dependencies with {v} in this repo.", "In this repo, JS dependencies are installed with {v}."),
    ("ci", "The monorepo's CI pipelines run on {v}.", "CI pipelines for the monorepo run on {v}."),
    ("database", "The analytics service stores events in {v}.", "Events of the analytics service are stored in {v}."),
    ("region", "The primary S3 bucket lives in {v}.", "The primary S3 bucket is in region {v}."),
    ("branch", "Feature branches are cut from {v} and merged back by squash.", "Cut feature branches from {v}; merge them back by squash."),
    ("path", "The image service writes its cache to {v}.", "Its cache is written by the image service to {v}."),
    ("envvar", "The frontend reads the backend address from {v}.", "The backend address comes to the frontend from {v}."),
    ("limit", "The public search API is rate limited to {v} requests per second per key.", "Per key, the public search API allows {v} requests per second."),
    ("percent", "The disk alert fires when the data volume is {v} full.", "When the data volume is {v} full, the disk alert fires."),
    # a second batch, written after the rule was first built (longer sentences, other styles)
    ("jdk", "Android builds need JDK {v}; Gradle fails with a cryptic error otherwise.", "Gradle fails with a cryptic error unless Android builds use JDK {v}."),
    ("node", "Use Node {v} locally to match the Lambda runtime.", "Locally, use Node {v} so it matches the Lambda runtime."),
    ("memory", "The CI runner for integration tests has {v} of RAM, so keep fixtures small.", "Keep fixtures small: the integration-test CI runner has {v} of RAM."),
    ("weekday", "Production deploys are frozen every {v} afternoon for the release review.", "Every {v} afternoon production deploys are frozen for the release review."),
    ("clock", "The daily standup starts at {v} in the big room.", "In the big room, the daily standup starts at {v}."),
    ("lead", "Ask {v} before touching the payments reconciliation job.", "Before touching the payments reconciliation job, ask {v}."),
    ("queue", "Order events go through {v} to the fulfilment workers.", "The fulfilment workers get order events through {v}."),
    ("orm", "The API talks to the database through {v}; raw SQL only in migrations.", "Raw SQL only in migrations; otherwise the API uses {v} to talk to the database."),
    ("linter", "The frontend is linted with {v} in the pre-commit hook.", "In the pre-commit hook, the frontend is linted with {v}."),
    ("url", "The latency dashboard is at {v}.", "You can find the latency dashboard at {v}."),
    ("bucket", "Application logs are archived to {v} after 14 days.", "After 14 days, application logs are archived to {v}."),
    ("replicas", "The search API runs {v} replicas in production.", "In production the search API runs {v} replicas."),
    ("flag", "The new checkout is behind the {v} feature flag.", "The {v} feature flag guards the new checkout."),
    ("cron", "The cleanup job is scheduled with cron '{v}'.", "Cron '{v}' schedules the cleanup job."),
]
CORRECTIONS = (  # how a newer text says it replaces the older value (generic, any sentence)
    lambda s, a: f"{s[:-1]} (was {a}).",
    lambda s, a: f"{s[:-1]} instead of {a}.",
    lambda s, a: f"{s[:-1]} now, replacing {a}.",
    lambda s, a: f"We switched from {a}: {s}",
    lambda s, a: f"Update: {s[:-1]}, no longer {a}.",
    lambda s, a: f"{s[:-1]} now (it used to be {a}).",
    lambda s, a: f"Heads up: {s[:-1]}, not {a} any more.",
)
DISTINCT_VERBS = ("is monitored by the on-call rota", "depends on the shared Redis cache", "is owned by the platform team",
                  "is covered by the weekly restore test", "is documented in the ops handbook")


def _two(rng: random.Random, pool: str) -> tuple[str, str]:
    a, b = rng.sample(POOLS[pool], 2)
    return a, b


def _fill(template: str, v: str) -> str:
    out = template.replace("{v}", v)
    return out[0].upper() + out[1:]


def generate_pairs(seed: int = SEED) -> list[dict[str, str]]:
    """The pair set: for every subject, value and correction pairs over several value draws,
    paraphrase pairs, and distinct-item pairs; deterministic for a seed."""
    rng = random.Random(seed)
    pairs: list[dict[str, str]] = []
    for i, (pool, sentence, reworded) in enumerate(SUBJECTS):
        for _ in range(2):
            a, b = _two(rng, pool)
            pairs.append({"kind": "value", "pool": pool, "old": _fill(sentence, a), "new": _fill(sentence, b)})
        for _ in range(2):
            a, b = _two(rng, pool)
            fix = CORRECTIONS[rng.randrange(len(CORRECTIONS))]
            pairs.append({"kind": "correction", "pool": pool, "old": _fill(sentence, a), "new": fix(_fill(sentence, b), a)})
        a = rng.choice(POOLS[pool])
        pairs.append({"kind": "paraphrase", "pool": pool, "old": _fill(sentence, a), "new": _fill(reworded, a)})
        lead = rng.choice(["Note: ", "FYI, ", "Remember: ", ""])
        pairs.append({"kind": "paraphrase", "pool": pool, "old": _fill(sentence, a), "new": lead + _fill(sentence, a)[:-1] + " (confirmed)."})
        n = rng.randrange(2, 60)
        m = n * 10 + rng.randrange(1, 9)  # 7 -> 7x: the label reads alike
        prefix = rng.choice(["OPS", "INFRA", "SEC", "DATA"])
        t1, t2 = f"{prefix}-{1000 + n}", f"{prefix}-{1000 + m}"
        verb_a, verb_b = rng.sample(DISTINCT_VERBS, 2) if i % 2 else (DISTINCT_VERBS[i % 5],) * 2
        item = rng.choice(["Redis cache", "ingest queue", "search index", "billing ledger", "CDN origin"])
        label = rng.choice(["Fact", "Runbook", "Item", "Check"])
        if i % 3 == 2:  # no label: two records told apart by their identifiers only
            pairs.append({"kind": "distinct", "pool": "item", "old": f"The {item} alert {t1} {verb_a}; runbook RB-{n}.",
                          "new": f"The {item} alert {t2} {verb_b}; runbook RB-{m}."})
        else:
            pairs.append({"kind": "distinct", "pool": "item", "old": f"{label} {n}: the {item} {verb_a}; see {t1} for details.",
                          "new": f"{label} {m}: the {item} {verb_b}; see {t2} for details."})
    return pairs


# ------------------------------------------------------------------------------------ the measure
def measure_pairs(base: Path, pairs: list[dict[str, str]]) -> dict[str, Any]:
    """Store each pair (older, then newer) into its own fresh project; record what store did."""
    from engram_mcp.services.service import MemoryService, RequestContext

    svc = MemoryService(home=base / "pairs-home")
    threshold = None
    rows = []
    try:
        for n, p in enumerate(pairs):
            root = base / "pairs" / f"p{n:04d}"
            (root / ".git").mkdir(parents=True, exist_ok=True)
            ctx = RequestContext(root, None)
            if threshold is None:
                threshold = svc.access.config(root).store_dedup_similarity
            va, _ = svc.access.embed_query(p["old"])
            vb, _ = svc.access.embed_query(p["new"])
            old = svc.store(ctx, content=p["old"], type="semantic", scope="project")
            new = svc.store(ctx, content=p["new"], type="semantic", scope="project")
            superseded = new.get("supersedes") == old["memory_id"]
            rows.append({**p, "cosine": round(float(va @ vb), 4), "action": new["action"], "superseded": superseded,
                         "hint": (new.get("possibly_supersedes") or {}).get("memory_id") == old["memory_id"]})
    finally:
        svc.close()
    return {"threshold": threshold, "rows": rows, "summary": summarise(rows, threshold or 0.85)}


def _rate(num: int, den: int) -> float | None:
    return round(num / den, 4) if den else None


def summarise(rows: list[dict[str, Any]], threshold: float) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for kind in PAIR_KINDS:
        mine = [r for r in rows if r["kind"] == kind]
        risk = [r for r in mine if r["cosine"] >= threshold]
        merged = sum(r["action"] == "merged" for r in mine)
        merged_risk = sum(r["action"] == "merged" for r in risk)
        sup = sum(r["superseded"] for r in mine)
        out[kind] = {"n": len(mine), "at_risk": len(risk), "merged": merged, "merged_at_risk": merged_risk,
                     "superseded": sup, "hinted": sum(r["hint"] for r in mine)}
    changed = [r for r in rows if r["kind"] != "paraphrase"]
    changed_risk = [r for r in changed if r["cosine"] >= threshold]
    para = [r for r in rows if r["kind"] == "paraphrase"]
    para_risk = [r for r in para if r["cosine"] >= threshold]
    fixes = [r for r in rows if r["kind"] in ("value", "correction") and r["cosine"] >= threshold]
    distinct_risk = [r for r in rows if r["kind"] == "distinct" and r["cosine"] >= threshold]
    out["headline"] = {
        "one_fact_pairs": len(changed),
        "one_fact_pairs_at_risk": len(changed_risk),
        "false_merge_rate": _rate(sum(r["action"] == "merged" for r in changed), len(changed)),
        "false_merge_rate_at_risk": _rate(sum(r["action"] == "merged" for r in changed_risk), len(changed_risk)),
        "supersede_rate_of_changed_values_at_risk": _rate(sum(r["superseded"] for r in fixes), len(fixes)),
        "wrong_supersede_rate_of_distinct_items_at_risk": _rate(sum(r["superseded"] for r in distinct_risk), len(distinct_risk)),
        "paraphrase_pairs": len(para),
        "paraphrase_pairs_at_risk": len(para_risk),
        "paraphrase_merge_recall_at_risk": _rate(sum(r["action"] == "merged" for r in para_risk), len(para_risk)),
    }
    return out


def measure_devset(base: Path) -> dict[str, Any]:
    """The coding-memory dev set's near-duplicate groups through the coding bench's own measure."""
    import coding_memory_bench as cmb

    data = cmb.DEFAULT_DATA
    memories = cmb.read_jsonl(Path(data) / "memories.jsonl")
    groups = cmb.near_duplicate_groups(Path(data) / "README.md")
    res = cmb.measure_dedup(base, memories, groups)
    res["member_pairs"] = sum(len(g) - 1 for g in groups)
    res["merge_recall_members"] = _rate(res["members_merged"], res["member_pairs"])
    res.pop("wrong_pairs", None)
    return res


# ------------------------------------------------------------------------------------ report
def _f(x: Any) -> str:
    return "-" if x is None else (f"{x:.3f}" if isinstance(x, float) else str(x))


def markdown(result: dict[str, Any], baseline: dict[str, Any] | None) -> str:
    h = result["pairs"]["summary"]["headline"]
    b = (baseline or {}).get("pairs", {}).get("summary", {}).get("headline", {})
    lines = [
        "# Store-time dedup: changed facts kept apart, duplicates merged",
        "",
        f"Before: engram at {(baseline or {}).get('commit', '?')[:10]} (bench/dedup_baseline.json); after: this run.",
        "",
        f"Pairs: {h['one_fact_pairs']} that change one fact ({h['one_fact_pairs_at_risk']} at cosine >= "
        f"{result['pairs']['threshold']}), {h['paraphrase_pairs']} paraphrases ({h['paraphrase_pairs_at_risk']} at risk); "
        f"seed {SEED}, real model.",
        "",
        "| measure | before | after |",
        "|---|---|---|",
    ]
    for key, label in (
        ("false_merge_rate", "false merges, pairs that change one fact (all)"),
        ("false_merge_rate_at_risk", "false merges, pairs that change one fact (at risk)"),
        ("supersede_rate_of_changed_values_at_risk", "changed value / correction stored as a supersession (at risk)"),
        ("wrong_supersede_rate_of_distinct_items_at_risk", "distinct items wrongly superseded (at risk)"),
        ("paraphrase_merge_recall_at_risk", "paraphrases merged (at risk)"),
    ):
        lines.append(f"| {label} | {_f(b.get(key))} | {_f(h.get(key))} |")
    dev, bdev = result.get("devset"), (baseline or {}).get("devset")
    if dev:
        lines.append(f"| dev set near-duplicate groups merged (of {dev['groups']}) | {_f((bdev or {}).get('groups_merged'))} | "
                     f"{_f(dev['groups_merged'])} |")
        lines.append(f"| dev set members merged (of {dev['member_pairs']}) | {_f((bdev or {}).get('members_merged'))} | "
                     f"{_f(dev['members_merged'])} |")
        lines.append(f"| dev set wrong merges | {_f((bdev or {}).get('wrong_merges'))} | {_f(dev['wrong_merges'])} |")
    lines += ["", "| kind | n | at risk | merged | merged at risk | superseded | hinted |", "|---|---|---|---|---|---|---|"]
    for kind in PAIR_KINDS:
        k = result["pairs"]["summary"][kind]
        lines.append(f"| {kind} | {k['n']} | {k['at_risk']} | {k['merged']} | {k['merged_at_risk']} | {k['superseded']} | {k['hinted']} |")
    misses = [r for r in result["pairs"]["rows"] if r["cosine"] >= result["pairs"]["threshold"]
              and ((r["kind"] == "paraphrase") != (r["action"] == "merged"))]
    if misses:
        lines += ["", "Pairs at risk decided wrongly (a changed fact merged, or a paraphrase kept apart):", ""]
        lines += [f"- {r['kind']} ({r['cosine']}): {r['old']!r} -> {r['new']!r}: {r['action']}" for r in misses[:15]]
    return "\n".join(lines) + "\n"


def run(out: Path, *, devset: bool = True) -> dict[str, Any]:
    out.mkdir(parents=True, exist_ok=True)
    t0 = time.perf_counter()
    with tempfile.TemporaryDirectory(prefix="engram-dedup-") as tmp:
        result: dict[str, Any] = {"seed": SEED, "pairs": measure_pairs(Path(tmp), generate_pairs())}
        if devset:
            result["devset"] = measure_devset(Path(tmp) / "devset")
    result["wall_s"] = round(time.perf_counter() - t0, 1)
    baseline = json.loads(BASELINE.read_text(encoding="utf-8")) if BASELINE.exists() else None
    (out / "dedup.json").write_text(json.dumps({**result, "baseline": baseline}, indent=2) + "\n", encoding="utf-8")
    (out / "dedup.md").write_text(markdown(result, baseline), encoding="utf-8")
    return result


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out", type=Path, default=None, help="result directory (default bench/results/dedup-<UTC>)")
    ap.add_argument("--code", type=Path, default=ROOT, help="the engram checkout to measure (default: this one)")
    ap.add_argument("--no-devset", action="store_true", help="skip the coding-memory dev set's groups")
    ap.add_argument("--write-baseline", action="store_true", help=f"also write the result to {BASELINE.name}")
    a = ap.parse_args(argv)
    for p in (str(BENCH), str(a.code.resolve())):
        if p in sys.path:
            sys.path.remove(p)
        sys.path.insert(0, p)
    import engram_mcp  # now, before common.py (imported by the coding bench) puts this checkout first

    print(f"measuring engram from {Path(engram_mcp.__file__).parent}", flush=True)
    from datetime import datetime, timezone

    out = a.out or BENCH / "results" / ("dedup-" + datetime.now(timezone.utc).strftime("%Y%m%dT%H%M%SZ"))
    result = run(out, devset=not a.no_devset)
    if a.write_baseline:
        import subprocess

        commit = subprocess.run(["git", "-C", str(a.code), "rev-parse", "HEAD"], capture_output=True, text=True).stdout.strip()
        BASELINE.write_text(json.dumps({"code": str(a.code), "commit": commit, **result}, indent=2) + "\n", encoding="utf-8")
    print((out / "dedup.md").read_text(encoding="utf-8"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
