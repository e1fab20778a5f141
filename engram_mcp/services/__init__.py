"""The memory logic: store, recall, update, promotion, decay, consolidation, import/export.

Each operation is a module function `op(access, ctx, **args)` over `access.ScopeAccess`;
`service.MemoryService` is the one composition root, which no other module here imports.
Imports index, storage and core; never the daemon or an interface.
"""
