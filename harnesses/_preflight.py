"""Pre-flight of a model endpoint: before the first question, in well under 2 s where the server
is up, check what would otherwise fail every question in the same way.

- **Reachable, and the right kind of server.** ``GET /models`` answers (a refused connection, DNS
  failure or an HTML page is one line naming ``--base-url``); the model is one the server lists.
- **The wire is spoken.** A one-line probe in the harness's wire (``POST /responses``,
  ``/chat/completions`` or ``/messages``); a 404 there says which harness speaks what the server
  does (a server without the Responses API: ``--harness custom``).
- **The prompt fits.** What the harness sends before the question (instructions plus tool
  definitions) is counted (the server's ``/tokenize`` where it has one, else an estimate) against
  the model's context where the server says it (llama.cpp ``GET /props`` ``n_ctx``, vLLM
  ``GET /v1/models`` ``max_model_len``, Ollama ``POST /api/show``) or ``context_window`` does.
  Over it: one line with both numbers and the ``--tools`` hint, and no question runs.
- **Slow is not silent.** The probe's time to first byte and the server's prefill rate set the
  stall bound for the endpoint: a CPU server that needs minutes to read a long prompt is slow,
  and is not cut off and sent the whole prompt again as if it had gone silent.

A context overflow in the middle of a run (:func:`context_overflow`) is the same configuration
failure: it stops the agent's run with the same kind of line and is never retried.
"""

from __future__ import annotations

import json
import math
import re
import time
import uuid
from dataclasses import dataclass
from typing import Any
from urllib.parse import urlsplit, urlunsplit

from harnesses._redact import one_line
from ledgerbench_core.trajectory import ModelEndpointCheck

OPENAI_BASE_URL = "https://api.openai.com/v1"
ANTHROPIC_BASE_URL = "https://api.anthropic.com"
PROBE_FILLER = "A ledger lists the invoices, payments and credit notes of each customer. " * 4
"""About 60 tokens for the probe to read: enough to measure the server's prefill rate (with its
overhead: a rate on the safe side), little enough to cost a second at most on a loaded CPU."""
PROBE_TIMEOUT_S = 120.0
"""How long a probe may wait for its answer (a CPU server reads even a short prompt slowly)."""
CHARS_PER_TOKEN = 4
"""The estimate where the server has no tokenizer endpoint (about right for English and JSON)."""
STALL_FACTOR = 3.0
"""The stall bound covers this many times the measured time to read the whole prompt."""
TOOLS_HINT = (
    "offer fewer tools with --tools (names or groups, e.g. --tools "
    "erp_info,search_parties,get_customer or --tools finance,world) or use a model with a "
    "longer context"
)
WIRE_NAMES = {
    "responses": "the Responses API",
    "chat": "Chat Completions",
    "messages": "the Anthropic Messages API",
}
WIRE_ALTERNATIVES = {
    "responses": "use --harness custom, which speaks Chat Completions",
    "chat": "check --base-url (it usually ends in /v1)",
    "messages": "use --harness-opt api=openai for an OpenAI-compatible server",
}


class PreflightError(Exception):
    """The endpoint cannot serve the run; the message is the one line to print."""


class _UnknownModel(PreflightError):
    """The probe's 404 says the server has no such model."""


class ModelContextError(Exception):
    """A provider refused a request as over the model's context, in the middle of a run: a
    configuration failure of the agent (never retried, never an infrastructure failure); it
    stops the agent's run. The message is the one line to print."""


@dataclass(frozen=True)
class ModelEndpoint:
    """What a harness asks the pre-flight to check: where, in which wire, and what it sends."""

    wire: str
    """``responses``, ``chat`` or ``messages``."""
    base_url: str
    model: str
    api_key: str
    prompt: str
    """What the harness sends before the question: instructions and tool definitions (JSON)."""
    tool_count: int
    context_window: int | None = None
    """The ``context_window`` option: the model's context, when the server does not say it."""
    harness: str = "custom"
    streamed: bool = False
    """The harness streams its requests (and asks for the usage in the stream): whether the
    server reports usage is checked on a streamed probe too."""
    client_prompt_chars: int = 0
    """Characters the harness's client adds to every request that are not in ``prompt`` (the
    Claude CLI's own system prompt and tool notes): an estimate, counted on top of ``prompt``."""
    bearer: bool = False
    """Messages API: the key goes as ``Authorization: Bearer`` (``ANTHROPIC_AUTH_TOKEN``), not
    ``x-api-key``."""


