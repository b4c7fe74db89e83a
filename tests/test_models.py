"""The model table (core/providers/models.py): it covers the defaults, an unknown model gets its
strictest figures and a flag, local models have no price, and the providers send within its limits."""

from __future__ import annotations

from core.config import DEFAULT_MODELS
from core.providers import models
from core.providers.base import Turn, Usage


def test_the_table_covers_the_default_models_and_the_viewers_choices():
    from tui.widgets.context_viewer import MODEL_CHOICES

    for provider, model in DEFAULT_MODELS.items():
        if provider != "offline":
            row = models.facts(model, provider)
            assert row.known and row.provider == provider, model
    for provider, choices in MODEL_CHOICES.items():
        for model in choices if provider != "offline" else ():
            assert models.facts(model, provider).known, model


def test_every_row_is_complete():
    for name, row in models.MODELS.items():
        assert row.model == name and row.provider in ("anthropic", "openai")
        assert row.context_window > 0 and 0 < row.max_output < row.context_window and row.min_cacheable > 0
        assert None not in (row.input, row.cache_write_5m, row.cache_write_1h, row.cache_read, row.output)
        assert row.cache_read < row.input <= row.cache_write_5m <= row.cache_write_1h
        assert row.output > row.input


def test_the_figures_the_brief_names():
    assert models.facts("claude-sonnet-4-6").min_cacheable == 2048  # stricter than the documented 1,024
    for name in ("claude-opus-4-6", "claude-opus-4-5", "claude-haiku-4-5"):
        assert models.facts(name).min_cacheable == 4096
    assert models.facts("claude-sonnet-4-6").input == 3.00 and models.facts("claude-sonnet-4-6").cache_write_1h == 6.00
    assert models.facts("gpt-4.1-mini").min_cacheable == 1024
    assert models.facts("gpt-4.1").cache_retention_24h and not models.facts("gpt-4.1-mini").cache_retention_24h


def test_snapshot_ids_find_their_alias():
    assert models.facts("claude-haiku-4-5-20251001").model == "claude-haiku-4-5"
    assert models.facts("gpt-4.1-mini-2025-04-14").model == "gpt-4.1-mini"
    assert not models.facts("gpt-4.1-mini-preview").known  # only a date (or -latest) is a snapshot


def test_an_unknown_model_gets_the_strictest_figures_and_a_flag():
    unknown = models.facts("claude-next-9", "anthropic")
    assert not unknown.known and unknown.model == "claude-next-9" and unknown.provider == "anthropic"
    rows = models.MODELS.values()
    assert unknown.context_window == min(r.input_limit for r in rows)
    assert unknown.max_output == min(r.max_output for r in rows)
    assert unknown.min_cacheable == max(r.min_cacheable for r in rows)
    assert unknown.input is None and unknown.cost(Usage(10, 10)) is None
    assert unknown.assumed.startswith("unknown model: assumed a 128,000-token window")
    assert models.facts("claude-sonnet-4-6").assumed == ""
    # a known name under the other provider is not that model
    assert not models.facts("gpt-4.1", "anthropic").known


def test_a_local_model_has_no_price_and_the_local_window():
    local = models.facts("llama3.2", "openai", local=True)
    assert local.provider == "local" and local.known and local.assumed == ""
    assert local.context_window == models.LOCAL_CONTEXT_WINDOW and local.input is None
    assert models.output_cap(local, 9000) == 9000  # the server cuts its own reply


def test_cost_of_a_reply():
    sonnet = models.facts("claude-sonnet-4-6")
    # Anthropic's input counts cache writes and reads (core.providers.base.Usage)
    usage = Usage(input=1_000_000 + 2_000_000 + 3_000_000, output=1_000_000, cache_write=2_000_000, cache_read=3_000_000)
    assert round(sonnet.cost(usage), 6) == round(3.00 + 2 * 3.75 + 3 * 0.30 + 15.00, 6)
    gpt = models.facts("gpt-4.1-mini")
    assert round(gpt.cost(Usage(input=2_000_000, output=0, cache_read=1_000_000)), 6) == round(0.40 + 0.10, 6)


def test_providers_know_their_models_facts():
    from core.providers.anthropic_provider import AnthropicProvider
    from core.providers.openai_provider import OpenAIProvider

    assert AnthropicProvider("", "claude-sonnet-4-6").facts.max_output == 64_000
    assert OpenAIProvider("", "gpt-4o-mini").facts.max_output == 16_384
    assert models.output_cap(models.facts("gpt-4o-mini"), 100_000) == 16_384
    assert OpenAIProvider("", "llama3.2", base_url="http://127.0.0.1:11434/v1").facts.provider == "local"


# -- OpenAI and the compatible servers (issue 14, item 8) ---------------------------------------------


