"""The fake provider servers, driven by the real anthropic and openai SDKs over 127.0.0.1."""

from __future__ import annotations

import http.client
import json
import time

import anthropic
import httpx2
import openai
import pytest

from fakes import (
    FakeAnthropic,
    FakeOpenAI,
    cut_after,
    forbidden,
    http_error,
    invalid_tool_json,
    malformed_sse,
    min_cacheable_tokens,
    model_not_found,
    overloaded,
    rate_limited,
    server_error,
    slow,
    stop_reason,
    stream_error,
    text,
    tool_call,
    unauthorized,
)
from fakes.tokens import (
    anthropic_blocks,
    common_prefix_tokens,
    count_text,
    openai_blocks,
)

SONNET = "claude-sonnet-5"  # minimum cacheable prefix 1,024 tokens (the model table); 4-5 is retired
HAIKU = "claude-haiku-4-5"  # 4,096
GPT = "gpt-4o-mini"


@pytest.fixture(autouse=True)
def _no_proxies(monkeypatch):
    for var in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy"):
        monkeypatch.delenv(var, raising=False)


@pytest.fixture
def anth():
    with FakeAnthropic() as srv:
        yield srv
    assert srv.errors == []


@pytest.fixture
def aclient(anth):
    with anthropic.Anthropic(api_key="test-key", base_url=anth.base_url, max_retries=0) as c:
        yield c


@pytest.fixture
def oai():
    with FakeOpenAI() as srv:
        yield srv
    assert srv.errors == []


@pytest.fixture
def oclient(oai):
    with openai.OpenAI(api_key="test-key", base_url=oai.base_url, max_retries=0) as c:
        yield c


def a_stream(client, **kw):
    """Stream with the SDK's helper; returns (events, final message)."""
    kw.setdefault("model", SONNET)
    kw.setdefault("max_tokens", 256)
    kw.setdefault("messages", [{"role": "user", "content": "hi"}])
    with client.messages.stream(**kw) as s:
        events = list(s)
        return events, s.get_final_message()


def long_text(n_tokens: int, seed: str = "x") -> str:
    """ASCII text of exactly n_tokens estimated tokens."""
    return (seed * (4 * n_tokens))[: 4 * n_tokens]


def raw_post(base_url: str, path: str, body: dict) -> tuple[http.client.HTTPResponse, bytes]:
    host, port = base_url.removeprefix("http://").split("/")[0].split(":")
    conn = http.client.HTTPConnection(host, int(port), timeout=5)
    conn.request("POST", path, json.dumps(body), {"content-type": "application/json"})
    resp = conn.getresponse()
    data = resp.read()
    conn.close()
    return resp, data


# ------------------------------------------------------------------------------------------------
# tokens


def test_token_estimate_and_canonical_order():
    assert count_text("") == 0
    assert count_text("abcd") == 1
    assert count_text("abcde") == 2
    assert count_text("é") == 1  # 2 UTF-8 bytes
    body = {
        "tools": [{"name": "t1", "input_schema": {}}, {"name": "t2", "input_schema": {}}],
        "system": [{"type": "text", "text": "sys", "cache_control": {"type": "ephemeral"}}],
        "messages": [
            {"role": "user", "content": "hello"},
            {"role": "assistant", "content": [{"type": "text", "text": "a"}, {"type": "tool_use", "id": "x", "name": "t1", "input": {}}]},
        ],
    }
    blocks = anthropic_blocks(body)
    assert [(b.kind, b.type) for b in blocks] == [
        ("tool", "tool"), ("tool", "tool"), ("system", "text"), ("message", "text"), ("message", "text"), ("message", "tool_use"),
    ]
    assert blocks[2].cache_control == {"type": "ephemeral"} and blocks[2].canonical == "sys"
    assert "cache_control" not in blocks[0].canonical
    # the same text as system or as user is a different block
    assert blocks[3].key != anthropic_blocks({"system": "hello", "messages": []})[0].key


def test_common_prefix_counts_inside_a_differing_block():
    a = openai_blocks({"messages": [{"role": "system", "content": "x" * 4000 + "AAAA"}]})
    b = openai_blocks({"messages": [{"role": "system", "content": "x" * 4000 + "BBBB"}]})
    assert common_prefix_tokens(a, b) == 1000
    c = openai_blocks({"messages": [{"role": "user", "content": "x" * 4000 + "AAAA"}]})
    assert common_prefix_tokens(a, c) == 0  # different role


def test_min_cacheable_tokens_table():
    assert min_cacheable_tokens("claude-sonnet-4-6") == 2048  # the stricter of 1,024 and 2,048
    assert min_cacheable_tokens("claude-sonnet-4-5") == 1024
    assert min_cacheable_tokens("claude-opus-4-5-20251101") == 4096
    assert min_cacheable_tokens("claude-haiku-4-5") == 4096
    assert min_cacheable_tokens("claude-unknown-9") == 4096  # not in the table: its strictest
    assert min_cacheable_tokens("claude-unknown-9", default=1024) == 1024
    assert min_cacheable_tokens("claude-sonnet-4-5", {"sonnet-4-5": 2048}) == 2048
    assert min_cacheable_tokens("anything", 10) == 10


# ------------------------------------------------------------------------------------------------
# Anthropic: wire format and SDK round trips


def test_anthropic_streams_text_and_tool_call(anth, aclient):
    anth.script.add(text("Let me look that up for you."), tool_call("searchContent", {"query": "cairn", "limit": 3}))
    events, msg = a_stream(aclient, tools=[{"name": "searchContent", "input_schema": {"type": "object"}}])
    text_deltas = [e for e in events if e.type == "content_block_delta" and e.delta.type == "text_delta"]
    json_deltas = [e for e in events if e.type == "content_block_delta" and e.delta.type == "input_json_delta"]
    assert len(text_deltas) > 1 and len(json_deltas) > 1
    assert msg.content[0].type == "text" and msg.content[0].text == "Let me look that up for you."
    assert msg.content[1].type == "tool_use" and msg.content[1].name == "searchContent"
    assert msg.content[1].input == {"query": "cairn", "limit": 3}
    assert msg.content[1].id.startswith("toolu_")
    assert msg.stop_reason == "tool_use"
    req = anth.last
    assert req.path == "/v1/messages" and req.body["stream"] is True
    assert req.headers["authorization"] == "Bearer test-key"  # this SDK sends the key as a bearer token
    assert "anthropic-version" in req.headers
    expected_in = sum(b.tokens for b in anthropic_blocks(req.body))
    assert msg.usage.input_tokens == expected_in
    assert msg.usage.output_tokens == count_text("Let me look that up for you." + json.dumps({"query": "cairn", "limit": 3}))
    assert msg.usage.cache_read_input_tokens == 0 and msg.usage.cache_creation_input_tokens == 0