def read_context_window(options: Any) -> int | None:
    """The ``context_window`` harness option (tokens), or None; ``ValueError`` when it is not a
    positive whole number."""
    text = options.extra.get("context_window")
    if text is None:
        return None
    try:
        tokens = int(str(text).replace("_", ""))
    except ValueError:
        tokens = 0
    if tokens < 1:
        raise ValueError(f"--harness-opt context_window={text}: expected tokens, e.g. 8192")
    return tokens


@dataclass
class _Context:
    tokens: int | None = None
    source: str | None = None
    server: str = "unknown"


async def check_endpoint(
    endpoint: ModelEndpoint, default_stall_s: float, usage_needed_by: str | None = None
) -> ModelEndpointCheck:
    """Run the pre-flight; :class:`PreflightError` (one line) when the run cannot work.
    ``usage_needed_by`` names a limit that is kept by counting the tokens the server reports
    (``--max-tokens 5000``): a server that reports none is refused."""
    import httpx

    started = time.monotonic()
    base = api_base(endpoint)
    headers = _auth_headers(endpoint)
    timeout = httpx.Timeout(10.0, connect=3.0)
    async with httpx.AsyncClient(timeout=timeout, headers=headers) as client:
        served, context = await _served_models(client, base, endpoint)
        try:
            first_byte_s, prefill_rate, answer = await _probe(client, base, endpoint)
        except _UnknownModel:
            check_model_listed(served, base, endpoint)  # the line with the names it serves
            raise
        check_model_listed(served, base, endpoint)
        usage_reported = None
        if usage_needed_by is not None:
            await _check_usage_reported(client, base, endpoint, answer, usage_needed_by)
            usage_reported = True
        if endpoint.context_window:
            context = _Context(endpoint.context_window, "context_window", context.server)
        elif context.tokens is None:
            context = await _server_context(client, base, endpoint, context)
        counted = await _count_prompt(client, base, endpoint, context.server)
        prompt_tokens, counted_by = _with_client_prompt(*counted, endpoint)
        if context.tokens is not None and prompt_tokens >= context.tokens:
            raise PreflightError(
                f"the prompt {endpoint.harness} sends before the question ({prompt_tokens:,} "
                f"tokens: instructions and {endpoint.tool_count} tools, {counted_by}) is over "
                f"the context of {endpoint.model} at {base} ({context.tokens:,} tokens, from "
                f"{context.source}): {TOOLS_HINT}"
            )
    bound = stall_bound(default_stall_s, first_byte_s, prefill_rate, prompt_tokens)
    return ModelEndpointCheck(
        base_url=_redacted(base),
        wire=endpoint.wire,  # type: ignore[arg-type]
        model=endpoint.model,
        server=context.server,
        served_models=served,
        context_tokens=context.tokens,
        context_source=context.source,
        prompt_tokens=prompt_tokens,
        prompt_tokens_source=counted_by,
        tool_count=endpoint.tool_count,
        usage_reported=usage_reported,
        first_byte_s=round(first_byte_s, 4),
        prefill_tokens_per_s=round(prefill_rate, 1) if prefill_rate else None,
        stall_bound_s=round(bound, 1),
        duration_s=round(time.monotonic() - started, 4),
    )


def stall_bound(
    default_s: float, first_byte_s: float, prefill_rate: float | None, prompt_tokens: int
) -> float:
    """The default stall bound, raised to cover ``STALL_FACTOR`` times the time the server needs
    to read the whole prompt (its measured prefill rate) and answer."""
    if not prefill_rate:
        return max(default_s, STALL_FACTOR * first_byte_s)
    reading_s = prompt_tokens / prefill_rate
    return max(default_s, STALL_FACTOR * (reading_s + first_byte_s))


