"""`engram doctor`: what works, what does not, and what to do about it.

Each check returns ok/detail/fix so a user (or the SessionStart hook's one-line notice)
sees the next step, not a stack trace. Checks that need the stores go through the
daemon like everything else.
"""

from __future__ import annotations

import importlib.util
import os
import stat
import sys
from pathlib import Path
from typing import Any

from engram_mcp.core import spool
from engram_mcp.core.errors import EngramError
from engram_mcp.core.paths import project_dir
from engram_mcp.daemon.client import DaemonClient, socket_path, user_dir_from_env


def _check(name: str, ok: bool, detail: str, fix: str | None = None) -> dict[str, Any]:
    return {"check": name, "ok": ok, "detail": detail + (f" — fix: {fix}" if fix and not ok else "")}


def _modes(path: Path) -> list[str]:
    bad: list[str] = []
    if not path.exists():
        return bad
    for root, dirs, files in os.walk(path):
        for d in dirs:
            p = Path(root) / d
            if stat.S_IMODE(p.stat().st_mode) & 0o077:
                bad.append(str(p))
        for f in files:
            p = Path(root) / f
            if not p.is_symlink() and not p.is_socket() and stat.S_IMODE(p.stat().st_mode) & 0o077:
                bad.append(str(p))
    return bad


def _dependencies_hint() -> str:
    """How to repair missing dependencies, for whoever runs this: a plugin user or a developer."""
    if (Path(sys.prefix) / "engram-pyproject.toml").exists():  # the plugin's own venv (bin/engram-bootstrap's stamp)
        return f"delete {sys.prefix} and restart Claude Code: engram builds it again (log: bootstrap.log beside it)"
    return "set ENGRAM_PYTHON to a Python that has engram's dependencies (in a development checkout: `make setup`)"


#: What engram imports from its dependencies (onnxruntime and tokenizers run the built-in model,
#: fastembed every other model).
DEPENDENCY_MODULES = tuple(
    "surrealdb fastembed onnxruntime tokenizers mcp numpy Stemmer yaml jsonschema frontmatter".split()
)


def run_doctor(project_root: Path, session_id: str | None = None) -> dict[str, Any]:
    from engram_mcp.core.config import check_config_files

    checks = []
    checks.append(_check("python", sys.version_info >= (3, 11), sys.version.split()[0], "install Python 3.11 or newer"))
    missing = [m for m in DEPENDENCY_MODULES if importlib.util.find_spec(m) is None]
    checks.append(
        _check(
            "dependencies",
            not missing,
            "all importable" if not missing else f"missing: {', '.join(missing)}",
            _dependencies_hint(),
        )
    )
    problems = check_config_files(project_root)
    errors = [p for p in problems if p.is_error]
    checks.append(
        _check(
            "config",
            not errors,
            "valid" if not problems else "; ".join(str(p) for p in problems),
            "edit the file or variable named above (see config.local.md.example)",
        )
    )
    udir = user_dir_from_env()
    for label, path in (("user store permissions", udir), ("project store permissions", project_dir(project_root))):
        if label.startswith("project") and (path.is_symlink() or path.parent.is_symlink()):
            link = path if path.is_symlink() else path.parent
            checks.append(
                _check(
                    label,
                    False,
                    f"{link} is a symbolic link: engram refuses to keep a store through it "
                    "(and never changes what it points to)",
                    f"remove the link ({link}); engram then creates a real directory",
                )
            )
            continue
        bad = _modes(path)
        checks.append(
            _check(
                label,
                not bad,
                f"{path} private (0700/0600)" if not bad else f"readable by others: {', '.join(bad[:3])}",
                f"chmod -R go-rwx {path}",
            )
        )
    status: dict[str, Any] = {}
    try:
        with DaemonClient(udir, client_name="doctor") as client:
            status = client.call("status", project_root=project_root, session_id=session_id)
        checks.append(_check("daemon", True, f"running, socket {socket_path(udir)}"))
        emb = status["embedding"]
        checks.append(
            _check(
                "embedding model",
                not emb.get("error"),
                f"{emb['model']} ({emb['dimensions']}-d)" + (f": {emb['error']}" if emb.get("error") else ""),
                "run `engram reindex` once the model loads; see README",
            )
        )
        for scope, info in status["scopes"].items():
            ok = info.get("status") == "connected"
            checks.append(
                _check(
                    f"{scope} store",
                    ok,
                    f"{info.get('total', 0)} memories at {info.get('path')}{_index_note(info.get('index'))}"
                    + (
                        f"; {info['awaiting_vectors']} memories awaiting vectors"
                        if info.get("awaiting_vectors")
                        else ""
                    )
                    if ok
                    else info.get("message", "unavailable"),
                    "see the message; writes are kept and retried",
                )
            )
    except EngramError as exc:
        checks.append(_check("daemon", False, exc.message, "see ~/.claude/engram/logs/engramd.log"))
    checks.append(_queue_check(udir, status.get("write_queue") or {}))
    return {"ok": all(c["ok"] for c in checks), "checks": checks}


def _index_note(index_status: Any) -> str:
    """How the scope's index was opened, when it says more than "loaded": a file that failed its
    checksums, or that was not the one its data last had, was withdrawn and rebuilt, and the
    user should know (a disk or a restore damaged something)."""
    if not isinstance(index_status, str) or not index_status or index_status == "loaded":
        return ""
    return f"; index {index_status}"


def _queue_check(udir: Path, live: dict[str, Any]) -> dict[str, Any]:
    """Writes waiting in the spool (and why), and writes set aside as invalid."""
    counts = spool.count(udir)  # read directly: works when the daemon does not
    blocked = live.get("blocked_by") or []
    detail = f"{counts['pending']} queued, {counts['rejected']} rejected"
    if blocked:
        detail += f"; waiting for: {'; '.join(blocked)}"
    rejected_dir = spool.spool_dir(udir) / spool.REJECTED_DIR_NAME
    if counts["rejected"]:
        return _check("write queue", False, detail, f"read the errors in {rejected_dir}/*.json, then delete them")
    return _check(
        "write queue",
        not (counts["pending"] and blocked),
        detail,
        "fix the store named above; queued writes then apply by themselves",
    )
