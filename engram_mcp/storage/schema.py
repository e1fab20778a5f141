"""Versioned, idempotent schema migrations.

Every scope database (project `p_<hash>`, user `default`, session `s_<id>`) gets the
same tables. A migration is a list of SurrealQL statements that may run more than
once without harm (`IF NOT EXISTS`, `OVERWRITE`, idempotent backfills); the schema
version is kept in `engram_meta:schema` and bumped in the same transaction as the
statements, so a crash mid-migration leaves the old version and the migration reruns.
A database whose version is newer than CURRENT_SCHEMA_VERSION is refused: an older
engram writing into a newer layout could silently lose fields.
"""

from __future__ import annotations

# The words the ASSERTs below allow are declared in core/vocabulary.py. The migrations spell
# them out because a released migration never changes (IF NOT EXISTS would not re-apply it
# anyway): a new word needs a new migration that redefines the field, and
# tests/test_vocabulary.py fails until the latest ASSERT of each field equals the vocabulary.
from engram_mcp.core.vocabulary import LINK_TYPES, MEMORY_TYPES, SCOPES, STATUSES

__all__ = ["CURRENT_SCHEMA_VERSION", "LINK_TYPES", "MEMORY_TYPES", "MIGRATIONS", "SCOPES", "STATUSES"]