def test_anthropic_non_streaming(anth, aclient):
    anth.script.add(text("Plain answer"), stop_reason("max_tokens"))
    msg = aclient.messages.create(model=SONNET, max_tokens=5, messages=[{"role": "user", "content": "hi"}])
    assert msg.content[0].text == "Plain answer"
    assert msg.stop_reason == "max_tokens"
    assert msg.usage.output_tokens == count_text("Plain answer")
    # empty script: the default reply
    msg = aclient.messages.create(model=SONNET, max_tokens=5, messages=[{"role": "user", "content": "hi"}])
    assert msg.content[0].text == "ok" and msg.stop_reason == "end_turn"


def test_anthropic_raw_sse_framing(anth):
    anth.script.add(text("one two three"), tool_call("t", {"a": 1}))
    resp, data = raw_post(anth.base_url, "/v1/messages",
                          {"model": SONNET, "max_tokens": 10, "stream": True, "messages": [{"role": "user", "content": "hi"}]})
    assert resp.status == 200
    assert resp.getheader("content-type").startswith("text/event-stream")
    assert resp.getheader("transfer-encoding") == "chunked"
    frames = data.decode().split("\n\n")
    assert frames[-1] == ""
    names = []
    for frame in frames[:-1]:
        ev, dat = frame.split("\n")
        assert ev.startswith("event: ") and dat.startswith("data: ")
        payload = json.loads(dat[len("data: "):])
        assert payload["type"] == ev[len("event: "):]
        names.append(payload["type"])
    assert names[0] == "message_start" and names[-2:] == ["message_delta", "message_stop"]
    assert names[1:3] == ["content_block_start", "ping"]
    assert names.count("content_block_start") == names.count("content_block_stop") == 2
    start = json.loads(frames[0].split("\n")[1][6:])
    assert set(start["message"]["usage"]) >= {"input_tokens", "cache_creation_input_tokens", "cache_read_input_tokens"}


def test_anthropic_raw_stream_events_through_sdk(anth, aclient):
    anth.script.add(text("a b c d"))
    stream = aclient.messages.create(model=SONNET, max_tokens=10, messages=[{"role": "user", "content": "hi"}], stream=True)
    types = [e.type for e in stream]
    assert types[0] == "message_start" and types[-1] == "message_stop"
    assert "ping" not in types  # the SDK drops pings
    assert types.count("content_block_delta") == 4


def test_anthropic_count_tokens(anth, aclient):
    body = {"model": SONNET, "system": "s" * 400, "messages": [{"role": "user", "content": "hello"}]}
    assert aclient.messages.count_tokens(**body).input_tokens == 100 + 2


# ------------------------------------------------------------------------------------------------
# Anthropic: prompt caching


def cached_request(system_tokens: int, user: str = "hi", ttl: str | None = None, model: str = SONNET) -> dict:
    cc = {"type": "ephemeral", **({"ttl": ttl} if ttl else {})}
    return {
        "model": model,
        "max_tokens": 64,
        "system": [{"type": "text", "text": long_text(system_tokens), "cache_control": cc}],
        "messages": [{"role": "user", "content": user}],
    }


def usage_of(msg):
    u = msg.usage
    return u.input_tokens, u.cache_creation_input_tokens, u.cache_read_input_tokens


def test_anthropic_second_identical_request_reads_the_cache(anth, aclient):
    _, first = a_stream(aclient, **cached_request(2000))
    _, second = a_stream(aclient, **cached_request(2000))
    assert usage_of(first) == (1, 2000, 0)
    assert usage_of(second) == (1, 0, 2000)
    assert first.usage.cache_creation.ephemeral_5m_input_tokens == 2000
    # only the part after the breakpoint changes: still a hit
    _, third = a_stream(aclient, **cached_request(2000, user="a different question"))
    assert usage_of(third) == (count_text("a different question"), 0, 2000)
    # the non-streaming path reports the same
    msg = aclient.messages.create(**cached_request(2000))
    assert usage_of(msg) == (1, 0, 2000)


def test_anthropic_conversation_reads_longest_earlier_prefix(anth, aclient):
    system = [{"type": "text", "text": long_text(1500), "cache_control": {"type": "ephemeral"}}]
    turn1 = [{"role": "user", "content": [{"type": "text", "text": long_text(300, "a"), "cache_control": {"type": "ephemeral"}}]}]
    _, m1 = a_stream(aclient, system=system, messages=turn1)
    assert usage_of(m1) == (0, 1800, 0)
    turn2 = [
        {"role": "user", "content": [{"type": "text", "text": long_text(300, "a")}]},
        {"role": "assistant", "content": long_text(100, "b")},
        {"role": "user", "content": [{"type": "text", "text": long_text(50, "c"), "cache_control": {"type": "ephemeral"}},
                                     {"type": "text", "text": "volatile suffix!"}]},
    ]
    _, m2 = a_stream(aclient, system=system, messages=turn2)
    # read the whole first turn, write the new history, the suffix is plain input
    assert usage_of(m2) == (4, 150, 1800)
    assert anth.last.cache["hit_position"] == 1 and anth.last.cache["written"] == [3]


def history_request(new_blocks: int, system_tokens: int = 1100) -> dict:
    """system (no breakpoint), a first user turn of 5 small blocks, then ``new_blocks`` more blocks.

    The breakpoint sits on the last block: position 5 for new_blocks == 0, else 5 + new_blocks.
    """
    first = [{"type": "text", "text": f"blk {i}"} for i in range(5)]
    if new_blocks == 0:
        first[-1] = dict(first[-1], cache_control={"type": "ephemeral"})
        return {"model": SONNET, "max_tokens": 8, "system": long_text(system_tokens), "messages": [{"role": "user", "content": first}]}
    later = [{"type": "text", "text": f"new {i}"} for i in range(new_blocks - 1)]
    later[-1] = dict(later[-1], cache_control={"type": "ephemeral"})
    return {"model": SONNET, "max_tokens": 8, "system": long_text(system_tokens), "messages": [
        {"role": "user", "content": first}, {"role": "assistant", "content": "ok"}, {"role": "user", "content": later}]}


