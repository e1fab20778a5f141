#!/usr/bin/env python3
"""Secret detection: engram's redactor beside established detectors, on the project's corpora.

    .venv/bin/python bench/secrets_bench.py [--out DIR] [--gitleaks-config PATH]

Measured for each detector (issue 12 asked whether an established scanner should be the base):
  * recall on tests/data/secrets_corpus.jsonl: a secret counts as caught when neither it nor
    any 12+ character piece of it is left in the text once the detector's findings are removed
    (the criterion of tests/test_redaction.py), overall and per kind;
  * false positives on tests/data/not_secrets.jsonl: texts in which the detector finds anything;
  * speed: CPU milliseconds per KB of a 20 KB mixed tool output (median of 7), and the import
    cost (a hook process pays it on every call).

Detectors:
  engram                  engram_mcp.core.redaction.sanitize, what every write path uses
  detect-secrets          Yelp's detect-secrets (PyPI), default plugins and filters, file scan
  gitleaks-rules          gitleaks' default rule set read as data (its config/gitleaks.toml, MIT),
                          the regexes compiled with Python's re, keywords, entropy and allowlists
                          applied; only with --gitleaks-config (TOML, or the same structure as
                          JSON; the rules are not shipped)
  engram+detect-secrets   engram first, then what detect-secrets still finds is removed too
  engram+gitleaks-rules   the same with gitleaks' rules (with --gitleaks-config)

Writes secrets.json and secrets.md into --out (default bench/results/secrets-<UTC>).
"""

from __future__ import annotations

import argparse
import json
import math
import re
import sys
import tempfile
import time
from collections import Counter
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, Callable

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

DATA = ROOT / "tests" / "data"
LABEL = "[REDACTED]"
PIECE_MIN_CHARS = 12
SPEED_TEXT_CHARS = 20_000
SPEED_REPEATS = 7

Detector = Callable[[str], str]  # text -> text with what the detector found removed


def load(name: str) -> list[dict[str, Any]]:
    return [json.loads(line) for line in (DATA / name).read_text(encoding="utf-8").splitlines() if line.strip()]


def pieces(secret: str) -> list[str]:
    return [p for p in re.split(r"\s+|\\n", secret) if len(p) >= PIECE_MIN_CHARS]


def caught(secret: str, out: str) -> bool:
    return secret not in out and not any(p in out for p in pieces(secret))


def remove(text: str, values: list[str]) -> str:
    """``text`` with every occurrence of each found value replaced (longest first)."""
    for v in sorted({v for v in values if v}, key=len, reverse=True):
        text = text.replace(v, LABEL)
    return text


# ------------------------------------------------------------------------------------ detectors
def engram_detector() -> tuple[Detector, float]:
    t0 = time.perf_counter()
    from engram_mcp.core.redaction import sanitize

    return (lambda text: sanitize(text).text), time.perf_counter() - t0


def detect_secrets_detector() -> tuple[Detector | None, float, str]:
    """detect-secrets' default plugins and filters, run the way its CLI scans a file."""
    t0 = time.perf_counter()
    try:
        from detect_secrets import SecretsCollection
        from detect_secrets.settings import default_settings
    except ImportError as exc:
        return None, 0.0, f"not installed ({exc})"
    import_s = time.perf_counter() - t0
    tmp = Path(tempfile.mkdtemp(prefix="ds-bench-"))

    def run(text: str) -> str:
        path = tmp / "sample.txt"
        path.write_text(text, encoding="utf-8")
        with default_settings():
            collection = SecretsCollection()
            collection.scan_file(str(path))
        values = [s.secret_value for secrets in collection.data.values() for s in secrets if s.secret_value]
        return remove(text, values)

    import detect_secrets

    version = getattr(detect_secrets, "__version__", None)
    if version is None:
        from importlib.metadata import version as dist_version

        version = dist_version("detect-secrets")
    return run, import_s, version


def _go_to_python(pattern: str) -> tuple[str, int]:
    """Go RE2 syntax to Python's: `\\z` is `\\Z`; an inline `(?i)` that is not at the start is
    not allowed in Python, so it is dropped and the whole pattern is made case-insensitive
    (a slight over-match, counted against gitleaks' false positives, never its recall)."""
    flags = 0
    pattern = pattern.replace(r"\z", r"\Z")
    if pattern.startswith("(?i)"):
        flags |= re.IGNORECASE
        pattern = pattern[4:]
    if "(?i)" in pattern:
        flags |= re.IGNORECASE
        pattern = pattern.replace("(?i)", "")
    return pattern, flags


