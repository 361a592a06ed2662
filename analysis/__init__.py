"""Analysis: mixed models, contrasts, bootstrap intervals and reports."""
