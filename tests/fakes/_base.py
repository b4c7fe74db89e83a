"""Shared plumbing of the fake provider servers: scripted replies, faults, the HTTP server thread.

A *reply* is a list of *actions*, served in answer to one request:

- content: ``text(...)``, ``tool_call(...)``, ``invalid_tool_json(...)``, ``stop_reason(...)``;
- faults: ``http_error(...)`` (the whole reply is that error), ``cut_after(n)``,
  ``malformed_sse(...)``, ``stream_error(...)``, ``slow(seconds)``.

``srv.script`` is a FIFO of replies; each request pops one; when it is empty the server answers
``srv.default_reply`` (a short "ok" text). Queue a fault then nothing to have it happen once and
succeed on the retry.

A reply can also be computed from the request: ``srv.responder = fn`` (the parsed request body →
a list of actions, one action or a string; None falls back to the script) answers every request while
it is set, and a queued reply may be one callable (``srv.script.add(fn)``) answering the request that
pops it. ``fakes.obedient.ObedientModel`` is such a callable: a model that obeys injected instructions.
"""

from __future__ import annotations

import json
import math
import socket
import threading
import time
import uuid
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable, Iterable

# --------------------------------------------------------------------------------------------
# Actions


@dataclass(frozen=True)
class Text:
    """Assistant text, streamed as ``len(deltas)`` deltas."""

    text: str
    deltas: tuple[str, ...]


@dataclass(frozen=True)
class ToolCall:
    """A tool call; ``raw_arguments`` is the exact JSON text streamed (``json.dumps(input)``)."""

    name: str
    input: Any
    id: str
    raw_arguments: str
    deltas: tuple[str, ...]


@dataclass(frozen=True)
class StopReason:
    """Overrides the stop reason (Anthropic names: end_turn, tool_use, max_tokens, stop_sequence...)."""

    reason: str


@dataclass(frozen=True)
class HttpError:
    status: int
    message: str | None = None
    error_type: str | None = None
    code: str | None = None
    retry_after: float | None = None
    headers: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class CutAfter:
    """Stop the stream after ``n_deltas`` content deltas, without the final events.

    mode="drop": abort the connection mid-body (no terminating chunk) - what a dropped network does.
    mode="eof": end the HTTP body cleanly, still without the final events - a stream that just ends.
    """

    n_deltas: int
    mode: str = "drop"


@dataclass(frozen=True)
class MalformedSSE:
    """After ``after_deltas`` deltas, write garbage into the stream.

    kind="bad_json": a well-framed event whose data is not JSON (the SDKs raise);
    kind="junk_line": a line that is not an SSE field (the SDKs' decoders ignore it).
    """

    after_deltas: int = 0
    kind: str = "bad_json"


@dataclass(frozen=True)
class StreamError:
    """An in-stream error event after ``after_deltas`` deltas (HTTP status already 200)."""

    after_deltas: int = 0
    error_type: str = "overloaded_error"
    message: str = "Overloaded"


@dataclass(frozen=True)
class Slow:
    """Delay of ``seconds``: before the first token (default), before the response headers, or
    mid-stream after ``after_deltas`` content deltas (where="mid_stream": a reply that stalls)."""

    seconds: float
    where: str = "first_token"  # or "headers", "mid_stream"
    after_deltas: int = 0


Action = Text | ToolCall | StopReason | HttpError | CutAfter | MalformedSSE | StreamError | Slow
_ACTION_TYPES = (Text, ToolCall, StopReason, HttpError, CutAfter, MalformedSSE, StreamError, Slow)

# A reply computed from the request: the parsed body (None when not JSON) → actions (a list, one action,
# or a string for ``text(s)``); None: no answer of its own (the script, then the default reply, answers).
Responder = Callable[[Any], "list[Action] | Action | str | None"]


def as_reply(value: "list[Action] | Action | str") -> list[Action]:
    """A responder's answer as a reply: a list of actions (a bare string is ``text(s)``)."""
    items = list(value) if isinstance(value, (list, tuple)) else [value]
    return [text(a) if isinstance(a, str) else a for a in items]


def _split(s: str, n: int) -> tuple[str, ...]:
    if n <= 1 or len(s) <= 1:
        return (s,)
    n = min(n, len(s))
    size = math.ceil(len(s) / n)
    return tuple(s[i : i + size] for i in range(0, len(s), size))