def api_base(endpoint: ModelEndpoint) -> str:
    """The base the wire's paths hang off: the Anthropic SDK's base URL lacks the ``/v1``."""
    base = endpoint.base_url.rstrip("/")
    if endpoint.wire == "messages" and not base.endswith("/v1"):
        return f"{base}/v1"
    return base


def _auth_headers(endpoint: ModelEndpoint) -> dict[str, str]:
    if endpoint.wire == "messages":
        if endpoint.bearer:
            return {
                "authorization": f"Bearer {endpoint.api_key}",
                "anthropic-version": "2023-06-01",
            }
        return {"x-api-key": endpoint.api_key, "anthropic-version": "2023-06-01"}
    return {"authorization": f"Bearer {endpoint.api_key}"}


def _root(base: str) -> str:
    """The server root of an API base (``http://host:8080/v1`` -> ``http://host:8080``), where
    llama.cpp's ``/props`` and ``/tokenize`` and Ollama's ``/api/show`` live."""
    parts = urlsplit(base)
    path = re.sub(r"/v1$", "", parts.path.rstrip("/"))
    return urlunsplit((parts.scheme, parts.netloc, path, "", ""))


def _redacted(url: str) -> str:
    parts = urlsplit(url)
    if parts.password is None:
        return url
    netloc = f"{parts.username}:***@{parts.hostname}" + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, ""))


def _unreachable(base: str, error: Exception) -> PreflightError:
    cause = one_line(str(error)) or type(error).__name__
    return PreflightError(
        f"cannot reach the model server at {base} ({type(error).__name__}: {cause[:160]}): "
        "check --base-url and that the server is running"
    )


async def _get(client: Any, url: str, base: str) -> Any:
    import httpx

    try:
        return await client.get(url)
    except httpx.TransportError as error:
        raise _unreachable(base, error) from None


async def _post(client: Any, url: str, body: dict[str, Any], base: str, **options: Any) -> Any:
    import httpx

    try:
        return await client.post(url, json=body, **options)
    except httpx.TransportError as error:
        raise _unreachable(base, error) from None


def _json(response: Any) -> Any:
    try:
        return response.json()
    except ValueError:
        return None


def _refused_key(response: Any, base: str, endpoint: ModelEndpoint) -> PreflightError:
    variable = "ANTHROPIC_API_KEY" if endpoint.wire == "messages" else "OPENAI_API_KEY"
    return PreflightError(
        f"the model server at {base} refused the API key (HTTP {response.status_code}): set "
        f"{variable} to a key it accepts"
    )


async def _served_models(
    client: Any, base: str, endpoint: ModelEndpoint
) -> tuple[list[str], _Context]:
    """The model names ``GET /models`` lists (and a context it states: vLLM ``max_model_len``,
    llama.cpp ``meta.n_ctx``); a listed set without the model is refused."""
    response = await _get(client, f"{base}/models", base)
    if response.status_code in (401, 403):
        raise _refused_key(response, base, endpoint)
    body = _json(response)
    if response.status_code == 200 and not isinstance(body, dict):
        kind = response.headers.get("content-type", "no content type").split(";")[0]
        raise PreflightError(
            f"{base} is not an OpenAI-compatible API (GET /models answered {kind}, not JSON): "
            "check --base-url (for llama.cpp, vLLM and Ollama it ends in /v1)"
        )
    if response.status_code != 200 or not isinstance(body.get("data"), list):
        return [], _Context()
    names: list[str] = []
    context = _Context()
    for entry in body["data"]:
        if not isinstance(entry, dict):
            continue
        names += [str(entry["id"])] if entry.get("id") else []
        names += [str(alias) for alias in entry.get("aliases") or [] if alias]
        if isinstance(entry.get("max_model_len"), int) and entry.get("id") == endpoint.model:
            context = _Context(entry["max_model_len"], "GET /v1/models max_model_len", "vllm")
        meta = entry.get("meta")
        if isinstance(meta, dict) and isinstance(meta.get("n_ctx"), int) and meta["n_ctx"] > 0:
            context = _Context(meta["n_ctx"], "GET /v1/models meta.n_ctx", "llama.cpp")
    return names, context


