"""Agent profiles: who the model is in a chat, which tools it has, and what it may read and write.

Built in: an orchestrator (background context, all tools), a cheaper "easy" orchestrator, a worker
(executor tools, no background context) and a planner (reads and delegates, never writes).
"""

from __future__ import annotations

import re
from dataclasses import dataclass, replace

from core.errors import InvalidInput

READ_TOOLS = ("queryNodes", "getNodesById", "searchContent", "queryEdges", "sqliteQuery")
WRITE_TOOLS = ("createNode", "updateNode", "createEdge", "updateEdge")
# The tool order is part of the cached prefix, so new tools are appended: activateSkill, then
# captureUrl (a write that needs no confirmation, as createNode; core/capture/web.py does the work).
ALL_TOOLS = READ_TOOLS + WRITE_TOOLS + ("delegate", "activateSkill", "captureUrl")


@dataclass(frozen=True)
class Agent:
    name: str
    role: str  # orchestrator | worker | planner
    description: str
    instructions: str
    tools: tuple[str, ...]
    model: str | None = None  # None: the configured model (agents.<name> in the config beats both)
    cheap_model: bool = False  # prefer the provider's smaller model when no model is configured
    background: bool = False  # hubs in the cached prefix (orchestrators only)
    auto_read: bool = True  # retrieved passages in each message's suffix
    # Two lists, never mixed (Ontheia's read namespaces vs tool_read_namespaces), set in the config's
    # [read_scope] and [tool_scope] tables (`get(name, config)`): read_scope limits what is injected
    # automatically (core/chat/context.py `_readable`); tool_scope limits what the node-reading tools
    # may reach (queryNodes, getNodesById, searchContent, queryEdges; sqliteQuery is refused under a scope).
    read_scope: tuple[str, ...] = ()  # dimensions retrieval may read; empty: all
    tool_scope: tuple[str, ...] = ()  # dimensions the read tools may reach; empty: all
    allow_write: bool = False  # save run input (80+ chars) and output as type='memory' nodes


BUILT_IN = {
    a.name: a
    for a in (
        Agent(
            "orchestrator", "orchestrator", "Talks with you about your graph; can read, write and delegate.",
            "You are ${user_name}'s knowledge partner inside Cairn. Answer from the graph when it holds the "
            "answer, cite what you use, and say plainly when the graph does not know. Propose new nodes and "
            "edges when the conversation produces something worth keeping.",
            ALL_TOOLS, background=True,
        ),
        Agent(
            "easy", "orchestrator", "A cheaper orchestrator for quick questions.",
            "You are ${user_name}'s quick assistant inside Cairn. Be brief; cite what you use.",
            ALL_TOOLS, cheap_model=True, background=True,
        ),
        Agent(
            "worker", "worker", "Executes one delegated task with search and read tools.",
            "You carry out one task handed to you by another agent. Use the tools to find what the task needs, "
            "then answer with the result only, citing the nodes you used.",
            READ_TOOLS + ("createNode", "captureUrl"), auto_read=True, allow_write=True,
        ),
        Agent(
            "planner", "planner", "Breaks a goal into steps and delegates them; never writes.",
            "You plan. Break the goal into small steps, delegate each to the worker agent, and combine the "
            "results into a plan that cites its sources.",
            READ_TOOLS + ("delegate",),
        ),
    )
}

# Variables that change every minute would make the cached prefix different on every request.
_TIME_VARIABLES = {"date", "time", "now", "datetime", "today", "timestamp", "current_time", "current_date"}
_VARIABLE = re.compile(r"\$\{([A-Za-z_][A-Za-z0-9_]*)\}")


def get(name: str, config=None) -> Agent:
    """The built-in agent `name`, with the scopes `config` gives it ([read_scope] and [tool_scope])."""
    try:
        agent = BUILT_IN[name]
    except KeyError:
        raise InvalidInput(f"Unknown agent {name!r}; the agents are {', '.join(BUILT_IN)}.") from None
    if config is None:
        return agent
    scopes = {}
    for kind in ("read_scope", "tool_scope"):
        configured = getattr(getattr(config, kind, None), name, None)
        if configured:
            scopes[kind] = tuple(dict.fromkeys(d.strip() for d in configured if d.strip()))
    return replace(agent, **scopes) if scopes else agent


def facts(agent: Agent, model: str) -> dict:
    """What `cairn context` and the Context viewer show of the agent a request is for."""
    return {"name": agent.name, "model": model, "read_scope": list(agent.read_scope),
            "tool_scope": list(agent.tool_scope)}


def facts_line(agent: Agent, model: str) -> str:
    def scope(s: tuple[str, ...]) -> str:
        return ", ".join(s) if s else "all"

    return (f"agent {agent.name} on {model} · retrieval reads {scope(agent.read_scope)} · "
            f"tools reach {scope(agent.tool_scope)}")


def resolve_instructions(text: str, values: dict[str, str]) -> str:
    """Fill `${name}` variables when a conversation starts. Date/time variables are refused: the
    system part is cached, and the date/time is already added to each message's suffix."""
    used = set(_VARIABLE.findall(text))
    timely = sorted(used & _TIME_VARIABLES)
    if timely:
        raise InvalidInput(
            f"The agent instructions use {', '.join('${' + v + '}' for v in timely)}: a date or time in the "
            "system part would change the cached prefix every minute and break prompt caching. Remove it; "
            "the current date and time are added to the end of every message instead."
        )
    unknown = sorted(used - set(values))
    if unknown:
        raise InvalidInput(f"Unknown variable(s) {', '.join('${' + v + '}' for v in unknown)} in the agent "
                           f"instructions; known: {', '.join('${' + k + '}' for k in sorted(values))}.")
    return _VARIABLE.sub(lambda m: values[m.group(1)], text)


def with_overrides(agent: Agent, **changes) -> Agent:
    return replace(agent, **changes)
