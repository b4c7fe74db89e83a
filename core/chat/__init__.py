"""A conversation with a model: the context engine, the one request builder, the turn and its tool
loop, citations, usage."""