def check_model_listed(names: list[str], base: str, endpoint: ModelEndpoint) -> None:
    """An OpenAI-compatible server that lists its models serves only those (Ollama adds
    ``:latest`` to a bare name). The Anthropic API lists dated ids and serves aliases too, so
    there the probe's 404 is what tells."""
    if not names or endpoint.wire == "messages":
        return
    if endpoint.model in names or f"{endpoint.model}:latest" in names:
        return
    listed = ", ".join(names[:8]) + (", ..." if len(names) > 8 else "")
    raise PreflightError(
        f"the model server at {base} has no model {endpoint.model!r} (it serves: {listed}): "
        f"pass one of them with --model"
    )


async def _server_context(
    client: Any, base: str, endpoint: ModelEndpoint, found: _Context
) -> _Context:
    """The context from llama.cpp's ``GET /props`` or Ollama's ``POST /api/show``."""
    root = _root(base)
    props = await _get(client, f"{root}/props", base)
    body = _json(props) if props.status_code == 200 else None
    if isinstance(body, dict):
        settings = body.get("default_generation_settings") or {}
        n_ctx = settings.get("n_ctx") if isinstance(settings, dict) else None
        if isinstance(n_ctx, int) and n_ctx > 0:
            return _Context(n_ctx, "GET /props n_ctx", "llama.cpp")
    show = await _post(client, f"{root}/api/show", {"model": endpoint.model}, base)
    body = _json(show) if show.status_code == 200 else None
    if isinstance(body, dict):
        tokens = _ollama_context(body)
        if tokens is not None:
            return _Context(tokens[0], f"POST /api/show {tokens[1]}", "ollama")
        return _Context(None, None, "ollama")
    return found


def _ollama_context(show: dict[str, Any]) -> tuple[int, str] | None:
    """Ollama runs a model with ``num_ctx`` (from its parameters) when set, else the context the
    model was trained for (``<arch>.context_length`` in ``model_info``)."""
    match = re.search(r"(?m)^\s*num_ctx\s+(\d+)", str(show.get("parameters") or ""))
    if match:
        return int(match.group(1)), "num_ctx"
    info = show.get("model_info")
    if isinstance(info, dict):
        for key, value in info.items():
            if key.endswith(".context_length") and isinstance(value, int):
                return value, key
    return None


async def _count_prompt(
    client: Any, base: str, endpoint: ModelEndpoint, server: str
) -> tuple[int, str]:
    """Tokens of the prompt: the server's own tokenizer where it has one (llama.cpp and vLLM
    ``POST /tokenize``), else an estimate."""
    root = _root(base)
    if server in ("llama.cpp", "vllm"):
        body = (
            {"content": endpoint.prompt}
            if server == "llama.cpp"
            else {"model": endpoint.model, "prompt": endpoint.prompt}
        )
        response = await _post(client, f"{root}/tokenize", body, base)
        answer = _json(response) if response.status_code == 200 else None
        if isinstance(answer, dict):
            if isinstance(answer.get("count"), int):
                return answer["count"], "server tokenizer"
            if isinstance(answer.get("tokens"), list):
                return len(answer["tokens"]), "server tokenizer"
    estimate = math.ceil(len(endpoint.prompt) / CHARS_PER_TOKEN)
    return estimate, f"estimate ({CHARS_PER_TOKEN} characters a token)"


def _with_client_prompt(tokens: int, counted_by: str, endpoint: ModelEndpoint) -> tuple[int, str]:
    """The count plus the client's own prompt (:attr:`ModelEndpoint.client_prompt_chars`)."""
    if not endpoint.client_prompt_chars:
        return tokens, counted_by
    own = math.ceil(endpoint.client_prompt_chars / CHARS_PER_TOKEN)
    return tokens + own, f"{counted_by}, with about {own:,} of the {endpoint.harness} client's own"


def probe_text() -> str:
    """The probe's prompt: a fresh nonce first, so no server answers it from a cached prefix
    (the prefill rate it shows is the server's, not its cache's)."""
    return f"Probe {uuid.uuid4().hex}. {PROBE_FILLER}Reply with the word OK."


