"""The research world's figures: generation, search engines, and MCP latency against the floor.

1. Generation: ``python -m synthetic_world generate`` of the default world (scale 1) from the
   default ERP in a fresh subprocess: wall time, the generator's own time, peak memory (RSS of the
   child), file size and counts.
2. Ranking engines on the same documents and queries: SQLite FTS5 (the world's index, through
   ``synthetic_world._search.SearchEngine``) and, when installed (``pip install bm25s``), bm25s:
   index time and queries per second, single thread, no MCP.
3. MCP over streamable HTTP on loopback: ``python -m synthetic_world serve --transport http
   --bench-tools`` and one client session calling the no-op ``ping`` (the floor), ``search``
   (agent-style queries: a company's name and the words of what it asks, with and without the
   company filter) and ``fetch`` (documents those searches return); p50 / p90 and the ratio of
   each p50 to the floor's p50, all measured in the same run, plus the largest result seen.
4. Server start: the runner's own start of a world server (subprocess, port, ``world_info``).

    .venv/bin/python bench/bench_world.py               # all three
    .venv/bin/python bench/bench_world.py --skip-generate -n 200

Targets (issue 23): generation, index and hash under 60 s and 1 GB; search p50 within 3x of the
floor, fetch within 2x; no result over 100,000 characters.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import random
import resource
import socket
import sqlite3
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def generate(erp_url: str, folder: Path) -> Path:
    path = folder / "world.db"
    started = time.perf_counter()
    subprocess.run(
        [
            sys.executable,
            "-m",
            "synthetic_world",
            "generate",
            "--erp-db",
            erp_url,
            "--db",
            f"sqlite:///{path}",
            "--overwrite",
            "--quiet",
        ],
        cwd=REPO,
        check=True,
        capture_output=True,
        text=True,
    )
    wall = time.perf_counter() - started
    peak_mb = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss / 1024
    conn = sqlite3.connect(path)
    counts = {
        t: conn.execute(f"SELECT count(*) FROM {t}").fetchone()[0]
        for t in ("company", "document", "fact", "event", "price")
    }
    conn.close()
    print("== generation (default world, scale 1)")
    print(f"  wall {wall:.1f} s (process start, imports, ERP read, facts, documents, index, hash)")
    print(f"  peak RSS {peak_mb:.0f} MB; file {path.stat().st_size / 1e6:.0f} MB")
    print("  " + ", ".join(f"{n:,} {t}" for t, n in counts.items()))
    print(f"  target: under 60 s and 1 GB -> {'met' if wall < 60 and peak_mb < 1024 else 'MISSED'}")
    return path


def agent_queries(world: Path, n: int, seed: int = 1) -> list[tuple[str, str | None]]:
    """(query, company id or None): the queries an agent makes for the world's questions."""
    rng = random.Random(seed)
    conn = sqlite3.connect(f"file:{world}?mode=ro", uri=True)
    rows = conn.execute(
        "SELECT company_id, name, listed FROM company WHERE kind = 'notable' ORDER BY company_id"
    ).fetchall()
    conn.close()
    topics = [
        "annual report fiscal {y} revenue",
        "operating income fiscal {y}",
        "free cash flow fiscal {y}",
        "quarterly results revenue",
        "funding round led by",
        "chief executive",
        "product line revenue fiscal {y}",
        "competitors",
        "regulator fine",
        "segment revenue fiscal {y}",
        "earnings release adjusted margin",
    ]
    queries = []
    for _ in range(n):
        company_id, name, _ = rng.choice(rows)
        topic = rng.choice(topics).format(y=rng.choice((2023, 2024, 2025)))
        queries.append((f"{name} {topic}", company_id if rng.random() < 0.5 else None))
    return queries


def engines(world: Path, queries: list[tuple[str, str | None]]) -> None:
    from synthetic_world._search import STOP_WORDS, SearchEngine, query_words

    conn = sqlite3.connect(f"file:{world}?mode=ro", uri=True)
    (documents,) = conn.execute("SELECT count(*) FROM document").fetchone()
    engine = SearchEngine(conn, documents)
    for query, company in queries[:20]:  # warm the page cache
        engine.search(query, 5, company_id=company)
    started = time.perf_counter()
    for query, company in queries:
        engine.search(query, 5, company_id=company)
    fts = len(queries) / (time.perf_counter() - started)
    print("== ranking engines (same documents, same queries, single thread, no MCP)")
    print(f"  SQLite FTS5: {fts:,.0f} queries/s (index built at generation: no start-up cost)")
    try:
        import bm25s
    except ImportError:
        print("  bm25s: not installed (pip install bm25s) - skipped")
        conn.close()
        return
    texts = [
        f"{t}\n{b}" for t, b in conn.execute("SELECT title, body FROM document ORDER BY rowid")
    ]
    conn.close()
    started = time.perf_counter()
    corpus = bm25s.tokenize(texts, stopwords=sorted(STOP_WORDS), show_progress=False)
    retriever = bm25s.BM25()
    retriever.index(corpus, show_progress=False)
    built = time.perf_counter() - started
    tokens = [" ".join(query_words(q)) for q, _ in queries]
    started = time.perf_counter()
    for text in tokens:
        retriever.retrieve(bm25s.tokenize([text], show_progress=False), k=5, show_progress=False)
    rate = len(tokens) / (time.perf_counter() - started)
    print(
        f"  bm25s {bm25s.__version__}: {rate:,.0f} queries/s after {built:.1f} s of indexing at "
        "every server start (no company, type or date filters: those would be ours to add)"
    )


