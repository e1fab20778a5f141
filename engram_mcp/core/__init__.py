"""Foundation shared by every layer: errors, ids, paths, configuration, redaction.

Standard library only where hooks import it; imports nothing else of engram.
"""