def _probe_request(endpoint: ModelEndpoint) -> tuple[str, dict[str, Any]]:
    text = probe_text()
    if endpoint.wire == "responses":
        body = {"model": endpoint.model, "input": text, "max_output_tokens": 16}
        return "/responses", body
    message = [{"role": "user", "content": text}]
    if endpoint.wire == "messages":
        return "/messages", {"model": endpoint.model, "max_tokens": 1, "messages": message}
    return "/chat/completions", {"model": endpoint.model, "messages": message, "max_tokens": 1}


async def _probe(
    client: Any, base: str, endpoint: ModelEndpoint
) -> tuple[float, float | None, dict[str, Any]]:
    """Send the one-line probe in the harness's wire: (seconds to the first byte, prompt tokens
    read a second where known, the answer)."""
    import httpx

    path, body = _probe_request(endpoint)
    sent = time.monotonic()
    try:
        async with client.stream(
            "POST", f"{base}{path}", json=body, timeout=httpx.Timeout(PROBE_TIMEOUT_S, connect=3.0)
        ) as response:
            first_byte_s = time.monotonic() - sent
            raw = await response.aread()
    except httpx.TransportError as error:
        raise _unreachable(base, error) from None
    status = response.status_code
    text = raw.decode("utf-8", "replace")
    if status in (401, 403):
        raise _refused_key(response, base, endpoint)
    if status == 404 and _mentions_model(text, endpoint.model):
        raise _UnknownModel(
            f"the model server at {base} has no model {endpoint.model!r} ({_error_text(text)}): "
            "pass a model it serves with --model"
        )
    if status in (404, 405, 501):
        raise PreflightError(
            f"the server at {base} does not speak {WIRE_NAMES[endpoint.wire]} (HTTP {status} on "
            f"POST {path}): {WIRE_ALTERNATIVES[endpoint.wire]}"
        )
    if status >= 400:
        raise PreflightError(
            f"the model server at {base} refused a one-line request to {endpoint.model} (HTTP "
            f"{status}: {_error_text(text)}): check --model and the server's log"
        )
    answer = _json_text(text)
    if not isinstance(answer, dict):
        raise PreflightError(
            f"the server at {base} answered POST {path} with something that is not "
            f"{WIRE_NAMES[endpoint.wire]} JSON: check --base-url"
        )
    return first_byte_s, _prefill_rate(answer, first_byte_s), answer


async def _check_usage_reported(
    client: Any, base: str, endpoint: ModelEndpoint, answer: dict[str, Any], needed_by: str
) -> None:
    """Refuse a server whose replies carry no token usage, as the harness asks for them (a
    streamed probe for a streaming harness: some servers report usage only unstreamed)."""
    import httpx

    how = "in its replies"
    if endpoint.streamed:
        how = "in its streamed replies"
        path, body = _probe_request(endpoint)
        body["stream"] = True
        if endpoint.wire == "chat":
            body["stream_options"] = {"include_usage": True}
        slow = httpx.Timeout(PROBE_TIMEOUT_S, connect=3.0)  # a CPU server reads it as slowly
        reported = _events_report_usage(
            await _post(client, f"{base}{path}", body, base, timeout=slow)
        )
    else:
        reported = _reports_usage(answer)
    if not reported:
        raise PreflightError(
            f"the model server at {base} reports no token usage {how}, so {needed_by} cannot "
            "be enforced: run without --max-tokens (--timeout and --max-turns still bound each "
            "question) or use a server that reports usage"
        )


def _reports_usage(payload: Any) -> bool:
    """A reply (or stream event) carries token counts: ``usage`` of Chat Completions and the
    Messages API, and the same inside a Responses ``response`` or a Messages ``message``."""
    if not isinstance(payload, dict):
        return False
    usage = payload.get("usage")
    if isinstance(usage, dict) and any(
        isinstance(usage.get(key), int)
        for key in ("prompt_tokens", "completion_tokens", "input_tokens", "output_tokens")
    ):
        return True
    return any(_reports_usage(payload.get(key)) for key in ("response", "message"))


