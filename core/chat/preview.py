"""What the next message would send, without sending it: for `cairn context` and the Context viewer
(nothing is written, except what reading a chat repairs as a turn would: a prefix re-rendered because
one of its nodes has since been made private). In an existing chat it is that chat's own next request (`Chat.request`); in a chat not
started yet, the request a new chat's first turn builds (core/chat/request.py), as chat "new"."""

from __future__ import annotations

from dataclasses import dataclass

from core.agent import profiles
from core.chat import request as chat_request
from core.chat import window as window_policy
from core.chat.conversation import Chat
from core.chat.focus import Focus
from core.graph.store import Store
from core.providers.base import Provider, Turn
from core.providers.request import ContextRequest

NEW_CHAT_KEY = "cairn-chat-new"


@dataclass
class Preview:
    request: ContextRequest
    chat_key: str  # the prompt-cache key the request would carry
    retrieval_note: str | None  # why retrieval fell back to keywords, else None
    chat: Chat | None  # the chat it continues, None for a new one
    provider: Provider  # the one given, on the agent's model (core/chat/request.py model_for)
    agent: profiles.Agent
    model_note: str = ""  # why agents.<name> in the config is not the model used (core/chat/request.py model_note)

    def window(self, message: str = "") -> "window_policy.Prediction":
        """What the context-window policy would do with this request (core/chat/window.py predict)."""
        calibration = (window_policy.Calibration.from_metadata(self.chat.metadata) if self.chat is not None
                       else window_policy.Calibration())
        turn = Turn(self.request, [], self.chat_key)
        return window_policy.predict(self.provider, turn, calibration, message=message,
                                     can_summarise=self.chat is not None and self.chat.can_summarise())

    @property
    def agent_facts(self) -> dict:
        """name, model, read_scope and tool_scope of the agent the request is for."""
        return dict(profiles.facts(self.agent, self.provider.model), model_note=self.model_note)

    @property
    def agent_line(self) -> str:
        line = profiles.facts_line(self.agent, self.provider.model)
        return f"{line}\n{self.model_note}" if self.model_note else line


def next_request(store: Store, config, provider, message: str, *, focus: Focus | None = None,
                 chat_id: int | None = None, searcher=None) -> Preview:
    """The request `message` would send to `provider` in chat `chat_id` (None: a new chat)."""
    from core.search.searcher import Searcher

    focus = focus or Focus()
    searcher = searcher or Searcher(store)
    if chat_id is not None:
        chat = Chat(store, config, provider, chat_id=chat_id, searcher=searcher)
        request = chat.request(message, focus=focus)
        return Preview(request, chat.chat_key, chat.engine.retrieval_note, chat, chat.provider, chat.agent,
                       chat_request.model_note(chat.agent, config, provider.name))
    agent = profiles.get(config.chat.agent, config)
    provider = chat_request.provider_for(agent, config, provider)
    engine = chat_request.engine(store, searcher, agent, config, provider)
    engine.set_focus(focus)
    snapshot = engine.snapshot(chat_request.variables(config, chat_id="new", agent=agent, model=provider.model))
    request = chat_request.build(engine, snapshot, [], message, provider.model, provider=provider)
    return Preview(request, NEW_CHAT_KEY, engine.retrieval_note, None, provider, agent,
                   chat_request.model_note(agent, config, provider.name))
