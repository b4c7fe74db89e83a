"""Finding nodes: full-text, vector and hybrid search, the safe FTS query, browsing, fuzzy titles, and
the chat's retrieval fallbacks."""