@pytest.mark.parametrize("new_blocks, hit", [(19, True), (20, False)])
def test_anthropic_lookback_is_20_blocks(anth, aclient, new_blocks, hit):
    _, m1 = a_stream(aclient, **history_request(0))
    assert m1.usage.cache_creation_input_tokens == 1100 + 5 * 2
    _, m2 = a_stream(aclient, **history_request(new_blocks))
    total = sum(b.tokens for b in anthropic_blocks(anth.last.body))
    if hit:  # the earlier entry ends 19 blocks before the breakpoint: inside the window
        assert usage_of(m2) == (0, total - 1110, 1110)
    else:  # 20 blocks before: outside, so the whole prefix is written again
        assert usage_of(m2) == (0, total, 0)


def test_anthropic_spare_breakpoint_bridges_a_long_turn(anth, aclient):
    """A second breakpoint within 20 blocks of the old entry keeps the hit when a turn adds 20+ blocks."""
    a_stream(aclient, **history_request(0))
    req = history_request(30)
    req["messages"][2]["content"][10] = dict(req["messages"][2]["content"][10], cache_control={"type": "ephemeral"})
    _, m = a_stream(aclient, **req)
    assert m.usage.cache_read_input_tokens == 1110


def test_anthropic_nothing_cached_below_the_minimum(anth, aclient):
    for _ in range(2):
        _, m = a_stream(aclient, **cached_request(1000))
        assert usage_of(m) == (1001, 0, 0)
    # Haiku 4.5 needs 4,096 tokens; 3,000 caches nothing there, but does on Sonnet
    for _ in range(2):
        _, m = a_stream(aclient, **cached_request(3000, model=HAIKU))
        assert usage_of(m) == (3001, 0, 0)
    _, m = a_stream(aclient, **cached_request(3000, model=SONNET))
    assert usage_of(m) == (1, 3000, 0)
    _, m = a_stream(aclient, **cached_request(4096, model=HAIKU))
    assert usage_of(m) == (1, 4096, 0)
    # entries are per model
    _, m = a_stream(aclient, **cached_request(4096, model=SONNET))
    assert usage_of(m) == (1, 4096, 0)


def test_anthropic_minimum_is_configurable():
    with FakeAnthropic(min_cache_tokens={"sonnet": 100}) as srv, \
            anthropic.Anthropic(api_key="k", base_url=srv.base_url, max_retries=0) as client:
        a_stream(client, **cached_request(200))
        _, m = a_stream(client, **cached_request(200))
        assert usage_of(m) == (1, 0, 200)


def test_anthropic_ttl_5m_and_1h(anth, aclient):
    a_stream(aclient, **cached_request(1200))
    anth.advance_time(299)
    _, m = a_stream(aclient, **cached_request(1200))
    assert m.usage.cache_read_input_tokens == 1200  # a hit also refreshes the entry
    anth.advance_time(299)
    _, m = a_stream(aclient, **cached_request(1200))
    assert m.usage.cache_read_input_tokens == 1200
    anth.advance_time(301)
    _, m = a_stream(aclient, **cached_request(1200))
    assert usage_of(m) == (1, 1200, 0)

    _, m = a_stream(aclient, **cached_request(1300, ttl="1h"))
    assert m.usage.cache_creation.ephemeral_1h_input_tokens == 1300
    assert m.usage.cache_creation.ephemeral_5m_input_tokens == 0
    anth.advance_time(3000)
    _, m = a_stream(aclient, **cached_request(1300, ttl="1h"))
    assert m.usage.cache_read_input_tokens == 1300
    anth.advance_time(3601)
    _, m = a_stream(aclient, **cached_request(1300, ttl="1h"))
    assert m.usage.cache_read_input_tokens == 0


def test_anthropic_breakpoint_rules_are_400s(anth, aclient):
    cc = {"type": "ephemeral"}
    five = [{"type": "text", "text": f"b{i}", "cache_control": cc} for i in range(5)]
    with pytest.raises(anthropic.BadRequestError) as e:
        aclient.messages.create(model=SONNET, max_tokens=5, messages=[{"role": "user", "content": five}])
    assert "maximum of 4" in e.value.api_message
    with pytest.raises(anthropic.BadRequestError):
        aclient.messages.create(model=SONNET, max_tokens=5, system=[
            {"type": "text", "text": "a", "cache_control": cc},
            {"type": "text", "text": "b", "cache_control": {"type": "ephemeral", "ttl": "1h"}},
        ], messages=[{"role": "user", "content": "hi"}])
    assert anth.cache.live_entries() == []


def test_anthropic_top_level_cache_control_marks_the_last_block(anth, aclient):
    body = {"model": SONNET, "max_tokens": 5, "system": long_text(1500), "messages": [{"role": "user", "content": "hi"}]}
    aclient.messages.create(**body, cache_control={"type": "ephemeral"})
    msg = aclient.messages.create(**body, cache_control={"type": "ephemeral"})
    assert usage_of(msg) == (0, 0, 1501)


# ------------------------------------------------------------------------------------------------
# Anthropic: faults


@pytest.mark.parametrize("fault, exc, status", [
    (unauthorized(), anthropic.AuthenticationError, 401),
    (forbidden(), anthropic.PermissionDeniedError, 403),
    (model_not_found(), anthropic.NotFoundError, 404),
    (rate_limited(retry_after=7), anthropic.RateLimitError, 429),
    (server_error(), anthropic.InternalServerError, 500),
    (overloaded(), anthropic.OverloadedError, 529),
])
@pytest.mark.parametrize("streaming", [True, False])
def test_anthropic_http_errors(anth, aclient, fault, exc, status, streaming):
    anth.script.add(fault)
    with pytest.raises(exc) as e:
        if streaming:
            a_stream(aclient)
        else:
            aclient.messages.create(model=SONNET, max_tokens=5, messages=[{"role": "user", "content": "hi"}])
    err = e.value
    assert isinstance(err, anthropic.APIStatusError) and err.status_code == status
    assert err.body["type"] == "error" and err.body["error"]["type"] == err.type
    assert err.request_id and err.request_id.startswith("req_")
    if status == 429:
        assert err.response.headers["retry-after"] == "7"
    if status == 404:
        assert err.type == "not_found_error" and SONNET in err.api_message
    # the fault happened once; the next request succeeds
    assert a_stream(aclient)[1].content[0].text == "ok"


