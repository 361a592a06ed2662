"""ERP MCP server: read-only finance tools over the synthetic ERP, with citable record URLs."""
