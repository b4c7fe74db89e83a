"""The graph: the SQLite file and its migrations, nodes and edges (store), the trash, memory,
retirement, retention, and what may leave the machine (privacy)."""
