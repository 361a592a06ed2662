"""Synthetic research world: the public companies, filings, news and market data around the ERP.

Facts first: a seeded ledger of figures, events and prices for a universe of companies (most of
them the ERP's customers and vendors), then every document rendered from those facts, indexed for
BM25 search, with one snapshot hash. Questions with computed keys and gold documents come from
the same ledger; an MCP server (search, fetch, company, prices) serves the world to agents.
"""
