"""Claude Code's transcript (JSONL), written turn by turn as the CLI writes it, for the Stop hook to read.

Only what engram's hooks read is reproduced faithfully: `type` user/assistant entries whose
`message.content` is the prompt string, `tool_use` blocks (name, id, input), `tool_result`
blocks (tool_use_id, content, is_error) and the answer's `text` block.
"""

from __future__ import annotations

import datetime as dt
import json
import uuid
from pathlib import Path
from typing import Any


class Transcript:
    def __init__(self, path: Path, session_id: str, cwd: str) -> None:
        self.path = path
        self.session_id = session_id
        self.cwd = cwd
        self._parent: str | None = None
        path.parent.mkdir(parents=True, exist_ok=True)
        path.touch()

    def _append(self, kind: str, content: Any, when: dt.datetime) -> None:
        entry_id = str(uuid.uuid4())
        entry = {
            "parentUuid": self._parent,
            "isSidechain": False,
            "type": kind,
            "message": {"role": kind, "content": content},
            "uuid": entry_id,
            "timestamp": when.isoformat().replace("+00:00", "Z"),
            "sessionId": self.session_id,
            "cwd": self.cwd,
        }
        self._parent = entry_id
        with self.path.open("a", encoding="utf-8") as fh:
            fh.write(json.dumps(entry, ensure_ascii=False) + "\n")

    def prompt(self, text: str, when: dt.datetime) -> None:
        self._append("user", text, when)

    def tool_use(self, tool_id: str, name: str, tool_input: dict[str, Any], when: dt.datetime) -> None:
        self._append("assistant", [{"type": "tool_use", "id": tool_id, "name": name, "input": tool_input}], when)

    def tool_result(self, tool_id: str, output: str, failed: bool, when: dt.datetime) -> None:
        block: dict[str, Any] = {"type": "tool_result", "tool_use_id": tool_id, "content": output}
        if failed:
            block["is_error"] = True
        self._append("user", [block], when)

    def answer(self, text: str, when: dt.datetime) -> None:
        self._append("assistant", [{"type": "text", "text": text}], when)
