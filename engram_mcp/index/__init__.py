"""Derived search structures: tokenizer, slots, vectors, BM25, the per-scope index, scoring and ranking.

Why in-memory indexes: SurrealDB is the system of record, but its own search indexes are far too
slow and too large for recall (measured on the embedded engine: a common BM25 word takes ~100-400
ms at 10k rows, HNSW grows by ~1.9 MB per single insert, and building either over 100k existing
rows did not finish in five minutes). So retrieval runs on indexes held in process memory, rebuilt
from the records when a store is opened (`set_many`) and updated on every write (`set` / `clear`).

Modules, bottom up: `tokenizer` (BM25 terms), `arrays` (top-k and mask helpers), `slots` (memory
id -> dense slot), `vectors` (exact cosine), `bm25` (incremental BM25), `scope_index` (one scope's
columns, filters and both indexes), `scoring` (decay, fusion, priors), `retrieval` (cross-scope
ranking), `embeddings` (the offline model).

Rebuilt from storage; imports only core.
"""