def test_anthropic_fault_once_then_retry_succeeds(anth):
    anth.script.add(rate_limited(retry_after=0.01))
    anth.script.add(overloaded())
    with anthropic.Anthropic(api_key="k", base_url=anth.base_url, max_retries=2) as client:
        t = time.monotonic()
        _, msg = a_stream(client)
    assert msg.content[0].text == "ok"
    assert [r.headers["x-stainless-retry-count"] for r in anth.requests] == ["0", "1", "2"]
    assert time.monotonic() - t < 5


def test_anthropic_api_key_and_model_checks():
    with FakeAnthropic(api_key="right", models=[SONNET]) as srv:
        with anthropic.Anthropic(api_key="wrong", base_url=srv.base_url, max_retries=0) as c:
            with pytest.raises(anthropic.AuthenticationError):
                c.messages.create(model=SONNET, max_tokens=5, messages=[{"role": "user", "content": "hi"}])
        with anthropic.Anthropic(api_key="right", base_url=srv.base_url, max_retries=0) as c:
            with pytest.raises(anthropic.NotFoundError):
                c.messages.create(model="claude-nope", max_tokens=5, messages=[{"role": "user", "content": "hi"}])
            assert c.messages.create(model=SONNET, max_tokens=5, messages=[{"role": "user", "content": "hi"}]).content


def test_anthropic_dropped_stream_raises(anth, aclient):
    anth.script.add(text("one two three four five six", deltas=6), cut_after(2))
    seen = []
    # This SDK does not wrap a transport error raised while iterating a stream.
    with pytest.raises((anthropic.APIConnectionError, httpx2.TransportError)):
        with aclient.messages.stream(model=SONNET, max_tokens=5, messages=[{"role": "user", "content": "hi"}]) as s:
            for e in s:
                if e.type == "text":
                    seen.append(e.text)
    assert "".join(seen) == "one two"


def test_anthropic_stream_that_just_ends_is_incomplete(anth, aclient):
    anth.script.add(text("one two three four", deltas=4), cut_after(3, mode="eof"))
    events, msg = a_stream(aclient)
    assert msg.content[0].text == "one two three"
    assert msg.stop_reason is None  # no message_delta
    assert "message_stop" not in [e.type for e in events]


def test_anthropic_non_streaming_cut_is_a_connection_error(anth, aclient):
    anth.script.add(text("hello"), cut_after(0))
    with pytest.raises(anthropic.APIConnectionError):
        aclient.messages.create(model=SONNET, max_tokens=5, messages=[{"role": "user", "content": "hi"}])


def test_anthropic_malformed_sse(anth, aclient):
    anth.script.add(text("a b c d"), malformed_sse(after_deltas=2))
    with pytest.raises(ValueError):  # json.JSONDecodeError from the SDK's event parsing
        a_stream(aclient)
    anth.script.add(text("a b c d"), malformed_sse(after_deltas=2, kind="junk_line"))
    _, msg = a_stream(aclient)  # a line that is not an SSE field is ignored
    assert msg.content[0].text == "a b c d" and msg.stop_reason == "end_turn"


def test_anthropic_invalid_tool_json(anth, aclient):
    anth.script.add(invalid_tool_json("searchContent", '{"query": nope}'))
    with pytest.raises(ValueError, match="Unable to parse tool parameter JSON"):
        a_stream(aclient)
    anth.script.add(invalid_tool_json("searchContent", '{"query": nope}'))
    raw = aclient.messages.create(model=SONNET, max_tokens=5, messages=[{"role": "user", "content": "hi"}], stream=True)
    partial = "".join(e.delta.partial_json for e in raw if e.type == "content_block_delta")
    with pytest.raises(json.JSONDecodeError):
        json.loads(partial)


def test_anthropic_error_event_mid_stream(anth, aclient):
    anth.script.add(text("a b c d"), stream_error(after_deltas=1, error_type="overloaded_error"))
    with pytest.raises(anthropic.APIStatusError) as e:
        a_stream(aclient)
    assert e.value.body["error"]["type"] == "overloaded_error"
    assert e.value.status_code == 200  # the HTTP status was already sent


def test_anthropic_slow(anth, aclient):
    anth.script.add(slow(0.3), text("late"))
    t = time.monotonic()
    events, msg = a_stream(aclient)
    assert time.monotonic() - t >= 0.3 and msg.content[0].text == "late"
    anth.script.add(slow(1.0, where="headers"))
    with pytest.raises(anthropic.APITimeoutError):
        aclient.with_options(timeout=0.2).messages.create(model=SONNET, max_tokens=5, messages=[{"role": "user", "content": "hi"}])


def test_anthropic_timeout_mid_stream_is_a_raw_transport_error(anth):
    """A read timeout while iterating is not wrapped by this SDK (before the headers it is)."""
    anth.script.add(slow(1.0), text("late"))
    with anthropic.Anthropic(api_key="k", base_url=anth.base_url, max_retries=0, timeout=0.2) as client:
        with pytest.raises((anthropic.APITimeoutError, httpx2.TimeoutException)):
            a_stream(client)


async def test_anthropic_async_client(anth):
    anth.script.add(text("async works"), tool_call("t", {"k": "v"}))
    async with anthropic.AsyncAnthropic(api_key="k", base_url=anth.base_url, max_retries=0) as client:
        async with client.messages.stream(model=SONNET, max_tokens=5, messages=[{"role": "user", "content": "hi"}]) as s:
            async for _ in s:
                pass
            msg = await s.get_final_message()
    assert msg.content[0].text == "async works" and msg.content[1].input == {"k": "v"}


# ------------------------------------------------------------------------------------------------
# OpenAI


def o_stream(client, **kw):
    kw.setdefault("model", GPT)
    kw.setdefault("messages", [{"role": "user", "content": "hi"}])
    kw.setdefault("stream_options", {"include_usage": True})
    return list(client.chat.completions.create(stream=True, **kw))


