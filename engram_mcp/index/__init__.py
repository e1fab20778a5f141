"""Derived search structures: tokenizer, vectors, BM25, the per-scope index, scoring and ranking.

Rebuilt from storage; imports only core.
"""