def _split_words(s: str, n: int) -> tuple[str, ...]:
    """Split at word boundaries into at most ``n`` non-empty pieces that join back to ``s``."""
    words: list[str] = []
    cur = ""
    for ch in s:
        if ch == " " and cur and not cur.endswith(" "):
            words.append(cur)
            cur = ch
        else:
            cur += ch
    if cur:
        words.append(cur)
    if len(words) <= 1:
        return _split(s, n) if len(s) > 8 else (s,)
    n = max(1, min(n, len(words)))
    per = math.ceil(len(words) / n)
    return tuple("".join(words[i : i + per]) for i in range(0, len(words), per))


def text(s: str, deltas: int | Iterable[str] | None = None) -> Text:
    """Assistant text split into several deltas (default: up to 4, at word boundaries)."""
    if deltas is None:
        pieces = _split_words(s, 4)
    elif isinstance(deltas, int):
        pieces = _split_words(s, deltas)
    else:
        pieces = tuple(deltas)
        s = "".join(pieces)
    return Text(s, tuple(p for p in pieces if p) or ("",))


def tool_call(name: str, input: dict | None = None, *, id: str | None = None, deltas: int = 3) -> ToolCall:
    """A tool call with a JSON-object input, its JSON streamed in ``deltas`` pieces."""
    input = {} if input is None else input
    raw = json.dumps(input, ensure_ascii=False)
    return ToolCall(name, input, id or "", raw, _split(raw, deltas))


def invalid_tool_json(name: str = "search", raw: str = '{"query": nope}', *, id: str | None = None, deltas: int = 2) -> ToolCall:
    """A tool call whose streamed arguments are not valid JSON."""
    return ToolCall(name, None, id or "", raw, _split(raw, deltas))


def stop_reason(reason: str) -> StopReason:
    return StopReason(reason)


def http_error(
    status: int,
    message: str | None = None,
    *,
    error_type: str | None = None,
    code: str | None = None,
    retry_after: float | None = None,
    headers: dict[str, str] | None = None,
) -> HttpError:
    """An HTTP error response with the provider's JSON error body (see each server's table)."""
    return HttpError(status, message, error_type, code, retry_after, tuple((headers or {}).items()))


def unauthorized() -> HttpError:
    return http_error(401)


def forbidden() -> HttpError:
    return http_error(403)


def model_not_found(message: str | None = None) -> HttpError:
    return http_error(404, message)


def rate_limited(retry_after: float | None = 1) -> HttpError:
    return http_error(429, retry_after=retry_after)


def server_error() -> HttpError:
    return http_error(500)


def overloaded() -> HttpError:
    """Anthropic's 529 overloaded_error (on the OpenAI fake: a 503)."""
    return http_error(529)


def cut_after(n_deltas: int, mode: str = "drop") -> CutAfter:
    if mode not in ("drop", "eof"):
        raise ValueError("mode is 'drop' or 'eof'")
    return CutAfter(n_deltas, mode)


def malformed_sse(after_deltas: int = 0, kind: str = "bad_json") -> MalformedSSE:
    if kind not in ("bad_json", "junk_line"):
        raise ValueError("kind is 'bad_json' or 'junk_line'")
    return MalformedSSE(after_deltas, kind)


def stream_error(after_deltas: int = 0, error_type: str = "overloaded_error", message: str = "Overloaded") -> StreamError:
    return StreamError(after_deltas, error_type, message)


def slow(seconds: float, where: str = "first_token", after_deltas: int = 0) -> Slow:
    if where not in ("first_token", "headers", "mid_stream"):
        raise ValueError("where is 'first_token', 'headers' or 'mid_stream'")
    return Slow(seconds, where, after_deltas)


# --------------------------------------------------------------------------------------------
# The parsed plan of one reply


@dataclass
class Plan:
    content: list[Text | ToolCall]
    error: HttpError | None = None
    stop: str | None = None
    cut: CutAfter | None = None
    malformed: MalformedSSE | None = None
    stream_err: StreamError | None = None
    delay_headers: float = 0.0
    delay_first: float = 0.0
    stall: Slow | None = None  # where="mid_stream"

    @classmethod
    def from_reply(cls, reply: list[Action]) -> "Plan":
        plan = cls(content=[])
        for a in reply:
            if isinstance(a, (Text, ToolCall)):
                plan.content.append(a)
            elif isinstance(a, HttpError):
                plan.error = a
            elif isinstance(a, StopReason):
                plan.stop = a.reason
            elif isinstance(a, CutAfter):
                plan.cut = a
            elif isinstance(a, MalformedSSE):
                plan.malformed = a
            elif isinstance(a, StreamError):
                plan.stream_err = a
            elif isinstance(a, Slow):
                if a.where == "headers":
                    plan.delay_headers += a.seconds
                elif a.where == "mid_stream":
                    plan.stall = a
                else:
                    plan.delay_first += a.seconds
            else:
                raise TypeError(f"not a script action: {a!r}")
        return plan

    def output_text(self) -> str:
        return "".join(a.text if isinstance(a, Text) else a.raw_arguments for a in self.content)


