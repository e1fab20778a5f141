"""Typed errors shared by every interface.

Each error carries the fields of the MCP error envelope (docs/decisions.md,
"The MCP surface") so the MCP server, the CLI and the hooks render the same
facts: a stable `code`, a message that names the next step, whether the system is
degraded, and whether retrying can help.
"""

from __future__ import annotations

from typing import Any


class EngramError(Exception):
    """Base class: an expected failure with a message written for the user/model."""

    code = "engram_error"
    degraded = False
    retry_possible = False

    def __init__(self, message: str, *, field: str | None = None, **details: Any) -> None:
        super().__init__(message)
        self.message = message
        self.field = field
        self.details = details

    def envelope(self) -> dict[str, Any]:
        """The error envelope every interface renders (docs/decisions.md)."""
        env: dict[str, Any] = {
            "error": self.code,
            "message": self.message,
            "degraded": self.degraded,
            "retry_possible": self.retry_possible,
        }
        if self.field:
            env["field"] = self.field
        if self.details:
            env["details"] = self.details
        return env


class InvalidInput(EngramError):
    code = "invalid_input"


class MemoryNotFound(EngramError):
    """No memory with the given id; the envelope names `memory_id` so a caller knows what to fix."""

    code = "not_found"

    def __init__(self, message: str, *, field: str | None = "memory_id", **details: Any) -> None:
        super().__init__(message, field=field, **details)


class StoreUnavailable(EngramError):
    """A store cannot be opened or written (locked, corrupt, read-only, disk full)."""

    code = "memory_unavailable"
    degraded = True
    retry_possible = True


class StorageFull(StoreUnavailable):
    code = "storage_full"


class SchemaTooNew(StoreUnavailable):
    """The store was written by a newer engram; refusing protects it from damage."""

    code = "schema_too_new"
    retry_possible = False


class DaemonUnavailable(EngramError):
    code = "daemon_unavailable"
    degraded = True
    retry_possible = True


class DaemonNotRunning(DaemonUnavailable):
    """No daemon listens and the caller chose not to start one: the expected answer of a call that
    only wants the daemon if it is up (a tool step's memory), not a failure to report."""


def error_from_envelope(env: dict[str, Any]) -> EngramError:
    """Rebuild a typed error from an envelope received over the daemon socket."""
    classes = {
        cls.code: cls
        for cls in (InvalidInput, MemoryNotFound, StoreUnavailable, StorageFull, SchemaTooNew, DaemonUnavailable)
    }
    cls = classes.get(str(env.get("error")), EngramError)
    err = cls(str(env.get("message", "unknown error")), field=env.get("field"), **(env.get("details") or {}))
    if cls is EngramError:
        err.code = str(env.get("error", "engram_error"))
        err.degraded = bool(env.get("degraded", False))
        err.retry_possible = bool(env.get("retry_possible", False))
    return err
