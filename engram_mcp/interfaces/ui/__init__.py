"""`engram ui`: the local web viewer and curator (server.py; the page is in static/)."""
