"""A scripted OpenAI-compatible HTTP server on loopback, for tests and offline demos.

    with FakeOpenAIServer() as server:
        server.reply("```python\\n...\\n```\\n{...}", prompt_tokens=900, completion_tokens=300)
        server.fail(429, retry_after="0")
        backend = OpenAIBackend(OpenAIConfig(model="fake", base_url=server.base_url))

Each POST to /v1/chat/completions takes the next scripted item (answers and HTTP errors
in the order they were queued) and records the request body in `server.requests`.
An answer scripted with `prompt_tokens=None` reports `counted_tokens(body)`: the request's
message characters over 4, the fake's stand-in for a tokenizer (tests compute the same
figure from the recorded requests to check that every call was counted).
An answer scripted with `finish_reason="length"` says it was cut off at the completion
limit; `reply_in_parts(text, n)` queues a long answer as n such pieces, the last one
finished ("stop"), as an endpoint does when a client asks for the rest.
An unscripted request gets HTTP 400, so a test that scripted too little fails loudly
instead of being retried.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from collections.abc import Callable
from typing import Any


@dataclass
class ScriptedAnswer:
    text: str | Callable[[dict[str, Any]], str]   # or a function of the request body
    prompt_tokens: int | None = 0                 # None: counted_tokens(request)
    completion_tokens: int | None = 0             # None: the answer's characters over 4
    finish_reason: str = "stop"                   # "length": cut off at the completion limit


CHARS_PER_TOKEN = 4


def counted_tokens(body: dict[str, Any]) -> int:
    """The prompt tokens the fake reports for a request scripted with prompt_tokens=None."""
    return sum(len(m.get("content") or "") for m in body.get("messages", [])) // CHARS_PER_TOKEN


@dataclass
class ScriptedError:
    status: int
    message: str = "scripted failure"
    headers: dict[str, str] = field(default_factory=dict)
    code: str | None = None          # the error body's code, e.g. "insufficient_quota"


class FakeOpenAIServer:
    def __init__(self, host: str = "127.0.0.1") -> None:
        self._script: deque[ScriptedAnswer | ScriptedError] = deque()
        self._lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self._httpd = ThreadingHTTPServer((host, 0), _handler_for(self))
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="fake-openai", daemon=True)

    # -- scripting -------------------------------------------------------------------
    def reply(self, text: str, *, prompt_tokens: int | None = 0, completion_tokens: int | None = 0,
              finish_reason: str = "stop") -> None:
        with self._lock:
            self._script.append(ScriptedAnswer(text, prompt_tokens, completion_tokens, finish_reason))

    def reply_in_parts(self, text: str, parts: int, *, prompt_tokens: int | None = 0,
                       completion_tokens: int | None = None) -> list[str]:
        """`text` cut into `parts` consecutive pieces of about equal length, each but the last
        answered with finish_reason "length"; returns the pieces."""
        if parts < 1:
            raise ValueError(f"parts must be at least 1, not {parts}")
        step = -(-len(text) // parts)
        pieces = [text[i * step:(i + 1) * step] for i in range(parts)]
        for i, piece in enumerate(pieces):
            self.reply(piece, prompt_tokens=prompt_tokens, completion_tokens=completion_tokens,
                       finish_reason="length" if i < parts - 1 else "stop")
        return pieces

    def reply_with(self, answer: Callable[[dict[str, Any]], str], *, prompt_tokens: int | None = 0,
                   completion_tokens: int | None = 0) -> None:
        """An answer computed from the request it answers (e.g. naming an id the prompt showed)."""
        with self._lock:
            self._script.append(ScriptedAnswer(answer, prompt_tokens, completion_tokens))

    def fail(self, status: int, message: str = "scripted failure", *, retry_after: str | None = None,
             code: str | None = None) -> None:
        headers = {"Retry-After": retry_after} if retry_after is not None else {}
        with self._lock:
            self._script.append(ScriptedError(status, message, headers, code))

    @property
    def pending(self) -> int:
        with self._lock:
            return len(self._script)

    # -- lifecycle -------------------------------------------------------------------
    @property
    def base_url(self) -> str:
        host, port = self._httpd.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> FakeOpenAIServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=5)

    def __enter__(self) -> FakeOpenAIServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # -- serving ---------------------------------------------------------------------
    def _next(self, body: dict[str, Any]) -> ScriptedAnswer | ScriptedError | None:
        with self._lock:
            self.requests.append(body)
            return self._script.popleft() if self._script else None


def _handler_for(server: FakeOpenAIServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:  # keep test output clean
            pass

        def do_GET(self) -> None:
            if self.path.rstrip("/") == "/v1/models":
                self._send(200, {"object": "list", "data": [{"id": "fake", "object": "model", "owned_by": "sage"}]})
            else:
                self._send(404, _error_body(f"no route {self.path}", "not_found"))

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            if self.path.rstrip("/") != "/v1/chat/completions":
                self._send(404, _error_body(f"no route {self.path}", "not_found"))
                return
            try:
                body = json.loads(raw or b"{}")
            except json.JSONDecodeError:
                self._send(400, _error_body("request body is not JSON", "invalid_request_error"))
                return
            item = server._next(body)
            if item is None:
                self._send(400, _error_body("fake server: no scripted response left", "invalid_request_error"))
            elif isinstance(item, ScriptedError):
                self._send(item.status, _error_body(item.message, "scripted_error", item.code), item.headers)
            else:
                text = item.text(body) if callable(item.text) else item.text
                prompt = counted_tokens(body) if item.prompt_tokens is None else item.prompt_tokens
                completion = len(text) // CHARS_PER_TOKEN if item.completion_tokens is None else item.completion_tokens
                self._send(200, _completion_body(body.get("model", "fake"), text, prompt, completion,
                                                 item.finish_reason))

        def _send(self, status: int, payload: dict[str, Any], headers: dict[str, str] | None = None) -> None:
            data = json.dumps(payload).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            for key, value in (headers or {}).items():
                self.send_header(key, value)
            self.end_headers()
            self.wfile.write(data)

    return Handler


def _error_body(message: str, kind: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "code": code, "param": None}}


def _completion_body(model: str, text: str, prompt_tokens: int, completion_tokens: int,
                     finish_reason: str = "stop") -> dict[str, Any]:
    return {
        "id": f"chatcmpl-fake-{time.monotonic_ns()}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": finish_reason,
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }
