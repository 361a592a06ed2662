"""The ground floor: the record types every stage exchanges and the helpers they share.

It imports no other LedgerBench package (tests/test_layering.py checks), so every stage, and the
roof above them, can import it without creating a cycle.
"""
