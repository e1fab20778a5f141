"""The memory logic: store, recall, update, promotion, decay, consolidation, import/export.

Imports index, storage and core; never the daemon or an interface.
"""
