"""Who the model is and what it may do: agent profiles, skills, the tools (also served over MCP), read-
only SQL."""
