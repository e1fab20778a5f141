"""Every SurrealQL statement engram runs, in one place, all parameterised.

Only storage/ runs them: the repository (storage/repository.py) for the services, the store
itself for migrations and repairs. Above storage nothing imports this module.

Values always travel as `$params`. The only identifiers that are not parameters are
namespace/database names (SurrealQL cannot bind them), and those are produced and
validated by `engram_mcp.core.ids` from hashes and a strict alphabet, never taken from
user text. Field names in patches come from code, never from input.
"""

# --- meta / migrations -------------------------------------------------------
GET_SCHEMA_VERSION = "SELECT VALUE version FROM ONLY engram_meta:schema"
SET_SCHEMA_VERSION = "UPSERT engram_meta:schema SET version = $version, migrated_at = time::now()"
GET_META = "SELECT VALUE value FROM ONLY type::thing('engram_meta', $key)"
SET_META = "UPSERT type::thing('engram_meta', $key) SET value = $value, updated_at = time::now()"
# The change counter of a database: bumped in the same transaction as every write that may
# change what the derived retrieval index holds (all but UNINDEXED_WRITES, applied by store.py),
# so a persisted index stamped with it knows whether it still reflects the store
# (services/handles.py).
# The counter carries a random id drawn at its first bump: a stamp names this database, so an
# index file copied from another store (or shipped by a repository) never matches by chance.
BUMP_CHANGES = "UPSERT engram_meta:changes SET n = (n ?? 0) + 1, store_id = store_id ?? rand::uuid::v4() RETURN NONE"
GET_CHANGES = "SELECT n, store_id FROM ONLY engram_meta:changes"
# The change log: the counter's bump, together with a row keyed by the counter's new value that
# names the memory records its transaction wrote ($keys; NONE: it cannot name them all) and
# whether it wrote memory -> memory links ($links). store.py commits it in place of BUMP_CHANGES,
# so an index file stamped n that finds rows n+1..m repairs itself from them instead of
# rebuilding (services/handles.py); a missing row only costs a rebuild. The table is created
# by its first row (schemaless, like engram_meta) and pruned up to each index file's stamp.
# UPSERT, not CREATE: should the counter ever restart (its record lost), a row left from before
# must not make every write fail; the restarted counter also has a new store id, so no file
# stamped before matches, and every row up to the counter is rewritten as it passes.
LOG_CHANGE = (
    "UPSERT type::thing('engram_change', (UPSERT engram_meta:changes SET n = (n ?? 0) + 1, "
    "store_id = store_id ?? rand::uuid::v4() RETURN VALUE n)[0]) SET keys = $keys, links = $links RETURN NONE"
)
CHANGES_AFTER = (
    "SELECT record::id(id) AS n, keys, links FROM engram_change "
    "WHERE id > type::thing('engram_change', $after) ORDER BY n LIMIT $limit"
)
PRUNE_CHANGES = "DELETE engram_change WHERE id <= type::thing('engram_change', $upto) RETURN NONE"
DEFINE_DATABASE = "DEFINE DATABASE IF NOT EXISTS {db}"  # {db} from ids.session_db_name/project_db_name only
REMOVE_DATABASE = "REMOVE DATABASE IF EXISTS {db}"
LIST_DATABASES = "INFO FOR NS"