_BASE = """
DEFINE ANALYZER IF NOT EXISTS memory_analyzer TOKENIZERS blank, class FILTERS ascii, lowercase, snowball(english);

DEFINE TABLE IF NOT EXISTS memory SCHEMAFULL;
DEFINE FIELD IF NOT EXISTS memory_type ON memory TYPE string ASSERT $value IN ['episodic', 'semantic', 'procedural', 'working'];
DEFINE FIELD IF NOT EXISTS scope ON memory TYPE string ASSERT $value IN ['session', 'project', 'user'];
DEFINE FIELD IF NOT EXISTS content ON memory TYPE string;
DEFINE FIELD IF NOT EXISTS summary ON memory TYPE option<string>;
DEFINE FIELD IF NOT EXISTS tags ON memory TYPE array<string> DEFAULT [];
DEFINE FIELD IF NOT EXISTS importance ON memory TYPE float DEFAULT 0.5 ASSERT $value >= 0 AND $value <= 1;
DEFINE FIELD IF NOT EXISTS confidence ON memory TYPE float DEFAULT 0.7 ASSERT $value >= 0 AND $value <= 1;
DEFINE FIELD IF NOT EXISTS access_count ON memory TYPE int DEFAULT 0;
DEFINE FIELD IF NOT EXISTS status ON memory TYPE string DEFAULT 'created' ASSERT $value IN ['created', 'active', 'consolidated', 'archived', 'forgotten'];
DEFINE FIELD IF NOT EXISTS source ON memory TYPE object FLEXIBLE DEFAULT {};
DEFINE FIELD IF NOT EXISTS session_id ON memory TYPE option<string>;
DEFINE FIELD IF NOT EXISTS embedding ON memory TYPE option<bytes>;
DEFINE FIELD IF NOT EXISTS embedding_model ON memory TYPE option<string>;
DEFINE FIELD IF NOT EXISTS embedding_dim ON memory TYPE option<int>;
DEFINE FIELD IF NOT EXISTS version ON memory TYPE int DEFAULT 1;
DEFINE FIELD IF NOT EXISTS promotion_chain ON memory TYPE array<object> FLEXIBLE DEFAULT [];
DEFINE FIELD IF NOT EXISTS metadata ON memory TYPE object FLEXIBLE DEFAULT {};
DEFINE FIELD IF NOT EXISTS created_at ON memory TYPE datetime DEFAULT time::now();
DEFINE FIELD IF NOT EXISTS updated_at ON memory TYPE datetime DEFAULT time::now();
DEFINE FIELD IF NOT EXISTS last_accessed_at ON memory TYPE datetime DEFAULT time::now();
DEFINE FIELD IF NOT EXISTS status_changed_at ON memory TYPE datetime DEFAULT time::now();
DEFINE FIELD IF NOT EXISTS forgotten_at ON memory TYPE option<datetime>;
DEFINE FIELD IF NOT EXISTS forget_reason ON memory TYPE option<string>;
DEFINE INDEX IF NOT EXISTS memory_status ON memory FIELDS status;
DEFINE INDEX IF NOT EXISTS memory_session ON memory FIELDS session_id;

DEFINE TABLE IF NOT EXISTS memory_history SCHEMAFULL;
DEFINE FIELD IF NOT EXISTS memory ON memory_history TYPE record<memory>;
DEFINE FIELD IF NOT EXISTS version ON memory_history TYPE int;
DEFINE FIELD IF NOT EXISTS change ON memory_history TYPE string;
DEFINE FIELD IF NOT EXISTS snapshot ON memory_history TYPE object FLEXIBLE;
DEFINE FIELD IF NOT EXISTS changed_at ON memory_history TYPE datetime DEFAULT time::now();
DEFINE INDEX IF NOT EXISTS history_memory ON memory_history FIELDS memory;

DEFINE TABLE IF NOT EXISTS entity SCHEMAFULL;
DEFINE FIELD IF NOT EXISTS name ON entity TYPE string;
DEFINE FIELD IF NOT EXISTS entity_type ON entity TYPE string;
DEFINE FIELD IF NOT EXISTS description ON entity TYPE string DEFAULT '';
DEFINE FIELD IF NOT EXISTS mention_count ON entity TYPE int DEFAULT 0;
DEFINE FIELD IF NOT EXISTS created_at ON entity TYPE datetime DEFAULT time::now();
DEFINE FIELD IF NOT EXISTS updated_at ON entity TYPE datetime DEFAULT time::now();
DEFINE INDEX IF NOT EXISTS entity_name ON entity FIELDS name;

DEFINE TABLE IF NOT EXISTS mentions TYPE RELATION FROM memory TO entity SCHEMAFULL;
DEFINE FIELD IF NOT EXISTS relationship ON mentions TYPE string DEFAULT 'mentions';
DEFINE FIELD IF NOT EXISTS created_at ON mentions TYPE datetime DEFAULT time::now();
DEFINE INDEX IF NOT EXISTS mentions_in ON mentions FIELDS in;
DEFINE INDEX IF NOT EXISTS mentions_out ON mentions FIELDS out;

DEFINE TABLE IF NOT EXISTS relates_to TYPE RELATION FROM entity TO entity SCHEMAFULL;
DEFINE FIELD IF NOT EXISTS relation_type ON relates_to TYPE string;
DEFINE FIELD IF NOT EXISTS weight ON relates_to TYPE float DEFAULT 0.5;
DEFINE FIELD IF NOT EXISTS evidence ON relates_to TYPE array<string> DEFAULT [];
DEFINE FIELD IF NOT EXISTS created_at ON relates_to TYPE datetime DEFAULT time::now();
DEFINE INDEX IF NOT EXISTS relates_in ON relates_to FIELDS in;
DEFINE INDEX IF NOT EXISTS relates_out ON relates_to FIELDS out;

DEFINE TABLE IF NOT EXISTS memory_link TYPE RELATION FROM memory TO memory SCHEMAFULL;
DEFINE FIELD IF NOT EXISTS relation_type ON memory_link TYPE string ASSERT $value IN ['supersedes', 'contradicts', 'derived_from', 'similar_to'];
DEFINE FIELD IF NOT EXISTS strength ON memory_link TYPE float DEFAULT 0.5;
DEFINE FIELD IF NOT EXISTS created_at ON memory_link TYPE datetime DEFAULT time::now();
DEFINE INDEX IF NOT EXISTS link_in ON memory_link FIELDS in;
DEFINE INDEX IF NOT EXISTS link_out ON memory_link FIELDS out;

DEFINE TABLE IF NOT EXISTS session_registry SCHEMAFULL;
DEFINE FIELD IF NOT EXISTS session_id ON session_registry TYPE string;
DEFINE FIELD IF NOT EXISTS status ON session_registry TYPE string DEFAULT 'active' ASSERT $value IN ['active', 'completed', 'abandoned'];
DEFINE FIELD IF NOT EXISTS started_at ON session_registry TYPE datetime DEFAULT time::now();
DEFINE FIELD IF NOT EXISTS last_seen_at ON session_registry TYPE datetime DEFAULT time::now();
DEFINE FIELD IF NOT EXISTS ended_at ON session_registry TYPE option<datetime>;
DEFINE FIELD IF NOT EXISTS memories_promoted ON session_registry TYPE int DEFAULT 0;
DEFINE FIELD IF NOT EXISTS summary ON session_registry TYPE option<string>;
DEFINE FIELD IF NOT EXISTS info ON session_registry TYPE object FLEXIBLE DEFAULT {};

DEFINE TABLE IF NOT EXISTS promotion_log SCHEMAFULL;
DEFINE FIELD IF NOT EXISTS memory_id ON promotion_log TYPE string;
DEFINE FIELD IF NOT EXISTS from_scope ON promotion_log TYPE string;
DEFINE FIELD IF NOT EXISTS to_scope ON promotion_log TYPE string;
DEFINE FIELD IF NOT EXISTS action ON promotion_log TYPE string;
DEFINE FIELD IF NOT EXISTS target_id ON promotion_log TYPE string;
DEFINE FIELD IF NOT EXISTS reason ON promotion_log TYPE option<string>;
DEFINE FIELD IF NOT EXISTS source_session ON promotion_log TYPE option<string>;
DEFINE FIELD IF NOT EXISTS promoted_at ON promotion_log TYPE datetime DEFAULT time::now();
DEFINE INDEX IF NOT EXISTS promotion_memory ON promotion_log FIELDS memory_id;

DEFINE TABLE IF NOT EXISTS consolidation_queue SCHEMAFULL;
DEFINE FIELD IF NOT EXISTS memory ON consolidation_queue TYPE record<memory>;
DEFINE FIELD IF NOT EXISTS reason ON consolidation_queue TYPE string ASSERT $value IN ['decay', 'duplicate', 'promotion', 'merge', 'scheduled'];
DEFINE FIELD IF NOT EXISTS priority ON consolidation_queue TYPE float DEFAULT 0.5;
DEFINE FIELD IF NOT EXISTS status ON consolidation_queue TYPE string DEFAULT 'pending' ASSERT $value IN ['pending', 'processing', 'completed', 'failed'];
DEFINE FIELD IF NOT EXISTS created_at ON consolidation_queue TYPE datetime DEFAULT time::now();
DEFINE FIELD IF NOT EXISTS processed_at ON consolidation_queue TYPE option<datetime>;
DEFINE INDEX IF NOT EXISTS queue_status ON consolidation_queue FIELDS status;

DEFINE TABLE IF NOT EXISTS engram_meta SCHEMALESS;
"""