def test_openai_streams_text_and_tool_call(oai, oclient):
    oai.script.add(text("Checking the graph now."), tool_call("queryNodes", {"type": "note", "limit": 5}))
    chunks = o_stream(oclient, tools=[{"type": "function", "function": {"name": "queryNodes", "parameters": {}}}])
    content = [c.choices[0].delta.content for c in chunks if c.choices and c.choices[0].delta.content]
    assert len(content) > 1 and "".join(content) == "Checking the graph now."
    calls = [tc for c in chunks if c.choices for tc in (c.choices[0].delta.tool_calls or [])]
    assert calls[0].id.startswith("call_") and calls[0].function.name == "queryNodes"
    assert json.loads("".join(tc.function.arguments or "" for tc in calls)) == {"type": "note", "limit": 5}
    assert chunks[-2].choices[0].finish_reason == "tool_calls"
    final = chunks[-1]
    assert final.choices == [] and final.usage is not None
    expected = sum(b.tokens for b in openai_blocks(oai.last.body))
    assert final.usage.prompt_tokens == expected
    assert final.usage.prompt_tokens_details.cached_tokens == 0
    assert all(c.usage is None for c in chunks[:-1])
    assert oai.last.path == "/v1/chat/completions" and oai.last.headers["authorization"] == "Bearer test-key"


def test_openai_stream_helper_accumulates(oai, oclient):
    oai.script.add(text("Hello world"), tool_call("f", {"x": 1}))
    with oclient.chat.completions.stream(model=GPT, messages=[{"role": "user", "content": "hi"}],
                                         stream_options={"include_usage": True}) as s:
        for _ in s:
            pass
        done = s.get_final_completion()
    msg = done.choices[0].message
    assert msg.content == "Hello world" and msg.tool_calls[0].function.arguments == '{"x": 1}'
    assert done.usage.completion_tokens == count_text('Hello world{"x": 1}')


def test_openai_no_usage_chunk_unless_asked(oai, oclient):
    chunks = list(oclient.chat.completions.create(model=GPT, messages=[{"role": "user", "content": "hi"}], stream=True))
    assert all(c.usage is None and c.choices for c in chunks)


def test_openai_raw_sse_framing(oai):
    resp, data = raw_post(oai.base_url, "/v1/chat/completions",
                          {"model": GPT, "stream": True, "stream_options": {"include_usage": True},
                           "messages": [{"role": "user", "content": "hi"}]})
    assert resp.getheader("content-type").startswith("text/event-stream")
    frames = data.decode().split("\n\n")
    assert frames[-1] == "" and frames[-2] == "data: [DONE]"
    for f in frames[:-2]:
        assert f.startswith("data: ") and "\n" not in f
        assert json.loads(f[6:])["object"] == "chat.completion.chunk"


def test_openai_non_streaming(oai, oclient):
    oai.script.add(tool_call("f", {"x": 1}))
    r = oclient.chat.completions.create(model=GPT, messages=[{"role": "user", "content": "hi"}])
    assert r.choices[0].finish_reason == "tool_calls"
    assert json.loads(r.choices[0].message.tool_calls[0].function.arguments) == {"x": 1}
    r = oclient.chat.completions.create(model=GPT, messages=[{"role": "user", "content": "hi"}])
    assert r.choices[0].message.content == "ok" and r.usage.prompt_tokens == 1


def o_long(system_tokens: int, user: str = "hi", model: str = GPT, **extra) -> dict:
    return {"model": model, "messages": [{"role": "system", "content": long_text(system_tokens)}, {"role": "user", "content": user}], **extra}


def cached(chunks) -> tuple[int, int]:
    u = chunks[-1].usage
    return u.prompt_tokens, u.prompt_tokens_details.cached_tokens


def test_openai_cached_tokens(oai, oclient):
    assert cached(o_stream(oclient, **o_long(1500))) == (1501, 0)
    assert cached(o_stream(oclient, **o_long(1500))) == (1501, 1408)  # 1,500 common -> 11 x 128
    # a new user message: the common prefix is the system message
    assert cached(o_stream(oclient, **o_long(1500, user="another question"))) == (1504, 1408)
    # under 1,024 common tokens: nothing
    assert cached(o_stream(oclient, **o_long(1000))) == (1001, 0)
    assert cached(o_stream(oclient, **o_long(1000))) == (1001, 0)
    # whole prompt identical and a multiple of 128: the last token is never cached
    o_stream(oclient, **o_long(2047))
    assert cached(o_stream(oclient, **o_long(2047))) == (2048, 1920)
    # non-streaming reports the same
    r = oclient.chat.completions.create(**o_long(1500))
    assert r.usage.prompt_tokens_details.cached_tokens == 1408


def test_openai_prefix_in_steps_of_128(oai, oclient):
    base = long_text(1300)
    o_stream(oclient, messages=[{"role": "system", "content": base + long_text(500, "A")}])
    chunks = o_stream(oclient, messages=[{"role": "system", "content": base + long_text(500, "B")}])
    assert cached(chunks) == (1800, 1280)


def test_openai_prompt_cache_key_and_ttl(oai, oclient):
    o_stream(oclient, **o_long(1500, prompt_cache_key="chat-1"))
    assert cached(o_stream(oclient, **o_long(1500, prompt_cache_key="chat-2")))[1] == 0
    assert cached(o_stream(oclient, **o_long(1500, prompt_cache_key="chat-1")))[1] == 1408
    assert oai.prompt_cache_keys == ["chat-1", "chat-2", "chat-1"]
    assert oai.last.body["prompt_cache_key"] == "chat-1"
    oai.advance_time(301)
    assert cached(o_stream(oclient, **o_long(1500, prompt_cache_key="chat-1")))[1] == 0
    # extended retention: only on the models that take it (gpt-4.1 does, gpt-4o-mini does not)
    o_stream(oclient, **o_long(1600, prompt_cache_key="long", prompt_cache_retention="24h", model="gpt-4.1"))
    oai.advance_time(3600 * 23)
    assert cached(o_stream(oclient, **o_long(1600, prompt_cache_key="long", model="gpt-4.1")))[1] == 1536


@pytest.mark.parametrize("fault, exc, status", [
    (unauthorized(), openai.AuthenticationError, 401),
    (forbidden(), openai.PermissionDeniedError, 403),
    (model_not_found(), openai.NotFoundError, 404),
    (rate_limited(retry_after=3), openai.RateLimitError, 429),
    (server_error(), openai.InternalServerError, 500),
    (overloaded(), openai.InternalServerError, 503),
    (http_error(400, "bad things"), openai.BadRequestError, 400),
])
def test_openai_http_errors(oai, oclient, fault, exc, status):
    oai.script.add(fault)
    with pytest.raises(exc) as e:
        o_stream(oclient)
    err = e.value
    assert err.status_code == status and isinstance(err.body, dict) and "message" in err.body
    if status == 404:
        assert err.code == "model_not_found"
    if status == 401:
        assert err.code == "invalid_api_key"
    if status == 429:
        assert err.response.headers["retry-after"] == "3" and err.code == "rate_limit_exceeded"
    assert o_stream(oclient)[-1].usage is not None