# --- memory ------------------------------------------------------------------
CREATE_MEMORY = "CREATE type::thing('memory', $id) CONTENT $record RETURN NONE"
# Many new memories in one statement (import): fails whole if any id exists, like CREATE.
INSERT_MEMORIES = "INSERT INTO memory $rows RETURN NONE"
REPLACE_MEMORY = "UPDATE type::thing('memory', $id) CONTENT $record RETURN NONE"
GET_MEMORY = "SELECT * FROM type::thing('memory', $id)"
GET_MEMORIES = "SELECT * FROM $ids"
# $range: a record id range (repository.record_range); the engine reads it in key order.
GET_MEMORY_RANGE = "SELECT * FROM $range"
# What a recall returns: the record without its 1.5 KB vector (only whether it has one).
GET_MEMORIES_FOR_RECALL = "SELECT *, embedding IS NOT NONE AS has_embedding OMIT embedding FROM $ids"
EXISTS_MEMORY = "SELECT VALUE id FROM type::thing('memory', $id)"
ALL_MEMORIES = "SELECT * FROM memory"
_INDEX_FIELDS = (
    "SELECT id, memory_type, scope, content, summary, tags, category, importance, access_count, status, "
    "created_at, last_accessed_at, session_id, embedding, embedding_model"
)
INDEX_ROWS = f"{_INDEX_FIELDS} FROM memory"
# A page of a rebuild: $range a record id range (repository.record_range), read in key order.
INDEX_ROWS_RANGE = f"{_INDEX_FIELDS} FROM $range LIMIT $limit"
# The index rows of given records ($ids: record ids): an index file's repair from the change log.
INDEX_ROWS_OF = f"{_INDEX_FIELDS} FROM $ids"
# The smallest memory key (a range scan from the start stops at the first record).
FIRST_MEMORY_KEY = "SELECT VALUE id FROM memory LIMIT 1"
# Recall strengthening written behind (services/strengthen.py): one entry per memory with its
# number of recalls since the last write, the last recall time and the recalling sessions, of
# which the last rows.RECALL_SESSIONS_KEPT stay ($kept).
# UPDATE never creates: a memory deleted in the meantime is skipped.
STRENGTHEN_BATCH = (
    "FOR $b IN $batch { UPDATE $b.id SET access_count += $b.n, last_accessed_at = $b.at, "
    "status = IF status = 'created' THEN 'active' ELSE status END, "
    "metadata.recall_sessions = IF array::len($b.sessions) = 0 THEN metadata.recall_sessions "
    "ELSE array::slice(array::union(metadata.recall_sessions ?? [], $b.sessions), -$kept) END RETURN NONE; }"
)
SET_STATUS = "UPDATE $ids SET status = $status, status_changed_at = time::now() RETURN NONE"
COUNT_BY_TYPE_STATUS = "SELECT memory_type, status, count() AS n FROM memory GROUP BY memory_type, status"

# --- history -----------------------------------------------------------------
CREATE_HISTORY = "CREATE memory_history CONTENT $entry RETURN NONE"
HISTORY_OF = "SELECT * FROM memory_history WHERE memory = $memory ORDER BY version, changed_at"
ALL_HISTORY = "SELECT * FROM memory_history"

# --- graph -------------------------------------------------------------------
# The node upsert of engram before schema v3 (one node per name and type); tests build such stores with it.
UPSERT_ENTITY = (
    "UPSERT type::thing('entity', $key) SET name = $name, entity_type = $entity_type, "
    "mention_count = (mention_count ?? 0) + $mentions, updated_at = time::now(), "
    "description = IF $description IS NONE THEN (description ?? '') ELSE $description END RETURN NONE"
)
GET_ENTITIES = "SELECT * FROM $ids"
ALL_ENTITIES = "SELECT * FROM entity"
FIND_MENTION = "SELECT VALUE id FROM mentions WHERE in = $memory AND out = $entity AND relationship = $relationship"
RELATE_MENTION = "RELATE $memory->mentions->$entity SET relationship = $relationship RETURN NONE"
UNLINK_MENTIONS_BY_NAME = "DELETE mentions WHERE in = $memory AND out IN $entities RETURN BEFORE"
MENTIONS_OF_MEMORY = (
    "SELECT out.name AS name, out.entity_type AS entity_type, relationship FROM mentions WHERE in = $memory"
)
MEMORIES_OF_ENTITIES = "SELECT in AS memory, out AS entity, relationship FROM mentions WHERE out IN $entities"
ALL_MENTIONS = "SELECT in, out, relationship, created_at FROM mentions"
# What an importer brought earlier (services/importers/resync.py): each memory's source record
# key and fingerprint, read once per re-import.
IMPORTED_FROM = "SELECT id, source, status FROM memory WHERE source.kind = $kind"
FIND_RELATION = "SELECT VALUE id FROM relates_to WHERE in = $a AND out = $b AND relation_type = $relation_type"
RELATE_ENTITIES = (
    "RELATE $a->relates_to->$b SET relation_type = $relation_type, weight = $weight, evidence = $evidence RETURN NONE"
)
ADD_RELATION_EVIDENCE = (
    "UPDATE $id SET evidence = array::union(evidence, $evidence), weight = math::min([1.0, weight + 0.1]) RETURN NONE"
)
ALL_RELATIONS = "SELECT in, out, relation_type, weight, evidence, created_at FROM relates_to"
COUNT_ENTITIES = "SELECT count() AS n FROM entity GROUP ALL"
COUNT_RELATIONS = "SELECT count() AS n FROM relates_to GROUP ALL"

