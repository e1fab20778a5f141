"""Translations of the outside world into service calls: MCP server, stand-in, CLI, hooks.

They reach the service only through the daemon client.
"""
