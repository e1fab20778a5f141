"""Storage: the embedded SurrealDB system of record (schema, migrations, SurrealQL)."""
