"""The month replay (issue 33): a coding-month world replayed through engram's hooks, scored by the world's score.py.

`run.py` is the entry point; `quick.py` drives the hooks as processes (the test suite's mode),
`standin.py` is the scripted stand-in for Claude (two policies), `clock.py` puts every engram
process on the world's calendar, `report.py` scores and writes the report. See README.md.
"""