import pytest  # noqa: E402


@pytest.fixture(autouse=True)
def _no_proxies(monkeypatch):
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)


def _send(provider, max_tokens: int = 300) -> list:
    from core.chat.request import one_shot

    turn = Turn(one_shot("You answer briefly.", "hello", provider.model), [], "cairn-chat-7", max_tokens)
    events = list(provider.stream(turn))
    assert [e for e in events if e.type == "error"] == []
    return events


def test_compatible_servers_get_max_tokens_and_no_retention():
    from fakes import FakeOpenAI
    from core.providers.openai_provider import OpenAIProvider, is_compatible

    assert is_compatible("http://127.0.0.1:11434/v1") and is_compatible("https://openrouter.ai/api/v1")
    assert not is_compatible(None) and not is_compatible("https://api.openai.com/v1")
    with FakeOpenAI(compatible=True) as srv:
        provider = OpenAIProvider("local", "gpt-4.1", base_url=srv.base_url, cache_ttl="1h")
        _send(provider)
        body = srv.last.body
        assert body["max_tokens"] == 300 and "max_completion_tokens" not in body
        assert "prompt_cache_retention" not in body and body["prompt_cache_key"] == "cairn-chat-7"
        assert srv.last.cache["output_limit"] == 300  # the limit the server read


def test_openai_gets_max_completion_tokens_and_the_retention_where_the_model_takes_it():
    from fakes import FakeOpenAI
    from core.providers.openai_provider import OpenAIProvider

    with FakeOpenAI() as srv:  # plays api.openai.com: it refuses the retention on gpt-4.1-mini
        for model, ttl, retention in (("gpt-4.1", "1h", "24h"), ("gpt-4.1", "5m", None),
                                      ("gpt-4.1-mini", "1h", None), ("gpt-5-mini", "1h", None)):
            provider = OpenAIProvider("k", model, base_url=srv.base_url, cache_ttl=ttl, compatible=False)
            _send(provider)
            body = srv.last.body
            assert body["max_completion_tokens"] == 300 and "max_tokens" not in body, model
            assert body.get("prompt_cache_retention") == retention, (model, ttl)
            assert srv.last.cache["output_limit"] == 300
        # never above the model's maximum output (the fake refuses more)
        _send(OpenAIProvider("k", "gpt-4o-mini", base_url=srv.base_url, compatible=False), max_tokens=50_000)
        assert srv.last.body["max_completion_tokens"] == 16_384


def test_anthropic_max_tokens_never_above_the_models_output():
    from fakes import FakeAnthropic
    from core.providers.anthropic_provider import AnthropicProvider

    with FakeAnthropic() as srv:
        _send(AnthropicProvider("k", "claude-haiku-4-5", base_url=srv.base_url), max_tokens=100_000)
        assert srv.last.body["max_tokens"] == 64_000


def test_the_factory_passes_the_cache_choice_to_openai(monkeypatch):
    from core.config import ChatSettings, Config
    from core.providers.factory import make_provider

    monkeypatch.setenv("OPENAI_API_KEY", "k")
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    cfg = Config()
    cfg.chat = ChatSettings(provider="openai", model="gpt-4.1", cache_ttl="1h")
    provider = make_provider(cfg)
    assert not provider.compatible and provider.cache_ttl == "1h"
    from core.chat.request import one_shot

    body = provider.body(Turn(one_shot("s", "u", "gpt-4.1"), [], "key"))
    assert body["prompt_cache_retention"] == "24h" and "max_completion_tokens" in body


# -- the cost in money (issue 14, item 7) -----------------------------------------------------------------


def test_an_anthropic_reply_is_priced_with_its_cache_writes_at_the_ttl_and_its_reads():
    from core.chat.cost import Pricer

    # claude-sonnet-4-6: $3 input, $3.75 5m write, $6 1h write, $0.30 read, $15 output per million.
    # Anthropic's input counts its cache parts: 1,200 plain + 10,000 written + 50,000 read.
    usage = Usage(input=61_200, output=800, cache_write=10_000, cache_read=50_000)
    five = Pricer("5m").price(usage, "anthropic", "claude-sonnet-4-6")
    # 1,200 x 3 + 10,000 x 3.75 + 50,000 x 0.30 + 800 x 15 = 3,600 + 37,500 + 15,000 + 12,000 = 68,100 / 1e6
    assert round(five.usd, 9) == 0.0681 and five.label() == "$0.0681"
    hour = Pricer("1h").price(usage, "anthropic", "claude-sonnet-4-6")
    # the writes at $6: 3,600 + 60,000 + 15,000 + 12,000 = 90,600 / 1e6
    assert round(hour.usd, 9) == 0.0906 and hour.label() == "$0.0906"
    # a dated snapshot id prices as its alias
    assert Pricer().price(usage, "anthropic", "claude-sonnet-4-6-20260101").label() == "$0.0681"


