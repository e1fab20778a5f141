"""Every engram config key, declared once: name, type, default, bounds, one-line doc, section.

The declaration is the :class:`Config` dataclass itself. Each field's annotation is the
key's type, and :func:`setting` gives its default, its bounds or allowed values, its doc
line and the section of the docs it belongs to. Everything else is derived from it:

- :data:`CONFIG_SCHEMA`, the JSON Schema every config file and variable is validated against
  (``config.py``);
- :data:`DEFAULTS` and :data:`DEFAULT_CONFIG`, the built-in values (``RetrievalSettings`` in
  ``index/retrieval.py`` takes its defaults from here too);
- the "Configuration reference" in the README (``python -m engram_mcp.core.config_reference``,
  checked by tests/test_config_reference.py), and the check of ``config.local.md.example``.

Adding a key is one field here, one commented line in the example file and a regenerated
reference. Keys with a unit carry it in their name (``_hours``, ``_seconds``, ``_token_``).

Standard library only: the index and the hooks read defaults without loading the YAML and
JSON Schema machinery of ``config.py``.
"""

from __future__ import annotations

import copy
import types
import typing
from dataclasses import dataclass, field, fields
from typing import Any, TypeVar

from engram_mcp.core.vocabulary import SCOPES

#: Scope weights (session/project/user) per retrieval context: how much a scope is favoured
#: among memories of about equal relevance (relative: the largest gets the whole scope prior,
#: see scoring.py). They never outweigh relevance. "default" was measured: the project's own
#: answer beats the user's general habits and the live session's notes on a near tie.
SCOPE_WEIGHT_PROFILES: dict[str, dict[str, float]] = {
    "default": {"session": 0.60, "project": 1.00, "user": 0.00},
    "codebase": {"session": 0.20, "project": 0.60, "user": 0.20},
    "preferences": {"session": 0.10, "project": 0.20, "user": 0.70},
    "debugging": {"session": 0.40, "project": 0.40, "user": 0.20},
    "new_project": {"session": 0.30, "project": 0.10, "user": 0.60},
    "architecture": {"session": 0.15, "project": 0.65, "user": 0.20},
}

#: How keyword and vector candidates are merged: normalised weighted scores, or reciprocal ranks.
FUSION_METHODS: tuple[str, ...] = ("score", "rrf")
LOG_LEVELS: tuple[str, ...] = ("debug", "info", "warning", "error")

#: The sections of the docs and of config.local.md.example, in the order they are shown.
SECTIONS: tuple[str, ...] = (
    "Embeddings",
    "Retrieval",
    "Context injection",
    "Capture",
    "Maintenance and promotion",
    "Team memory",
    "Daemon",
)

#: Key of a dataclass field's metadata that holds its :class:`Setting`.
_SETTING = "engram_setting"

#: JSON Schema of one scope weight: a number in [0, 1].
_UNIT: dict[str, Any] = {"type": "number", "minimum": 0, "maximum": 1}


def scale_scope_weights(weights: dict[str, float]) -> dict[str, float]:
    """Scope weights divided by the largest (all zero stays all zero)."""
    top = max(float(v) for v in weights.values()) if weights else 0.0
    return {k: (float(v) / top if top > 0 else 0.0) for k, v in weights.items()}


@dataclass(frozen=True)
class Setting:
    """What a config key accepts and means, besides its name, type and default.

    Bounds are kept exactly as written (``0`` not ``0.0``): error messages and the docs
    show them as they appear here.
    """

    section: str
    doc: str
    minimum: float | None = None
    maximum: float | None = None
    choices: tuple[str, ...] | None = None
    min_length: int | None = None
    #: Extra JSON Schema for a structured value (an object's entries).
    schema: dict[str, Any] | None = None
    #: The key makes engram write outside the private store (into the repository, a shared
    #: folder, a path of its choosing). Such a key is honoured only from the user's own config
    #: (``~/.claude/engram.local.md``) or a project file git does not track, saved after the
    #: user's first session there (`config._drop_repository_moves`): a tracked file is the
    #: repository's, and the repository must not decide what leaves (nor its settings.json `env`).
    moves_data: bool = False


_T = TypeVar("_T")


def setting(
    default: _T,
    section: str,
    doc: str,
    *,
    minimum: float | None = None,
    maximum: float | None = None,
    choices: tuple[str, ...] | None = None,
    min_length: int | None = None,
    schema: dict[str, Any] | None = None,
    moves_data: bool = False,
) -> _T:
    """Declare one config key as a dataclass field (typed as its default for type checkers)."""
    if section not in SECTIONS:
        raise ValueError(f"unknown config section {section!r}; add it to SECTIONS")
    spec = Setting(section, doc, minimum, maximum, choices, min_length, schema, moves_data)
    return field(default=default, metadata={_SETTING: spec})


@dataclass(frozen=True)
class Config:
    """Effective, validated settings; each field below is one config key and its declaration."""

    # --- Embeddings
    embedding_model: str = setting(
        "engram/all-MiniLM-L6-v2-int8",
        "Embeddings",
        "Embedding model: the built-in offline model or any fastembed model name.",
        min_length=1,
    )
    embedding_model_path: str | None = setting(
        None, "Embeddings", "Directory holding a custom ONNX embedding model.", min_length=1
    )
    embedding_cache_dir: str | None = setting(
        None,
        "Embeddings",
        "fastembed cache directory; null means <user_dir>/models.",
        min_length=1,
        moves_data=True,  # downloads are written there: a directory of the repository's choosing
    )
    #: A large import cannot wait for its vectors: the model embeds ~220 short texts per CPU-second
    #: on a 2-core machine, so 20,000 took ~90 s of the 283 s an import of them lasted (issue 35).
    import_defer_vectors_min: int = setting(
        1000,
        "Embeddings",
        "An import with at least this many memories to embed writes them at once, found by keywords, and the "
        "daemon computes their vectors afterwards in the background (0: always embed during the import).",
        minimum=0,
    )
    # --- Retrieval
    scope_weight_profile: str = setting(
        "default",
        "Retrieval",
        "Named scope weighting used when scope_weights is null.",
        choices=tuple(SCOPE_WEIGHT_PROFILES),
    )
    scope_weights: dict[str, float] | None = setting(
        None,
        "Retrieval",
        "Explicit session/project/user weights; overrides scope_weight_profile.",
        schema={
            "properties": {scope: dict(_UNIT) for scope in SCOPES},
            "required": list(SCOPES),
            "additionalProperties": False,
        },
    )
    fusion: str = setting("score", "Retrieval", "How keyword and vector results are merged.", choices=FUSION_METHODS)
    keyword_weight: float = setting(
        0.4, "Retrieval", "Weight of BM25 in score fusion; vector gets 1 - this.", minimum=0, maximum=1
    )
    rrf_k: int = setting(60, "Retrieval", "k constant of reciprocal rank fusion.", minimum=1)
    candidate_pool: int = setting(100, "Retrieval", "Candidates per strategy per scope.", minimum=10, maximum=1000)
    store_dedup_similarity: float = setting(
        0.85, "Retrieval", "Similarity above which a stored memory is a duplicate.", minimum=0.5, maximum=1
    )
    cross_scope_dedup_similarity: float = setting(
        0.90, "Retrieval", "Similarity above which recall drops cross-scope duplicates.", minimum=0.5, maximum=1
    )
    # Relevance floor (index/retrieval.py `relevant_mask`): a candidate without a keyword hit is
    # relevant only if its cosine reaches max(min cosine, ratio * best cosine of the recall).
    # Calibrated on all-MiniLM-L6-v2: unrelated pairs of short coding memories have cosine p95
    # 0.18 / p99 0.28, and a memory 0.27 from the query ("The CI runs on GitHub Actions" for "how
    # is the frontend built with vite") is noise next to a 0.80 hit; paraphrases without a shared
    # word sit at 0.10-0.50.
    relevance_min_cosine: float = setting(
        0.20,
        "Retrieval",
        "Cosine a recall candidate without a keyword hit needs to count as relevant.",
        minimum=-1,
        maximum=1,
    )
    relevance_min_cosine_ratio: float = setting(
        0.50, "Retrieval", "Fraction of the recall's best cosine such a candidate also needs.", minimum=0, maximum=1
    )
    # --- Context injection
    context_token_budget: int = setting(
        1200, "Context injection", "Token budget of injected context.", minimum=100, maximum=8000
    )
    user_prompt_recall: bool = setting(
        True, "Context injection", "Recall memories on every user prompt, and after a tool step that needs one."
    )
    # Measured with cosine top-3 per prompt: 0.35 -> 0.30 reaches a needed fact on 35 of 103 month-world
    # needs (was 25) and a gold memory on 148 of 200 coding-memory queries (was 135; lines shown 354 ->
    # 468, precision 0.43 -> 0.36); LoCoMo unchanged (147 vs 146 of 383, three conversations). Lower
    # costs more than it adds: 0.25 gives 156 of 200 queries at precision 0.32, and 0.20 in the month
    # replay (diligent) lowered context recall 0.785 -> 0.776 and raised stale exposure 0.164 -> 0.224.
    prompt_recall_min_relevance: float = setting(
        0.30,
        "Context injection",
        "Minimum cosine similarity between a prompt and a memory it injects (recall's best match: 0.10 less).",
        minimum=0,
        maximum=1,
    )
    prompt_recall_limit: int = setting(
        3, "Context injection", "Maximum memories injected per prompt.", minimum=1, maximum=10
    )
    # --- Capture
    capture_file_changes: bool = setting(True, "Capture", "Record file edits as session memories.")
    capture_failed_commands: bool = setting(True, "Capture", "Record failed shell commands as session memories.")
    stop_hook: bool = setting(
        True, "Capture", "Note a turn's unstored durable knowledge for the next prompt (never blocks)."
    )
    # --- Maintenance and promotion
    maintenance_interval_hours: float = setting(
        24.0, "Maintenance and promotion", "Hours between maintenance runs.", minimum=0.1, maximum=720
    )
    promote_session_min_importance: float = setting(
        0.5, "Maintenance and promotion", "Importance needed to promote session -> project.", minimum=0, maximum=1
    )
    promote_session_min_access: int = setting(
        2, "Maintenance and promotion", "Accesses needed to promote session -> project.", minimum=0
    )
    promote_user_min_importance: float = setting(
        0.7, "Maintenance and promotion", "Importance needed to promote project -> user.", minimum=0, maximum=1
    )
    promote_user_min_sessions: int = setting(
        3, "Maintenance and promotion", "Sessions needed to promote project -> user.", minimum=1
    )
    abandoned_session_hours: float = setting(
        12.0,
        "Maintenance and promotion",
        "Hours after which an unclosed session is abandoned.",
        minimum=0.01,
        maximum=720,
    )
    # --- Team memory
    team_memory_share_min_importance: float | None = setting(
        None,
        "Team memory",
        "Importance from which `engram sync` shares procedural and semantic project memories unasked (null: by hand only).",
        minimum=0,
        maximum=1,
        moves_data=True,  # writes private memories into the repository's team folder
    )
    # --- Daemon
    daemon_idle_exit_seconds: int = setting(
        900, "Daemon", "Idle seconds before the daemon exits.", minimum=10, maximum=86400
    )
    index_persist: bool = setting(
        True,
        "Daemon",
        "Keep each store's retrieval index in a file beside it, so a store opens without re-reading every memory.",
    )
    index_early_answers: bool = setting(
        True,
        "Daemon",
        "Answer recall from the persisted index while the store opens, when the index was marked clean "
        "by its last checkpoint; and when the index must be rebuilt, answer from the newest memories "
        "while the rest load, saying so (writes still wait for the store and the whole index).",
    )
    log_level: str = setting("info", "Daemon", "Logging verbosity.", choices=LOG_LEVELS)
    #: Where each value came from: "default", a config file's display path, or "env ENGRAM_X".
    sources: dict[str, str] = field(default_factory=dict, compare=False)

    def scope_weights_resolved(self) -> dict[str, float]:
        """Explicit ``scope_weights`` win; otherwise the named profile applies. Scaled so the
        favoured scope gets 1.0: the weights say which scope wins a near tie, not by how much."""
        return scale_scope_weights(self.scope_weights or SCOPE_WEIGHT_PROFILES[self.scope_weight_profile])

    def as_dict(self) -> dict[str, Any]:
        """Setting values only (no ``sources``), deep-copied so callers can't mutate us."""
        return {key: copy.deepcopy(getattr(self, key)) for key in SETTINGS}


# --------------------------------------------------------------------------- derived from Config

#: JSON type of each Python type a key may have.
_JSON_TYPES: dict[type, str] = {str: "string", int: "integer", float: "number", bool: "boolean", dict: "object"}


def _json_types(annotation: Any) -> list[str]:
    """JSON Schema types of a field annotation: ``int`` -> integer, ``str | None`` -> string, null."""
    members = typing.get_args(annotation) if isinstance(annotation, types.UnionType) else (annotation,)
    out = []
    for member in members:
        if member is type(None):
            out.append("null")
            continue
        origin = typing.get_origin(member) or member
        if origin not in _JSON_TYPES:
            raise TypeError(f"config key type {member!r} has no JSON Schema type")
        out.append(_JSON_TYPES[origin])
    return out


def _settings() -> dict[str, Setting]:
    """Each config key's :class:`Setting`, in declaration order."""
    return {f.name: f.metadata[_SETTING] for f in fields(Config) if _SETTING in f.metadata}


def _property_schema(name: str, annotation: Any, spec: Setting) -> dict[str, Any]:
    """The JSON Schema of one key, from its type annotation and its :class:`Setting`."""
    json_types = _json_types(annotation)
    schema: dict[str, Any] = {"type": json_types[0] if len(json_types) == 1 else json_types}
    if spec.choices is not None:
        schema["enum"] = list(spec.choices)
    if spec.min_length is not None:
        schema["minLength"] = spec.min_length
    if spec.minimum is not None:
        schema["minimum"] = spec.minimum
    if spec.maximum is not None:
        schema["maximum"] = spec.maximum
    schema.update(copy.deepcopy(spec.schema or {}))
    schema["description"] = spec.doc
    return schema


#: Every config key's declaration, by name, in declaration order.
SETTINGS: dict[str, Setting] = _settings()
_HINTS = typing.get_type_hints(Config)

#: Keys that write outside the private store (``moves_data``): never taken from a tracked file.
DATA_MOVING_KEYS: frozenset[str] = frozenset(name for name, spec in SETTINGS.items() if spec.moves_data)

#: The JSON Schema config files and ``ENGRAM_*`` variables are validated against.
CONFIG_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "engram configuration",
    "type": "object",
    "additionalProperties": False,
    "properties": {name: _property_schema(name, _HINTS[name], spec) for name, spec in SETTINGS.items()},
}

#: The built-in configuration: every key at its default.
DEFAULT_CONFIG = Config()
#: The built-in value of every key (deep copies: callers may change them freely).
DEFAULTS: dict[str, object] = DEFAULT_CONFIG.as_dict()