# --- memory -> memory links ------------------------------------------------------
FIND_LINK = "SELECT VALUE id FROM memory_link WHERE in = $a AND out = $b AND relation_type = $relation_type"
CREATE_LINK = "RELATE $a->memory_link->$b SET relation_type = $relation_type, strength = $strength RETURN NONE"
ALL_LINKS = "SELECT in, out, relation_type, strength, created_at FROM memory_link"
# One page of a graph table in id order: $range runs from just after the last id read to the
# end of the table, and a range scan returns its records in id order, so LIMIT reads the next
# $limit records and costs only those (an export reads the tables a page per lock hold).
HISTORY_PAGE = "SELECT * FROM $range LIMIT $limit"
ENTITIES_PAGE = "SELECT * FROM $range LIMIT $limit"
MENTIONS_PAGE = "SELECT id, in, out, relationship, created_at FROM $range LIMIT $limit"
RELATIONS_PAGE = "SELECT id, in, out, relation_type, weight, evidence, created_at FROM $range LIMIT $limit"
LINKS_PAGE = "SELECT id, in, out, relation_type, strength, created_at FROM $range LIMIT $limit"
LINKS_OF_MEMORY = "SELECT in, out, relation_type, strength FROM memory_link WHERE in = $memory OR out = $memory"

# --- sessions / promotion / queue ----------------------------------------------------
UPSERT_SESSION = "UPSERT type::thing('session_registry', $key) MERGE $fields RETURN NONE"
GET_SESSION = "SELECT * FROM type::thing('session_registry', $key)"
SESSIONS_BY_STATUS = "SELECT * FROM session_registry WHERE status = $status ORDER BY started_at DESC"
CREATE_PROMOTION_LOG = "CREATE promotion_log CONTENT $entry RETURN NONE"
PROMOTIONS_OF = "SELECT * FROM promotion_log WHERE memory_id = $memory_id"
ENQUEUE = "CREATE consolidation_queue CONTENT $entry RETURN NONE"
QUEUED_FOR = (
    "SELECT VALUE id FROM consolidation_queue WHERE memory = $memory AND reason = $reason AND status = 'pending'"
)
PENDING_QUEUE = "SELECT * FROM consolidation_queue WHERE status = 'pending' ORDER BY priority DESC LIMIT $limit"
COMPLETE_QUEUE = "UPDATE consolidation_queue SET status = 'completed', processed_at = time::now() WHERE memory IN $memories AND status = 'pending' RETURN NONE"

# --- graph: one node per case-folded name (schema v3) ----------------------------------
ENTITIES_BY_NAME_KEY = "SELECT * FROM entity WHERE name_key = $name_key"
UPSERT_ENTITY_NODE = "UPSERT type::thing('entity', $key) MERGE $record RETURN NONE"
SET_ENTITY_TYPE = (
    "UPDATE type::thing('entity', $key) SET entity_type = $entity_type, updated_at = time::now() RETURN NONE"
)
BUMP_ENTITY_MENTIONS = (
    "UPDATE type::thing('entity', $key) SET mention_count += $n, updated_at = time::now() RETURN NONE"
)
GET_ENTITY = "SELECT * FROM type::thing('entity', $key)"

