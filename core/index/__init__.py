"""Indexing: chunk a node's text, embed the chunks on this machine, and keep the vectors in step
(resumably)."""