_ADD_CATEGORY = """
DEFINE FIELD IF NOT EXISTS category ON memory TYPE option<string>;
DEFINE INDEX IF NOT EXISTS memory_category ON memory FIELDS category;
UPDATE memory SET category = metadata.category, metadata.category = NONE WHERE category IS NONE AND metadata.category IS NOT NONE;
"""

_ENTITY_NAME_KEY_AND_SIGHTINGS = """
DEFINE FIELD IF NOT EXISTS name_key ON entity TYPE option<string>;
DEFINE INDEX IF NOT EXISTS entity_name_key ON entity FIELDS name_key;
UPDATE entity SET name_key = string::lowercase(name) WHERE name_key IS NONE;
DEFINE TABLE IF NOT EXISTS project_sighting SCHEMAFULL;
DEFINE FIELD IF NOT EXISTS project ON project_sighting TYPE string;
DEFINE FIELD IF NOT EXISTS memory_id ON project_sighting TYPE string;
DEFINE FIELD IF NOT EXISTS fingerprint ON project_sighting TYPE string;
DEFINE FIELD IF NOT EXISTS embedding ON project_sighting TYPE option<bytes>;
DEFINE FIELD IF NOT EXISTS embedding_model ON project_sighting TYPE option<string>;
DEFINE FIELD IF NOT EXISTS seen_at ON project_sighting TYPE datetime DEFAULT time::now();
DEFINE INDEX IF NOT EXISTS sighting_fingerprint ON project_sighting FIELDS fingerprint;
"""

# A change the user stated in one project (user store), for the lines of their other projects.
_PROJECT_CHANGES = """
DEFINE TABLE IF NOT EXISTS project_change SCHEMAFULL;
DEFINE FIELD IF NOT EXISTS project ON project_change TYPE string;
DEFINE FIELD IF NOT EXISTS project_name ON project_change TYPE string;
DEFINE FIELD IF NOT EXISTS memory_id ON project_change TYPE string;
DEFINE FIELD IF NOT EXISTS content ON project_change TYPE string;
DEFINE FIELD IF NOT EXISTS created_at ON project_change TYPE datetime;
DEFINE INDEX IF NOT EXISTS project_change_created ON project_change FIELDS created_at;
"""

