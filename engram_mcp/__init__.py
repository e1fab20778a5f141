"""engram: lasting, hierarchical memory for Claude Code.

This package must stay cheap to import: hook processes import `engram_mcp.daemon.client`
and `engram_mcp.interfaces.hooks` and have a ~100 ms budget, so nothing heavy is imported here.
"""

__version__ = "0.1.0"