class Script:
    """Thread-safe FIFO of scripted replies."""

    def __init__(self) -> None:
        self._q: deque[list[Action] | Responder] = deque()
        self._lock = threading.Lock()

    def add(self, *actions: Action | str | Responder, times: int = 1) -> "Script":
        """Queue one reply made of ``actions`` (a bare string is ``text(s)``), ``times`` times. A single
        callable is a reply computed from the request that pops it (see ``Responder``)."""
        if len(actions) == 1 and isinstance(actions[0], (list, tuple)):
            actions = tuple(actions[0])
        if len(actions) == 1 and callable(actions[0]) and not isinstance(actions[0], _ACTION_TYPES):
            with self._lock:
                for _ in range(times):
                    self._q.append(actions[0])
            return self
        reply = [text(a) if isinstance(a, str) else a for a in actions]
        Plan.from_reply(reply)  # raises TypeError now rather than inside the server thread
        with self._lock:
            for _ in range(times):
                self._q.append(list(reply))
        return self

    append = add

    def extend(self, replies: Iterable[list[Action] | Action]) -> "Script":
        """Queue several replies, each a list of actions or a single action."""
        for r in replies:
            self.add(*(r if isinstance(r, (list, tuple)) else [r]))
        return self

    def pop(self) -> list[Action] | Responder | None:
        with self._lock:
            return self._q.popleft() if self._q else None

    def clear(self) -> None:
        with self._lock:
            self._q.clear()

    def __len__(self) -> int:
        with self._lock:
            return len(self._q)


# --------------------------------------------------------------------------------------------
# Recorded requests


@dataclass
class RecordedRequest:
    method: str
    path: str
    headers: dict[str, str]  # lower-cased names
    body: Any  # parsed JSON (None when not JSON)
    raw: bytes
    time: float
    reply: list[Action] = field(default_factory=list)
    status: int = 0
    usage: dict | None = None  # the usage the fake reported (provider format)
    cache: dict | None = None  # details of the cache simulation for this request

    @property
    def json(self) -> Any:
        return self.body


# --------------------------------------------------------------------------------------------
# Clock


class ManualClock:
    """Real monotonic time plus an offset that tests advance."""

    def __init__(self) -> None:
        self.offset = 0.0

    def __call__(self) -> float:
        return time.monotonic() + self.offset

    def advance(self, seconds: float) -> None:
        self.offset += seconds


# --------------------------------------------------------------------------------------------
# The HTTP server


class _Cut(Exception):
    """Raised inside a handler to abort the connection."""


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    allow_reuse_address = True
    fake: "FakeServerBase"

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up (after a cut, a timeout, or at the end of a test) is not an error.
        import sys

        exc = sys.exc_info()[1]
        if isinstance(exc, (ConnectionError, TimeoutError, OSError)):
            return
        super().handle_error(request, client_address)


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # small SSE frames go out at once (no 40 ms delayed-ACK stalls)
    server: _Server

    def log_message(self, format: str, *args: Any) -> None:  # quiet
        pass

    def _handle(self) -> None:
        fake = self.server.fake
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        rec = RecordedRequest(
            method=self.command,
            path=self.path,
            headers={k.lower(): v for k, v in self.headers.items()},
            body=body,
            raw=raw,
            time=fake.clock(),
        )
        native = fake.native_answer(self.command, self.path, rec)
        with fake._lock:
            (fake.probes if native is not None else fake.requests).append(rec)
        try:
            if native is not None:  # a probe of the server's own endpoints, kept out of `requests`
                return Exchange(self, rec).send_json(*native)
            fake._dispatch(Exchange(self, rec))
        except _Done:
            self.close_connection = True
        except _Cut:
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass
        except (BrokenPipeError, ConnectionResetError):
            self.close_connection = True
        except Exception:  # a bug in the fake: keep it for the test to see, drop the connection
            import traceback

            fake.errors.append(traceback.format_exc())
            self.close_connection = True
            try:
                self.connection.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    do_GET = _handle
    do_POST = _handle