# Recall, browse, maintenance and promotion read memories through the derived index
# (engram_mcp/index), never with a SurrealQL filter on these fields, so their engine indexes
# were only ever written: every insert and every recall-strengthening update paid for them
# (bulk insert 4,987 -> 6,200 records/s and a strengthening bump 262 -> 217 us once removed,
# measured on this machine).
_DROP_UNREAD_MEMORY_INDEXES = """
REMOVE INDEX IF EXISTS memory_status ON memory;
REMOVE INDEX IF EXISTS memory_session ON memory;
REMOVE INDEX IF EXISTS memory_category ON memory;
"""

# The memory table becomes schemaless: its fields are declared, checked and defaulted in
# Python (storage/memory_shape.py), which writes a record without the fields at their
# defaults. The engine's per-field work on every write bounded a bulk import (~190 us a
# record declared and whole against ~120 us schemaless and sparse, measured on this machine).
# Records written before keep every field; reads treat both alike.
_MEMORY_SCHEMALESS = """
REMOVE FIELD IF EXISTS memory_type ON memory;
REMOVE FIELD IF EXISTS scope ON memory;
REMOVE FIELD IF EXISTS content ON memory;
REMOVE FIELD IF EXISTS summary ON memory;
REMOVE FIELD IF EXISTS tags ON memory;
REMOVE FIELD IF EXISTS tags[*] ON memory;
REMOVE FIELD IF EXISTS importance ON memory;
REMOVE FIELD IF EXISTS confidence ON memory;
REMOVE FIELD IF EXISTS access_count ON memory;
REMOVE FIELD IF EXISTS status ON memory;
REMOVE FIELD IF EXISTS source ON memory;
REMOVE FIELD IF EXISTS session_id ON memory;
REMOVE FIELD IF EXISTS embedding ON memory;
REMOVE FIELD IF EXISTS embedding_model ON memory;
REMOVE FIELD IF EXISTS embedding_dim ON memory;
REMOVE FIELD IF EXISTS version ON memory;
REMOVE FIELD IF EXISTS promotion_chain ON memory;
REMOVE FIELD IF EXISTS promotion_chain[*] ON memory;
REMOVE FIELD IF EXISTS metadata ON memory;
REMOVE FIELD IF EXISTS created_at ON memory;
REMOVE FIELD IF EXISTS updated_at ON memory;
REMOVE FIELD IF EXISTS last_accessed_at ON memory;
REMOVE FIELD IF EXISTS status_changed_at ON memory;
REMOVE FIELD IF EXISTS forgotten_at ON memory;
REMOVE FIELD IF EXISTS forget_reason ON memory;
REMOVE FIELD IF EXISTS category ON memory;
DEFINE TABLE OVERWRITE memory SCHEMALESS;
"""


def _statements(block: str) -> list[str]:
    """Split a block on ';' at line ends (no statement here contains one inside)."""
    out, buf = [], []
    for line in block.strip().splitlines():
        if not line.strip():
            continue
        buf.append(line)
        if line.rstrip().endswith(";"):
            out.append("\n".join(buf))
            buf = []
    if buf:
        out.append("\n".join(buf))
    return out


# (version, description, statements). Append only; never edit a released migration.
MIGRATIONS: list[tuple[int, str, list[str]]] = [
    (1, "base schema: memory, history, graph, sessions, promotion, queue", _statements(_BASE)),
    (2, "category field for the fine-grained kind (decision, convention, ...)", _statements(_ADD_CATEGORY)),
    (
        3,
        "entity.name_key (one node per case-folded name); project_sighting (seen in >= 2 projects)",
        _statements(_ENTITY_NAME_KEY_AND_SIGHTINGS),
    ),
    (
        4,
        "drop the memory indexes no query reads (status, session_id, category)",
        _statements(_DROP_UNREAD_MEMORY_INDEXES),
    ),
    (
        5,
        "memory schemaless: its fields checked and defaulted in Python, written without their defaults",
        _statements(_MEMORY_SCHEMALESS),
    ),
    (
        6,
        "project_change: a change stated in one project, for the lines of the user's other projects",
        _statements(_PROJECT_CHANGES),
    ),
]
CURRENT_SCHEMA_VERSION = MIGRATIONS[-1][0]