def test_an_openai_reply_prices_its_cached_tokens_as_a_part_of_the_input():
    from core.chat.cost import Pricer

    # gpt-4.1-mini: $0.40 input, $0.10 cached input, $1.60 output. prompt_tokens 3,000 of which cached 2,048.
    usage = Usage(input=3_000, output=150, cache_read=2_048)
    cost = Pricer("1h").price(usage, "openai", "gpt-4.1-mini")  # OpenAI writes cost input either way
    # 952 x 0.40 + 2,048 x 0.10 + 150 x 1.60 = 380.8 + 204.8 + 240 = 825.6 / 1e6
    assert round(cost.usd, 10) == 0.0008256 and cost.label() == "$0.0008256"


def test_offline_local_and_unknown_models_say_why_they_have_no_figure():
    from core.chat.cost import Pricer, usd
    from core.providers.offline import OfflineProvider
    from core.providers.openai_provider import OpenAIProvider

    usage = Usage(input=5_000, output=500)
    assert Pricer().for_provider(usage, OfflineProvider()).label() == "no price"
    assert Pricer().price(usage, "offline", None).label() == "no price"
    local = OpenAIProvider("local", "llama3.2", base_url="http://127.0.0.1:11434/v1")
    assert Pricer().for_provider(usage, local).label() == "no price"
    # stored rows: the OpenAI provider is local when its configured base URL is on loopback
    from core.config import Config
    cfg = Config()
    cfg.chat.base_url = "http://localhost:11434/v1"
    assert Pricer.from_config(cfg).price(usage, "openai", "llama3.2").label() == "no price"
    assert Pricer().price(usage, "openai", "llama3.2").label() == "price unknown (model llama3.2)"
    assert Pricer().price(usage, "anthropic", "claude-next-9").label() == "price unknown (model claude-next-9)"
    # sums: local adds nothing; an unknown model is still named beside what is known
    known = Pricer().price(usage, "anthropic", "claude-haiku-4-5")  # 5,000 x 1 + 500 x 5 = 7,500 / 1e6
    assert known.label() == "$0.007500"
    assert (known + Pricer().price(usage, "offline", "")).label() == "$0.007500"
    assert (known + Pricer().price(usage, "openai", "llama3.2")).label() == "$0.007500 + price unknown (model llama3.2)"
    assert usd(0.0123) == "$0.0123" and usd(12.5) == "$12.50" and usd(0) == "$0.00"


def test_a_local_servers_window_comes_from_the_config(tmp_path):
    """chat.local_context_window says the window (and beats what a server reports, tests/test_local_window.py);
    a server that says nothing (here: none listens on port 9) leaves Ollama's default, assumed."""
    from core import config as config_module
    from core.providers.factory import make_provider, preview_provider

    path = tmp_path / "config.toml"
    path.write_text('[chat]\nprovider = "openai"\nbase_url = "http://127.0.0.1:9/v1"\nmodel = "llama3.2"\n')
    cfg = config_module.load(path)
    assert make_provider(cfg).facts.context_window == 4096  # 0: Ollama's default
    assert make_provider(cfg).facts.assumed.startswith("local model: assumed a 4,096-token window")
    config_module.set_value("chat.local_context_window", "32768", path)
    cfg = config_module.load(path)
    for provider in (make_provider(cfg), preview_provider(cfg)):
        assert provider.facts.provider == "local" and provider.facts.context_window == 32768


def test_a_deprecated_model_says_when_it_retires_and_what_replaces_it():
    from datetime import date

    from core.providers.models import facts

    sonnet = facts("claude-sonnet-4-5-20250929", "anthropic")  # a dated id finds its alias, and its date
    assert sonnet.retirement(date(2026, 11, 1)) == (
        "claude-sonnet-4-5 is deprecated and retires on 2026-11-30; choose claude-sonnet-4-6 "
        "(cairn config set chat.model claude-sonnet-4-6).")
    assert sonnet.retirement(date(2026, 11, 30)).startswith("claude-sonnet-4-5 was retired on 2026-11-30: the API "
                                                            "refuses it (404)")
    assert facts("claude-sonnet-4-6", "anthropic").retirement() == ""


def test_the_defaults_and_the_settings_choices_are_never_deprecated():
    from core.config import CHEAP_MODELS, DEFAULT_MODELS
    from core.providers.models import facts
    from tui.widgets.context_viewer import MODEL_CHOICES

    for provider in ("anthropic", "openai"):
        for model in (DEFAULT_MODELS[provider], CHEAP_MODELS[provider], *MODEL_CHOICES[provider]):
            assert facts(model, provider).known and not facts(model, provider).retires, model
