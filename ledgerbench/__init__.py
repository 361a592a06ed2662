"""LedgerBench core: the dataset format shared by every stage, and the one-command pipeline."""