def test_openai_retry_then_success(oai):
    oai.script.add(server_error())
    with openai.OpenAI(api_key="k", base_url=oai.base_url, max_retries=1) as client:
        chunks = o_stream(client)
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "ok"
    assert len(oai.requests) == 2


def test_openai_dropped_stream(oai, oclient):
    oai.script.add(text("a b c d e f", deltas=6), cut_after(3))
    got = []
    with pytest.raises(openai.APIConnectionError):
        for c in oclient.chat.completions.create(model=GPT, messages=[{"role": "user", "content": "hi"}], stream=True):
            if c.choices and c.choices[0].delta.content:
                got.append(c.choices[0].delta.content)
    assert "".join(got) == "a b c"


def test_openai_stream_that_just_ends(oai, oclient):
    oai.script.add(text("a b c d e f", deltas=6), cut_after(3, mode="eof"))
    chunks = o_stream(oclient)
    assert all(c.choices[0].finish_reason is None for c in chunks)
    assert all(c.usage is None for c in chunks)


def test_openai_malformed_and_error_event(oai, oclient):
    oai.script.add(text("a b"), malformed_sse(1))
    with pytest.raises(ValueError):
        o_stream(oclient)
    oai.script.add(text("a b"), stream_error(1, message="boom"))
    with pytest.raises(openai.APIError, match="boom"):
        o_stream(oclient)
    oai.script.add(text("a b"), malformed_sse(1, kind="junk_line"))
    assert o_stream(oclient)[-2].choices[0].finish_reason == "stop"


def test_openai_invalid_tool_json(oai, oclient):
    oai.script.add(invalid_tool_json("f", '{"a": 1,,}'))
    chunks = o_stream(oclient)
    args = "".join(tc.function.arguments or "" for c in chunks if c.choices for tc in (c.choices[0].delta.tool_calls or []))
    assert args == '{"a": 1,,}'
    with pytest.raises(json.JSONDecodeError):
        json.loads(args)


def test_openai_slow_and_timeout(oai, oclient):
    oai.script.add(slow(0.25), text("late"))
    t = time.monotonic()
    o_stream(oclient)
    assert time.monotonic() - t >= 0.25
    oai.script.add(slow(1.0, where="headers"))
    with pytest.raises(openai.APITimeoutError):
        oclient.with_options(timeout=0.2).chat.completions.create(model=GPT, messages=[{"role": "user", "content": "hi"}])


async def test_openai_async_client(oai):
    oai.script.add(text("async works"))
    async with openai.AsyncOpenAI(api_key="k", base_url=oai.base_url, max_retries=0) as client:
        stream = await client.chat.completions.create(model=GPT, messages=[{"role": "user", "content": "hi"}],
                                                      stream=True, stream_options={"include_usage": True})
        chunks = [c async for c in stream]
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "async works"
    assert chunks[-1].usage.completion_tokens == count_text("async works")


def test_script_accepts_a_list_and_rejects_junk(oai):
    oai.script.append([text("a"), "b"])
    oai.script.extend([server_error(), [text("c")]])
    assert len(oai.script) == 3
    with pytest.raises(TypeError):
        oai.script.add(object())


def test_openai_api_key_check():
    with FakeOpenAI(api_key="right") as srv, openai.OpenAI(api_key="wrong", base_url=srv.base_url, max_retries=0) as c:
        with pytest.raises(openai.AuthenticationError):
            c.chat.completions.create(model=GPT, messages=[{"role": "user", "content": "hi"}])


def test_servers_stop_cleanly_with_slow_reply_pending():
    srv = FakeAnthropic().start()
    srv.script.add(slow(30, where="headers"))
    url = srv.base_url
    with anthropic.Anthropic(api_key="k", base_url=url, max_retries=0, timeout=0.2) as c:
        with pytest.raises(anthropic.APITimeoutError):
            c.messages.create(model=SONNET, max_tokens=5, messages=[{"role": "user", "content": "hi"}])
    t = time.monotonic()
    srv.stop()
    assert time.monotonic() - t < 2


# == tool-call pairing: the fakes refuse what the real APIs refuse ==========================================
A_TOOL = {"name": "queryNodes", "description": "Find nodes.", "input_schema": {"type": "object", "properties": {}}}


def a_tool_history(*after_call: dict, call_id: str = "toolu_1") -> list[dict]:
    return [{"role": "user", "content": [{"type": "text", "text": "find my notes"}]},
            {"role": "assistant", "content": [{"type": "tool_use", "id": call_id, "name": "queryNodes", "input": {}}]},
            *after_call]


def a_result(call_id: str = "toolu_1") -> dict:
    return {"role": "user", "content": [{"type": "tool_result", "tool_use_id": call_id, "content": "[]"}]}


def refused_by_anthropic(aclient, **kw) -> str:
    with pytest.raises(anthropic.BadRequestError) as info:
        aclient.messages.create(model=SONNET, max_tokens=64, **kw)
    assert info.value.status_code == 400
    return info.value.body["error"]["message"]


def test_anthropic_refuses_a_tool_use_not_answered_in_the_next_message(anth, aclient):
    later = {"role": "user", "content": [{"type": "text", "text": "and now?"}]}
    message = refused_by_anthropic(aclient, tools=[A_TOOL], messages=a_tool_history(later))
    assert message == ("messages.1: `tool_use` ids were found without `tool_result` blocks immediately after: "
                       "toolu_1. Each `tool_use` block must have a corresponding `tool_result` block in the next message.")
    # answered for one id of two: still refused, naming the other
    two = a_tool_history(a_result("toolu_1"))
    two[1]["content"].append({"type": "tool_use", "id": "toolu_2", "name": "queryNodes", "input": {}})
    assert "found without `tool_result` blocks immediately after: toolu_2." in refused_by_anthropic(
        aclient, tools=[A_TOOL], messages=two)
    # the call ends the request: nothing answers it either
    assert "toolu_1" in refused_by_anthropic(aclient, tools=[A_TOOL], messages=a_tool_history())
    # answered: accepted
    ok = aclient.messages.create(model=SONNET, max_tokens=64, tools=[A_TOOL], messages=a_tool_history(a_result()))
    assert ok.content[0].text == "ok"