def _shannon(value: str) -> float:
    n = len(value)
    return -sum(c / n * math.log2(c / n) for c in Counter(value).values()) if n else 0.0


def gitleaks_detector(config: Path) -> tuple[Detector, float, dict[str, Any]]:
    """gitleaks' rules as data: keyword prefilter, regex, secret group, entropy, allowlists."""
    import tomllib

    t0 = time.perf_counter()
    text = config.read_text(encoding="utf-8")
    cfg = json.loads(text) if config.suffix == ".json" else tomllib.loads(text)  # the same structure either way
    glob = cfg.get("allowlist") or {}
    global_allow = [re.compile(*_go_to_python(r)) for r in glob.get("regexes", [])]
    global_stop = [s.lower() for s in glob.get("stopwords", [])]
    rules = []
    skipped: list[str] = []
    for rule in cfg.get("rules", []):
        if "regex" not in rule or "path" in rule:
            continue  # path-only rules, or rules limited to some file names
        try:
            rx = re.compile(*_go_to_python(rule["regex"]))
            allows = []
            for al in rule.get("allowlists", []):
                if al.get("paths") and al.get("condition") == "AND":
                    continue  # bound to file paths
                allows.append((al.get("regexTarget", "secret"), [re.compile(*_go_to_python(r)) for r in al.get("regexes", [])],
                               [s.lower() for s in al.get("stopwords", [])]))
        except re.error as exc:
            skipped.append(f"{rule.get('id')}: {exc}")
            continue
        rules.append((rule.get("id"), rx, [k.lower() for k in rule.get("keywords", [])], float(rule.get("entropy") or 0), allows))
    load_s = time.perf_counter() - t0

    def allowed(target: str, secret: str, match: str, line: str, allows) -> bool:
        for where, regexes, stops in allows:
            subject = {"match": match, "line": line}.get(where, secret)
            if any(r.search(subject) for r in regexes) or any(s in secret.lower() for s in stops):
                return True
        return False

    def run(text: str) -> str:
        low = text.lower()
        values = []
        for _rid, rx, keywords, entropy, allows in rules:
            if keywords and not any(k in low for k in keywords):
                continue
            for m in rx.finditer(text):
                groups = [g for g in m.groups() if g]
                secret = groups[0] if groups else m.group(0)
                if entropy and _shannon(secret) < entropy:
                    continue
                if any(r.search(secret) for r in global_allow) or any(s in secret.lower() for s in global_stop):
                    continue
                line_start = text.rfind("\n", 0, m.start()) + 1
                line_end = text.find("\n", m.end())
                line = text[line_start: line_end if line_end != -1 else len(text)]
                if allowed("secret", secret, m.group(0), line, allows):
                    continue
                values.append(secret)
        return remove(text, values)

    info = {"rules": len(rules), "skipped": skipped, "source": str(config), "load_s": round(load_s, 3)}
    return run, load_s, info


def chain(first: Detector, second: Detector) -> Detector:
    return lambda text: second(first(text))