def _events_report_usage(response: Any) -> bool:
    """Whether any server-sent event of a streamed probe (or its body, when the server answered
    a streamed request unstreamed) carries token usage."""
    if response.status_code >= 400:
        return False
    text = response.text
    if _reports_usage(_json_text(text)):
        return True
    for line in text.splitlines():
        if line.startswith("data:") and _reports_usage(_json_text(line[5:].strip())):
            return True
    return False


def _json_text(text: str) -> Any:
    try:
        return json.loads(text)
    except ValueError:
        return None


def _mentions_model(text: str, model: str) -> bool:
    lowered = text.lower()
    if f"model: {model.lower()}" in lowered:  # the Anthropic API's wording
        return True
    return "model" in lowered and ("not found" in lowered or "does not exist" in lowered)


def _error_text(text: str) -> str:
    body = _json_text(text)
    if isinstance(body, dict):
        error = body.get("error", body)
        message = error.get("message") if isinstance(error, dict) else error
        if message:
            return one_line(str(message))[:200]
    return one_line(text)[:200] or "no body"


def _prefill_rate(answer: dict[str, Any], first_byte_s: float) -> float | None:
    """Prompt tokens a second, the lower (safer) of llama.cpp's ``timings.prompt_per_second`` and
    the probe's prompt tokens over its time to first byte (which includes the request's overhead
    and one output token)."""
    rates = []
    timings = answer.get("timings")
    if isinstance(timings, dict):
        rate = timings.get("prompt_per_second")
        if isinstance(rate, int | float) and rate > 0:
            rates.append(float(rate))
    usage = answer.get("usage")
    if isinstance(usage, dict) and first_byte_s > 0:
        tokens = usage.get("prompt_tokens") or usage.get("input_tokens")
        if isinstance(tokens, int) and tokens > 0:
            rates.append(tokens / first_byte_s)
    return min(rates) if rates else None


_OVERFLOW_PATTERNS = (
    # llama.cpp: "request (9000 tokens) exceeds the available context size (8192 tokens), ..."
    re.compile(r"\((?P<prompt>\d+) tokens\) exceeds the available context size \((?P<ctx>\d+)"),
    re.compile(
        r"input \((?P<prompt>\d+) tokens\) is larger than the max context size \((?P<ctx>\d+)"
    ),
    # vLLM and OpenAI: "This model's maximum context length is 8192 tokens. However, you
    # requested 9000 tokens ..."
    re.compile(
        r"maximum context length is (?P<ctx>\d+) tokens\. However, you requested (?P<prompt>\d+)"
    ),
    # Anthropic: "prompt is too long: 210000 tokens > 200000 maximum"
    re.compile(r"prompt is too long: (?P<prompt>\d+) tokens > (?P<ctx>\d+) maximum"),
)
_OVERFLOW_WORDS = (
    "exceed_context_size_error",
    "exceeds the available context",
    "larger than the max context size",
    "maximum context length",
    "context_length_exceeded",
    "prompt is too long",
)


def context_overflow(error: BaseException) -> str | None:
    """When ``error`` (or its cause) is a provider refusing a prompt over the model's context,
    the one line that says so (with both numbers when the provider gave them), else None."""
    current: BaseException | None = error
    seen = 0
    while current is not None and seen < 8:
        text = str(current)
        lowered = text.lower()
        if any(word in lowered for word in _OVERFLOW_WORDS):
            return _overflow_line(text)
        current, seen = current.__cause__ or current.__context__, seen + 1
    return None


def _overflow_line(text: str) -> str:
    for pattern in _OVERFLOW_PATTERNS:
        match = pattern.search(text)
        if match:
            prompt, ctx = int(match.group("prompt")), int(match.group("ctx"))
            return (
                f"the model's context is too small for this run: a request of {prompt:,} tokens "
                f"is over its context of {ctx:,} tokens: {TOOLS_HINT}"
            )
    return f"the model's context is too small for this run ({one_line(text)[:200]}): {TOOLS_HINT}"