def test_anthropic_refuses_a_tool_result_that_answers_no_tool_use_of_the_message_before(anth, aclient):
    messages = [{"role": "user", "content": [{"type": "text", "text": "hi"}]},
                {"role": "assistant", "content": [{"type": "text", "text": "hello"}]},
                {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "toolu_9", "content": "x"},
                                             {"type": "text", "text": "go on"}]}]
    assert refused_by_anthropic(aclient, tools=[A_TOOL], messages=messages) == (
        "messages.2.content.0: unexpected `tool_use_id` found in `tool_result` blocks: toolu_9. Each `tool_result` "
        "block must have a corresponding `tool_use` block in the previous message.")
    # an answer to a call two messages back is no answer either
    late = a_tool_history(a_result(), {"role": "assistant", "content": [{"type": "text", "text": "none"}]}, a_result())
    assert "messages.4.content.0: unexpected `tool_use_id`" in refused_by_anthropic(aclient, tools=[A_TOOL],
                                                                                     messages=late)


def test_anthropic_refuses_tool_blocks_without_tools(anth, aclient):
    assert refused_by_anthropic(aclient, messages=a_tool_history(a_result())) == (
        "Requests which include `tool_use` or `tool_result` blocks must define tools.")
    assert anth.requests[-1].status == 400 and not anth.requests[-1].reply  # no scripted reply was spent


def refused_by_openai(oclient, messages) -> tuple[str, str | None]:
    with pytest.raises(openai.BadRequestError) as info:
        oclient.chat.completions.create(model=GPT, messages=messages, tools=[{"type": "function", "function": {
            "name": "queryNodes", "parameters": {"type": "object", "properties": {}}}}])
    assert info.value.status_code == 400
    return info.value.body["message"], info.value.body["param"]


def o_call(*ids: str) -> dict:
    return {"role": "assistant", "content": None, "tool_calls": [
        {"id": i, "type": "function", "function": {"name": "queryNodes", "arguments": "{}"}} for i in ids]}


def test_openai_refuses_tool_calls_not_followed_by_a_tool_message_per_id(oai, oclient):
    user = {"role": "user", "content": "find my notes"}
    message, param = refused_by_openai(oclient, [user, o_call("call_1"), {"role": "user", "content": "and now?"}])
    assert message == ("An assistant message with 'tool_calls' must be followed by tool messages responding to each "
                       "'tool_call_id'. The following tool_call_ids did not have response messages: call_1")
    assert param == "messages.[1].role"
    answered_one = [user, o_call("call_1", "call_2"), {"role": "tool", "tool_call_id": "call_1", "content": "[]"}]
    assert refused_by_openai(oclient, answered_one)[0].endswith("did not have response messages: call_2")
    ok = oclient.chat.completions.create(model=GPT, messages=[
        user, o_call("call_1", "call_2"), {"role": "tool", "tool_call_id": "call_1", "content": "[]"},
        {"role": "tool", "tool_call_id": "call_2", "content": "[]"}])
    assert ok.choices[0].message.content == "ok"


def test_openai_refuses_a_tool_message_that_answers_no_tool_call(oai, oclient):
    message, param = refused_by_openai(oclient, [{"role": "user", "content": "hi"},
                                                 {"role": "tool", "tool_call_id": "call_9", "content": "x"}])
    assert message == ("Invalid parameter: messages with role 'tool' must be a response to a preceeding message "
                       "with 'tool_calls'.")
    assert param == "messages.[1].role"


# ------------------------------------------------------------------------------------------------
# The fakes refuse what the real APIs refuse (400 through the real SDK), with the product's model table


def a_refused(client, **kw) -> str:
    kw.setdefault("model", SONNET)
    kw.setdefault("max_tokens", 64)
    kw.setdefault("messages", [{"role": "user", "content": "hi"}])
    with pytest.raises(anthropic.BadRequestError) as e:
        client.messages.create(**kw)
    assert e.value.status_code == 400 and e.value.body["error"]["type"] == "invalid_request_error"
    return e.value.api_message


def test_anthropic_refuses_empty_text_blocks(anth, aclient):
    empty = [{"type": "text", "text": ""}, {"type": "text", "text": "hi"}]
    assert "text content blocks must be non-empty" in a_refused(aclient, messages=[{"role": "user", "content": empty}])
    assert "text content blocks must be non-empty" in a_refused(aclient, system=[{"type": "text", "text": ""}])
    marked = [{"type": "text", "text": "", "cache_control": {"type": "ephemeral"}}]
    assert a_refused(aclient, messages=[{"role": "user", "content": marked}]) == \
        "cache_control cannot be set for empty text blocks"
    assert "must have non-empty content" in a_refused(aclient, messages=[{"role": "user", "content": ""}])
    # an empty final assistant message (a prefill) is allowed
    aclient.messages.create(model=SONNET, max_tokens=5, messages=[{"role": "user", "content": "hi"},
                                                                  {"role": "assistant", "content": ""}])
    assert anth.cache.live_entries() == []


def test_anthropic_refuses_bad_tool_definitions(anth, aclient):
    ok = {"name": "searchContent", "input_schema": {"type": "object", "properties": {}}}
    assert "String should match pattern" in a_refused(aclient, tools=[dict(ok, name="search content")])
    assert "String should match pattern" in a_refused(aclient, tools=[dict(ok, name="x" * 65)])
    assert "input_schema: Field required" in a_refused(aclient, tools=[{"name": "t"}])
    assert "input_schema.type: Input should be 'object'" in a_refused(aclient, tools=[dict(ok, input_schema={})])
    assert "unique" in a_refused(aclient, tools=[ok, ok])
    aclient.messages.create(model=SONNET, max_tokens=5, tools=[ok, dict(ok, name="x" * 64)],
                            messages=[{"role": "user", "content": "hi"}])


def test_anthropic_refuses_max_tokens_above_the_models_output(anth, aclient):
    from core.providers.models import facts

    limit = facts(SONNET, "anthropic").max_output
    # streamed: the SDK itself refuses a non-streamed request this long
    message = a_refused(aclient, max_tokens=limit + 1, stream=True)
    assert message == f"max_tokens: {limit + 1} > {limit}, which is the maximum allowed number of output tokens for {SONNET}"
    list(aclient.messages.create(model=SONNET, max_tokens=limit, messages=[{"role": "user", "content": "hi"}], stream=True))


def test_anthropic_refuses_a_prompt_longer_than_the_window(anth, aclient):
    from core.providers.models import facts

    model = "claude-sonnet-4-6"  # a 200,000-token window (SONNET, Sonnet 5, has 1M)
    window = facts(model, "anthropic").context_window
    assert window == 200_000
    big = long_text(window + 1)
    assert a_refused(aclient, model=model, messages=[{"role": "user", "content": big}]) == \
        f"prompt is too long: {window + 1} tokens > {window} maximum"
    fits = long_text(window - 100)
    assert "exceed context limit" in a_refused(aclient, model=model, max_tokens=101,
                                               messages=[{"role": "user", "content": fits}])
    aclient.messages.create(model=model, max_tokens=99, messages=[{"role": "user", "content": fits}])


def test_anthropic_breakpoint_limits_and_ttl_order_messages(anth, aclient):
    cc, hour = {"type": "ephemeral"}, {"type": "ephemeral", "ttl": "1h"}
    five = [{"type": "text", "text": f"b{i}", "cache_control": cc} for i in range(5)]
    assert a_refused(aclient, messages=[{"role": "user", "content": five}]) == \
        "A maximum of 4 blocks with cache_control may be provided. Found 5."
    assert a_refused(aclient, system=[
        {"type": "text", "text": "a", "cache_control": cc}, {"type": "text", "text": "b", "cache_control": hour}]) == (
        "system.1.cache_control.ttl: a ttl='1h' cache_control block must not come after a ttl='5m' cache_control "
        "block. Note that blocks are processed in the following order: `tools`, `system`, `messages`.")
    # the other order is the documented one
    aclient.messages.create(model=SONNET, max_tokens=5, system=[
        {"type": "text", "text": "a", "cache_control": hour}, {"type": "text", "text": "b", "cache_control": cc}],
        messages=[{"role": "user", "content": "hi"}])


def test_the_fake_and_the_product_read_one_table(anth, aclient):
    """The fake's minimum for each model is the product's (core/providers/models.py)."""
    from core.providers import models

    for name, row in models.MODELS.items():
        if row.provider == "anthropic":
            assert anth.min_tokens_for(name) == row.min_cacheable
            assert anth.min_tokens_for(name + "-20260101") == row.min_cacheable
    assert anth.min_tokens_for("claude-next-9") == models.STRICTEST.min_cacheable
    # Sonnet 4.6 caches from 2,048 tokens, not 1,024 (anthropic-sdk-python issue 1194)
    for _ in range(2):
        _, m = a_stream(aclient, **cached_request(1500, model="claude-sonnet-4-6"))
        assert m.usage.cache_read_input_tokens == 0 and m.usage.cache_creation_input_tokens == 0
    a_stream(aclient, **cached_request(2100, model="claude-sonnet-4-6"))
    _, m = a_stream(aclient, **cached_request(2100, model="claude-sonnet-4-6"))
    assert m.usage.cache_read_input_tokens == 2100


def o_refused(client, **kw):
    kw.setdefault("model", GPT)
    kw.setdefault("messages", [{"role": "user", "content": "hi"}])
    with pytest.raises(openai.BadRequestError) as e:
        client.chat.completions.create(**kw)
    assert e.value.status_code == 400
    return e.value


def test_openai_refuses_what_openai_refuses(oai, oclient):
    from core.providers.models import facts

    err = o_refused(oclient, model="gpt-5-mini", max_tokens=100)
    assert err.code == "unsupported_parameter" and "Use 'max_completion_tokens' instead" in err.message
    limit = facts(GPT, "openai").max_output
    err = o_refused(oclient, max_completion_tokens=limit + 1)
    assert f"supports at most {limit} completion tokens" in err.message and err.param == "max_completion_tokens"
    err = o_refused(oclient, prompt_cache_retention="24h")  # gpt-4o-mini does not take it
    assert err.param == "prompt_cache_retention"
    err = o_refused(oclient, prompt_cache_retention="forever", model="gpt-4.1")
    assert "Supported values are" in err.message
    window = facts(GPT, "openai").context_window
    err = o_refused(oclient, messages=[{"role": "user", "content": long_text(window + 1)}])
    assert err.code == "context_length_exceeded" and f"maximum context length is {window} tokens" in err.message
    err = o_refused(oclient, max_completion_tokens=200, messages=[{"role": "user", "content": long_text(window - 100)}])
    assert "in the completion" in err.message
    # what it takes
    oclient.chat.completions.create(model="gpt-5-mini", max_completion_tokens=100, messages=[{"role": "user", "content": "hi"}])
    oclient.chat.completions.create(model="gpt-4.1", prompt_cache_retention="24h", messages=[{"role": "user", "content": "hi"}])
    assert oai.last.cache["output_limit"] is None


def test_openai_compatible_server_reads_max_tokens_only():
    """Ollama's OpenAI compatibility lists max_tokens and not max_completion_tokens, nor the retention."""
    with FakeOpenAI(compatible=True) as srv, openai.OpenAI(api_key="local", base_url=srv.base_url, max_retries=0) as c:
        c.chat.completions.create(model="llama3.2", max_completion_tokens=50, prompt_cache_retention="24h",
                                  messages=[{"role": "user", "content": "hi"}])
        assert srv.last.cache["output_limit"] is None  # ignored, as Ollama ignores it
        assert srv.last.cache["prompt_cache_retention"] is None
        c.chat.completions.create(model="llama3.2", max_tokens=50, messages=[{"role": "user", "content": "hi"}])
        assert srv.last.cache["output_limit"] == 50


def test_anthropic_refuses_a_retired_model_as_the_api_does(anth, aclient):
    """claude-sonnet-4-5 reached its end of life on 2026-11-30 (core/providers/models.py [A-retire]):
    the API answers 404 not_found_error "model: claude-sonnet-4-5", and so does the fake."""
    import datetime

    import anthropic

    if datetime.date.today().isoformat() < "2026-11-30":
        pytest.skip("claude-sonnet-4-5 is still served before 2026-11-30")
    with pytest.raises(anthropic.NotFoundError) as caught:
        aclient.messages.create(model="claude-sonnet-4-5", max_tokens=5, messages=[{"role": "user", "content": "hi"}])
    assert caught.value.body["error"] == {"type": "not_found_error", "message": "model: claude-sonnet-4-5"}