# ------------------------------------------------------------------------------------ measure
def speed_text() -> str:
    corpus = load("secrets_corpus.jsonl")
    negatives = load("not_secrets.jsonl")
    code = (ROOT / "engram_mcp" / "services" / "service.py").read_text(encoding="utf-8")
    mix = "\n".join([code[:8000]] + [e["context"] for e in corpus[::3]] + [n["text"] for n in negatives])
    return (mix * (SPEED_TEXT_CHARS // len(mix) + 1))[:SPEED_TEXT_CHARS]


def measure(name: str, detect: Detector, import_s: float) -> dict[str, Any]:
    corpus = load("secrets_corpus.jsonl")
    negatives = load("not_secrets.jsonl")
    per_kind: dict[str, list[int]] = {}
    missed = []
    for i, e in enumerate(corpus):
        ok = caught(e["secret"], detect(e["context"]))
        per_kind.setdefault(e["kind"], [0, 0])
        per_kind[e["kind"]][0] += ok
        per_kind[e["kind"]][1] += 1
        if not ok:
            missed.append({"line": i + 1, "kind": e["kind"], "context": e["context"][:120]})
    fps = [n["text"][:120] for n in negatives if detect(n["text"]) != n["text"]]
    text = speed_text()
    detect(text)
    times = []
    for _ in range(SPEED_REPEATS):  # CPU time: on a shared machine wall time mostly measures the neighbours
        t0 = time.process_time()
        detect(text)
        times.append(time.process_time() - t0)
    times.sort()
    ms_per_kb = times[len(times) // 2] * 1000 / (len(text) / 1024)
    hit = sum(v[0] for v in per_kind.values())
    return {
        "detector": name, "secrets": len(corpus), "caught": hit, "recall": round(hit / len(corpus), 4),
        "negatives": len(negatives), "false_positives": len(fps), "fp_rate": round(len(fps) / len(negatives), 4),
        "ms_per_kb": round(ms_per_kb, 3), "import_ms": round(import_s * 1000, 1),
        "per_kind": {k: {"caught": v[0], "of": v[1]} for k, v in sorted(per_kind.items())},
        "missed": missed, "false_positive_texts": fps,
    }


def markdown(results: list[dict[str, Any]], notes: list[str]) -> str:
    lines = ["# Secret detection", "",
             "Recall on `tests/data/secrets_corpus.jsonl`, false positives on `tests/data/not_secrets.jsonl`, "
             "median CPU time on a 20 KB mixed text dense with secrets (`bench/secrets_bench.py`).", "",
             "| detector | caught | recall | false positives | ms / KB | import ms |",
             "|---|---:|---:|---:|---:|---:|"]
    for r in results:
        lines.append(f"| {r['detector']} | {r['caught']} / {r['secrets']} | {r['recall']:.1%} | "
                     f"{r['false_positives']} / {r['negatives']} | {r['ms_per_kb']:.3f} | {r['import_ms']:.0f} |")
    kinds = sorted({k for r in results for k in r["per_kind"]})
    lines += ["", "## Recall per kind", "", "| kind | " + " | ".join(r["detector"] for r in results) + " |",
              "|---|" + "---:|" * len(results)]
    for k in kinds:
        cells = []
        for r in results:
            v = r["per_kind"].get(k)
            cells.append(f"{v['caught']}/{v['of']}" if v else "-")
        lines.append(f"| {k} | " + " | ".join(cells) + " |")
    for r in results:
        if r["false_positive_texts"]:
            lines += ["", f"False positives of {r['detector']}:", ""]
            lines += [f"- `{t[:100]!r}`" for t in r["false_positive_texts"][:12]]
    if notes:
        lines += ["", "## Notes", ""] + [f"- {n}" for n in notes]
    return "\n".join(lines) + "\n"


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", type=Path, default=None)
    ap.add_argument("--gitleaks-config", type=Path, default=None,
                    help="gitleaks' config/gitleaks.toml, to measure its rules (not shipped with engram)")
    ap.add_argument("--quick", action="store_true", help="accepted for run_all; the bench is already quick")
    a = ap.parse_args(argv)
    out = a.out or ROOT / "bench" / "results" / f"secrets-{datetime.now(timezone.utc).strftime('%Y%m%dT%H%M%SZ')}"
    out.mkdir(parents=True, exist_ok=True)
    notes: list[str] = []
    results = []
    engram, engram_import = engram_detector()
    results.append(measure("engram", engram, engram_import))
    ds, ds_import, ds_version = detect_secrets_detector()
    if ds is None:
        notes.append(f"detect-secrets: {ds_version}; `pip install -e '.[bench]'` installs it")
    else:
        notes.append(f"detect-secrets {ds_version}: default plugins and filters, one file scan per text")
        results.append(measure("detect-secrets", ds, ds_import))
        results.append(measure("engram+detect-secrets", chain(engram, ds), engram_import + ds_import))
    if a.gitleaks_config:
        gl, gl_load, info = gitleaks_detector(a.gitleaks_config)
        notes.append(f"gitleaks rules: {info['rules']} rules from {info['source']}, "
                     f"{len(info['skipped'])} not compilable by Python's re")
        results.append(measure("gitleaks-rules", gl, gl_load))
        results.append(measure("engram+gitleaks-rules", chain(engram, gl), engram_import + gl_load))
    else:
        notes.append("gitleaks rules: not measured in this run (pass --gitleaks-config PATH to gitleaks' config/gitleaks.toml)")
    (out / "secrets.json").write_text(json.dumps({"results": results, "notes": notes}, indent=2) + "\n")
    (out / "secrets.md").write_text(markdown(results, notes))
    for r in results:
        print(f"{r['detector']:24s} recall {r['caught']:3d}/{r['secrets']} ({r['recall']:.1%})  "
              f"false positives {r['false_positives']}/{r['negatives']}  {r['ms_per_kb']:.3f} ms/KB  import {r['import_ms']:.0f} ms")
    print(f"wrote {out / 'secrets.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