async def latency(world: Path, n: int) -> None:
    from fastmcp import Client
    from fastmcp.client.transports import StreamableHttpTransport

    port = _free_port()
    env = dict(os.environ, FASTMCP_LOG_LEVEL="WARNING", FASTMCP_SHOW_SERVER_BANNER="false")
    server = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "synthetic_world",
            "serve",
            "--db",
            str(world),
            "--transport",
            "http",
            "--port",
            str(port),
            "--bench-tools",
        ],
        cwd=REPO,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            with socket.socket() as sock:
                if sock.connect_ex(("127.0.0.1", port)) == 0:
                    break
            await asyncio.sleep(0.1)
        queries = agent_queries(world, n, seed=2)
        transport = StreamableHttpTransport(f"http://127.0.0.1:{port}/mcp")
        async with Client(transport) as client:
            largest: dict[str, int] = {}

            async def timed(tool: str, arguments: dict) -> tuple[float, dict]:
                started = time.perf_counter()
                result = await client.call_tool(tool, arguments)
                elapsed = (time.perf_counter() - started) * 1000
                size = len(json.dumps(result.structured_content))
                largest[tool] = max(largest.get(tool, 0), size)
                return elapsed, result.structured_content

            for _ in range(20):  # warm-up
                await timed("ping", {})
            urls: list[str] = []
            samples: dict[str, list[float]] = {"ping": [], "search": [], "fetch": []}
            for i, (query, company) in enumerate(queries):
                samples["ping"].append((await timed("ping", {}))[0])
                arguments = {"query": query, "k": 5} | ({"company": company} if company else {})
                elapsed, data = await timed("search", arguments)
                samples["search"].append(elapsed)
                urls += [r["url"] for r in data["results"][:1]]
                if urls:
                    samples["fetch"].append((await timed("fetch", {"url": urls[i % len(urls)]}))[0])
            floor = statistics.median(samples["ping"])
            print(f"== MCP over streamable HTTP ({n} calls each, interleaved, one session)")
            for tool, values in samples.items():
                values.sort()
                p50 = statistics.median(values)
                p90 = values[int(0.9 * (len(values) - 1))]
                print(
                    f"  {tool:7} p50 {p50:6.2f} ms  p90 {p90:6.2f} ms  "
                    f"p50/floor {p50 / floor:4.2f}x  largest result {largest.get(tool, 0):,} chars"
                )
            search_ratio = statistics.median(samples["search"]) / floor
            fetch_ratio = statistics.median(samples["fetch"]) / floor
            verdict = "met" if search_ratio <= 3 and fetch_ratio <= 2 else "MISSED"
            print(
                f"  targets: search within 3x ({search_ratio:.2f}x), fetch within 2x "
                f"({fetch_ratio:.2f}x) of the floor -> {verdict}"
            )
            budget = max(largest.values())
            print(
                f"  largest result {budget:,} chars (budget 100,000) -> "
                f"{'met' if budget <= 100_000 else 'MISSED'}"
            )
    finally:
        server.terminate()
        server.wait(timeout=10)


def server_start(world: Path, repeats: int = 5) -> None:
    """What serving the world adds to a run: the runner's own start of the world server (a
    subprocess on a free port, waited for until it listens) plus its ``world_info`` check."""
    from harnesses._erp_process import start_mcp_server
    from harnesses._world_serving import fetch_world_info

    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        server = start_mcp_server(
            ["synthetic_world", "serve", "--db", str(world)],
            token_env="WORLD_MCP_TOKEN",
            what="the research world's MCP server",
        )
        try:
            asyncio.run(fetch_world_info(server.endpoint))
            times.append(time.perf_counter() - started)
        finally:
            server.stop()
    median = statistics.median(times)
    print(f"== world server start (runner's path, {repeats} starts)")
    print(
        f"  median {median:.2f} s, max {max(times):.2f} s; target: under 3 s added to a run -> "
        f"{'met' if median < 3 else 'MISSED'}"
    )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--erp-db", default=None, help="ERP URL (default: the default ERP)")
    parser.add_argument("--world", type=Path, help="use this world file instead of generating one")
    parser.add_argument("--skip-generate", action="store_true", help="use the default world")
    parser.add_argument("-n", type=int, default=300, help="calls per tool (default 300)")
    args = parser.parse_args()
    from harnesses._erp_process import ensure_default_erp, project_root

    erp = args.erp_db or ensure_default_erp()
    with tempfile.TemporaryDirectory(prefix="bench-world-") as folder:
        world = args.world
        if world is None and args.skip_generate:
            world = project_root() / ".ledgerbench" / "world.db"
        if world is None:
            world = generate(erp, Path(folder))
        engines(world, agent_queries(world, args.n * 3))
        asyncio.run(latency(world, args.n))
        server_start(world)


if __name__ == "__main__":
    main()
