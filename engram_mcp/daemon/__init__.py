"""The per-user daemon process, its connections and write queue, and the client that reaches it.

The client and the queue are standard library only: interfaces import them.
"""