# --- import: restore graph rows with their own timestamps ------------------------------
IMPORT_ENTITY = "CREATE type::thing('entity', $key) CONTENT $record RETURN NONE"
IMPORT_MENTION = (
    "RELATE $memory->mentions->$entity SET relationship = $relationship, created_at = $created_at RETURN NONE"
)
#: Many mentions in one statement: a RELATE each cost ~0.75 ms in the engine, 15 s for an
#: entity's 20,000 observations; this inserts 1,000 in ~0.27 s (issue 35).
IMPORT_MENTIONS = "INSERT RELATION INTO mentions $rows RETURN NONE"
IMPORT_RELATION = (
    "RELATE $a->relates_to->$b SET relation_type = $relation_type, weight = $weight, evidence = $evidence, "
    "created_at = $created_at RETURN NONE"
)
IMPORT_LINK = "RELATE $a->memory_link->$b SET relation_type = $relation_type, strength = $strength, created_at = $created_at RETURN NONE"

# --- purge: history entries rewritten without the forgotten text -------------------------
SET_HISTORY_SNAPSHOT = "UPDATE $id SET snapshot = $snapshot RETURN NONE"

# --- sessions: activity keeps a live session from being recovered ----------------------
TOUCH_SESSION = (
    "UPSERT type::thing('session_registry', $key) SET session_id = $session_id, last_seen_at = time::now() RETURN NONE"
)

# --- project sightings (user store; schema v3): the "seen in >= 2 projects" signal -------
UPSERT_SIGHTING = "UPSERT type::thing('project_sighting', $key) CONTENT $record RETURN NONE"
ALL_SIGHTINGS = "SELECT project, memory_id, fingerprint, embedding, embedding_model FROM project_sighting"
DELETE_SIGHTING = "DELETE type::thing('project_sighting', $key) RETURN NONE"

# --- changes stated in a project (user store; schema v6): read by the user's other projects -------
UPSERT_PROJECT_CHANGE = "UPSERT type::thing('project_change', $key) CONTENT $record RETURN NONE"
DELETE_PROJECT_CHANGE = "DELETE type::thing('project_change', $key) RETURN NONE"
RECENT_PROJECT_CHANGES = (
    "SELECT project, project_name, memory_id, content, created_at FROM project_change "
    "WHERE project != $project AND created_at >= $since ORDER BY created_at DESC LIMIT $limit"
)
# graph traversal without reading the whole entity table (indexed lookups only)
ENTITIES_BY_NAME_KEYS = "SELECT * FROM entity WHERE name_key IN $name_keys"
TOP_ENTITIES = "SELECT * FROM entity ORDER BY mention_count DESC LIMIT $limit"
EDGES_FROM = "SELECT in, out, relation_type, weight FROM relates_to WHERE in IN $frontier"
EDGES_TO = "SELECT in, out, relation_type, weight FROM relates_to WHERE out IN $frontier"
# batch form of QUEUED_FOR/ENQUEUE for the maintenance pass (one round trip, not two per memory)
QUEUED_MEMORIES = "SELECT VALUE memory FROM consolidation_queue WHERE reason = $reason AND status = 'pending'"
ENQUEUE_MANY = "INSERT INTO consolidation_queue $entries RETURN NONE"

