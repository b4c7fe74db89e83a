"""LLM providers behind one streaming interface.

Each provider turns a `ContextRequest` (plus the current turn's tool-loop messages) into its own
request body, in the block order DESIGN.md fixes, with its own cache markers, and yields `StreamEvent`s:
text deltas, complete tool calls, usage, a stop reason, or an error with a sentence a user understands.
"""