class Exchange:
    """One request/response, with helpers to answer in JSON or as an SSE stream."""

    def __init__(self, handler: _Handler, rec: RecordedRequest) -> None:
        self.h = handler
        self.rec = rec
        self.body = rec.body
        self._chunked = False

    @property
    def fake(self) -> "FakeServerBase":
        return self.h.server.fake

    def sleep(self, seconds: float) -> None:
        if seconds > 0:
            self.fake._stopping.wait(seconds)

    def send_json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        data = json.dumps(obj).encode()
        self.rec.status = status
        self.h.send_response(status)
        self.h.send_header("content-type", "application/json")
        self.h.send_header("content-length", str(len(data)))
        for k, v in (headers or {}).items():
            self.h.send_header(k, v)
        self.h.end_headers()
        self.h.wfile.write(data)
        self.h.wfile.flush()

    def send_truncated_json(self, status: int, obj: Any, headers: dict[str, str] | None = None) -> None:
        """Announce the full length, send half the body, abort: a connection dropped mid-response."""
        data = json.dumps(obj).encode()
        self.rec.status = status
        self.h.send_response(status)
        self.h.send_header("content-type", "application/json")
        self.h.send_header("content-length", str(len(data)))
        for k, v in (headers or {}).items():
            self.h.send_header(k, v)
        self.h.end_headers()
        self.h.wfile.write(data[: len(data) // 2])
        self.h.wfile.flush()
        raise _Cut()

    def send_raw_body(self, status: int, data: bytes, content_type: str, headers: dict[str, str] | None = None) -> None:
        self.rec.status = status
        self.h.send_response(status)
        self.h.send_header("content-type", content_type)
        self.h.send_header("content-length", str(len(data)))
        for k, v in (headers or {}).items():
            self.h.send_header(k, v)
        self.h.end_headers()
        self.h.wfile.write(data)
        self.h.wfile.flush()

    def start_sse(self, headers: dict[str, str] | None = None) -> None:
        self.rec.status = 200
        self.h.send_response(200)
        self.h.send_header("content-type", "text/event-stream; charset=utf-8")
        self.h.send_header("cache-control", "no-cache")
        self.h.send_header("transfer-encoding", "chunked")
        for k, v in (headers or {}).items():
            self.h.send_header(k, v)
        self.h.end_headers()
        self.h.wfile.flush()
        self._chunked = True

    def write_raw(self, data: bytes) -> None:
        """One HTTP chunk, flushed immediately."""
        if not data:
            return
        self.h.wfile.write(f"{len(data):x}\r\n".encode() + data + b"\r\n")
        self.h.wfile.flush()

    def sse(self, data: Any, event: str | None = None) -> None:
        """One SSE event: optional ``event:`` line, one ``data:`` line, blank line."""
        payload = data if isinstance(data, str) else json.dumps(data, separators=(",", ":"))
        frame = (f"event: {event}\n" if event else "") + f"data: {payload}\n\n"
        self.write_raw(frame.encode("utf-8"))

    def end_stream(self) -> None:
        self.h.wfile.write(b"0\r\n\r\n")
        self.h.wfile.flush()

    def cut(self, mode: str) -> None:
        """Stop here. "drop": abort mid-body; "eof": end the body cleanly. Either way stop replying."""
        if mode == "eof":
            self.end_stream()
            self.h.close_connection = True
            raise _Done()
        raise _Cut()


class _Done(Exception):
    """Raised to stop a reply early after the body was ended cleanly."""


class FakeServerBase:
    """A ThreadingHTTPServer on 127.0.0.1 in a background thread; use as a context manager."""

    default_reply: list[Action]
    base_path = ""

    def __init__(self, *, clock: Callable[[], float] | None = None, api_key: str | None = None,
                 default_reply: list[Action] | None = None) -> None:
        self.manual_clock = ManualClock()
        self.clock: Callable[[], float] = clock or self.manual_clock
        self.api_key = api_key
        self.default_reply = default_reply if default_reply is not None else [text("ok")]
        self.script = Script()
        # Set: every request is answered by responder(parsed body), in place of the script (see Responder).
        self.responder: Responder | None = None
        self.requests: list[RecordedRequest] = []
        self.errors: list[str] = []  # tracebacks of exceptions raised inside the fake's handlers
        self.probes: list[RecordedRequest] = []  # GETs of native endpoints (native_answer), not in requests
        self._lock = threading.RLock()
        self._stopping = threading.Event()
        self._server: _Server | None = None
        self._thread: threading.Thread | None = None

    # lifecycle -------------------------------------------------------------------------------
    def start(self) -> "FakeServerBase":
        if self._server is not None:
            return self
        self._stopping.clear()
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.fake = self
        self._thread = threading.Thread(target=self._server.serve_forever, kwargs={"poll_interval": 0.01},
                                         name=f"{type(self).__name__}-{self.port}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        if self._server is None:
            return
        self._stopping.set()
        self._server.shutdown()
        self._server.server_close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._server = None
        self._thread = None

    def __enter__(self):
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    @property
    def port(self) -> int:
        assert self._server is not None, "server not started"
        return self._server.server_address[1]

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}{self.base_path}"

    def native_answer(self, method: str, path: str, rec: "RecordedRequest | None" = None) -> tuple[int, Any] | None:
        """(status, JSON) for a request to a server's native endpoint (its window, its models, its
        tokenizer), kept out of `requests` and recorded in `probes`; None: not one."""
        return None

    # helpers ---------------------------------------------------------------------------------
    def advance_time(self, seconds: float) -> None:
        """Move the fake clock forward (only when no custom clock was given)."""
        self.manual_clock.advance(seconds)

    @property
    def last(self) -> RecordedRequest:
        return self.requests[-1]

    def model_requests(self) -> list[RecordedRequest]:
        """Recorded requests that were model calls (not count_tokens / models listings)."""
        return [r for r in self.requests if r.usage is not None or r.reply]

    def reset(self) -> None:
        """Forget requests, the script and the cache."""
        with self._lock:
            self.requests.clear()
            self.script.clear()
            self._reset_cache()

    def _next_reply(self, body: Any = None) -> list[Action]:
        """The reply to a request with this parsed body: the responder's, else the script's next (a
        queued callable is called with the body), else the default reply."""
        responder = self.responder
        if responder is not None:
            answer = responder(body)
            if answer is not None:
                return self._checked(as_reply(answer))
        reply = self.script.pop()
        if reply is not None and not isinstance(reply, list):
            answer = reply(body)
            reply = None if answer is None else self._checked(as_reply(answer))
        return list(self.default_reply) if reply is None else reply

    @staticmethod
    def _checked(reply: list[Action]) -> list[Action]:
        Plan.from_reply(reply)  # a responder's bad action fails here, kept in srv.errors
        return reply

    def _reset_cache(self) -> None:  # overridden
        pass

    def _dispatch(self, ex: Exchange) -> None:  # overridden
        raise NotImplementedError

    @staticmethod
    def _new_id(prefix: str) -> str:
        return prefix + uuid.uuid4().hex[:24]

    @staticmethod
    def _retry_after_value(seconds: float) -> str:
        return str(int(seconds)) if float(seconds).is_integer() else repr(float(seconds))


def run_stream(ex: Exchange, fn: Callable[[], None]) -> None:
    """Run a streaming writer, turning a clean early end (_Done) into a normal return."""
    try:
        fn()
    except _Done:
        pass


class DeltaCounter:
    """Counts content deltas and fires the plan's cut / malformed / stream-error faults."""

    def __init__(self, ex: Exchange, plan: Plan, on_malformed: Callable[[MalformedSSE], None],
                 on_stream_error: Callable[[StreamError], None]) -> None:
        self.ex = ex
        self.plan = plan
        self.n = 0
        self._on_malformed = on_malformed
        self._on_stream_error = on_stream_error
        self._first_done = False

    def before_first(self) -> None:
        if not self._first_done:
            self._first_done = True
            self.ex.sleep(self.plan.delay_first)

    def check(self) -> None:
        """Called before each delta and once at the end of content (with all deltas counted)."""
        p = self.plan
        if p.stall is not None and self.n == p.stall.after_deltas:
            s, p.stall = p.stall, None
            self.ex.sleep(s.seconds)
        if p.malformed is not None and self.n == p.malformed.after_deltas:
            m, p.malformed = p.malformed, None
            self._on_malformed(m)
        if p.stream_err is not None and self.n == p.stream_err.after_deltas:
            e, p.stream_err = p.stream_err, None
            self._on_stream_error(e)
            self.ex.end_stream()
            self.ex.h.close_connection = True
            raise _Done()
        if p.cut is not None and self.n >= p.cut.n_deltas:
            self.ex.cut(p.cut.mode)

    def sent(self) -> None:
        self.n += 1