# --- repair: records holding NUL (written before it was refused) -----------------------------
# The engine stores such a string but fails to serialise any answer holding it. The function
# removes NUL from every string and object key of a value; NUL travels as the parameter $nul
# (SurrealQL refuses it in a literal, and closures do not see outer parameters, hence the
# transpose that hands it to each element). Defined, used and removed in one transaction.
INFO_FOR_DB = "INFO FOR DB"
DEFINE_DENUL_FUNCTION = """DEFINE FUNCTION OVERWRITE fn::engram_denul($v: any, $nul: string) {
  RETURN IF type::is::string($v) { string::replace($v, $nul, '') }
  ELSE IF type::is::array($v) { array::map(array::transpose([$v, array::repeat($nul, array::len($v))]), |$p| fn::engram_denul($p[0], $p[1])) }
  ELSE IF type::is::object($v) { object::from_entries(array::map(array::transpose([object::entries($v), array::repeat($nul, array::len(object::entries($v)))]), |$p| [string::replace($p[0][0], $p[1], ''), fn::engram_denul($p[0][1], $p[1])])) }
  ELSE { $v };
}"""
REPAIR_NUL_IN_TABLE = "UPDATE type::table($table) CONTENT fn::engram_denul($this, $nul) WHERE string::contains(<string> $this, $nul) RETURN VALUE id"
REMOVE_DENUL_FUNCTION = "REMOVE FUNCTION IF EXISTS fn::engram_denul"

# --- after a crash: what a torn transaction left (store.py, `_reconcile_after_crash`) -------
# The engine keeps the first writes of a transaction the log lost the end of (measured: a
# history row without the update it belongs to). History holds versions 1 .. version - 1 of a
# memory, so a row at or above the memory's version is an update that never landed. A record
# written without its version holds version 1 (storage/memory_shape.py); every record holds its
# content, so `memory.content != NONE` says the memory still exists.
DROP_TORN_HISTORY = (
    "DELETE memory_history WHERE memory.content != NONE AND version >= (memory.version ?? 1) RETURN BEFORE"
)

# --- purge now: a memory's history and mentions go with its text ---------------------------
DELETE_HISTORY_OF = "DELETE memory_history WHERE memory = $memory RETURN NONE"
DELETE_MENTIONS_OF = "DELETE mentions WHERE in = $memory RETURN NONE"
ENTITIES_MENTIONED_BY = "SELECT VALUE out FROM mentions WHERE in = $memory"
# an entity no other memory mentions goes with the purged one (its name may be the secret), edges too
DELETE_ORPHAN_ENTITIES = (
    "FOR $e IN $entities { IF count((SELECT id FROM mentions WHERE out = $e)) = 0 { "
    "DELETE relates_to WHERE in = $e OR out = $e RETURN NONE; DELETE $e RETURN NONE; }; }"
)

# Write statements that never change what the derived retrieval index holds (it reads memory
# records and memory -> memory links). Every OTHER write, including any statement added later
# and not listed here, is committed together with BUMP_CHANGES (store.py), so a persisted
# index stamped with the counter can only ever be too cautious, never trusted while stale.
# tests/test_index_persist.py checks that none of these names the memory or memory_link table.
UNINDEXED_WRITES = frozenset(
    {
        SET_SCHEMA_VERSION,
        SET_META,
        BUMP_CHANGES,
        LOG_CHANGE,
        PRUNE_CHANGES,
        CREATE_HISTORY,
        UPSERT_ENTITY,
        RELATE_MENTION,
        UNLINK_MENTIONS_BY_NAME,
        RELATE_ENTITIES,
        ADD_RELATION_EVIDENCE,
        UPSERT_SESSION,
        CREATE_PROMOTION_LOG,
        ENQUEUE,
        COMPLETE_QUEUE,
        UPSERT_ENTITY_NODE,
        SET_ENTITY_TYPE,
        BUMP_ENTITY_MENTIONS,
        IMPORT_ENTITY,
        IMPORT_MENTION,
        IMPORT_MENTIONS,
        IMPORT_RELATION,
        SET_HISTORY_SNAPSHOT,
        TOUCH_SESSION,
        UPSERT_SIGHTING,
        DELETE_SIGHTING,
        UPSERT_PROJECT_CHANGE,
        DELETE_PROJECT_CHANGE,
        ENQUEUE_MANY,
        DEFINE_DENUL_FUNCTION,
        REMOVE_DENUL_FUNCTION,
        DELETE_HISTORY_OF,
        DROP_TORN_HISTORY,
        DELETE_MENTIONS_OF,
        DELETE_ORPHAN_ENTITIES,
    }
)
