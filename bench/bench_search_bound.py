"""World search cost per query shape, at the default world and at a world 4x larger.

    python bench/bench_search_bound.py [-n 40] [--busy 0] [--skip-4x]

Through the MCP server (``synthetic_world serve --transport http --bench-tools``, the official
client, one session), interleaved with the no-op ``ping`` (the floor), the p50 of ``search`` for
each shape: typical (a company's name and a metric), one common word, three common words, 24
words that are all common, a company filter, a date filter. Then the top-10 overlap between the
bounded engine and the exact ranking it replaced (bm25 over every match, OR of the words in under
8% of the documents) on agent-style queries. Goals (issue 40): typical within 3x of the floor;
every other shape within 3x of the typical p50; at 4x, each shape within 1.5x of its 1x p50.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from bench.bench_server_start import busy_loops  # noqa: E402
from bench.bench_world import agent_queries  # noqa: E402
from harnesses._erp_process import start_mcp_server  # noqa: E402
from ledgerbench_core._startup import describe_load  # noqa: E402
from synthetic_world._search import (  # noqa: E402
    BM25_WEIGHTS,
    RARE_SHARE,
    SCORED_CAP,
    SearchEngine,
    query_words,
)

COMMON = "million fiscal year quarter revenue net operating share results company income total"
COMMON += " period ended months margin growth cash statement annual adjusted gaap based three"


def shapes(world: Path, n: int) -> dict[str, list[dict]]:
    conn = sqlite3.connect(f"file:{world}?mode=ro", uri=True)
    engine = SearchEngine(conn, conn.execute("SELECT count(*) FROM document").fetchone()[0])
    common = [w for w in COMMON.split() if engine.frequency(w) > SCORED_CAP]
    companies = conn.execute(
        "SELECT company_id, name FROM company WHERE kind = 'notable' ORDER BY company_id"
    ).fetchall()
    (middle,) = conn.execute(
        "SELECT published_at FROM document ORDER BY rowid LIMIT 1 OFFSET "
        "(SELECT count(*) / 2 FROM document)"
    ).fetchone()
    conn.close()
    rng = random.Random(7)

    def some(count: int) -> str:
        return " ".join(rng.sample(common, min(count, len(common))))

    return {
        "typical": [{"query": f"{rng.choice(companies)[1]} revenue fiscal 2024"} for _ in range(n)],
        "one common word": [{"query": some(1)} for _ in range(n)],
        "three common": [{"query": some(3)} for _ in range(n)],
        "24 common": [{"query": some(24)} for _ in range(n)],
        "company filter": [
            {"query": some(3), "company": rng.choice(companies)[0]} for _ in range(n)
        ],
        "date filter": [{"query": some(3), "published_before": middle} for _ in range(n)],
    }


async def latencies(worlds: dict[str, Path], n: int) -> dict[str, dict[str, float]]:
    """p50 per shape per world; the worlds' servers answer in turns, call by call, so the
    ratios between worlds compare calls made in the same moments of a busy machine."""
    from fastmcp import Client
    from fastmcp.client.transports import StreamableHttpTransport

    servers = {
        label: start_mcp_server(
            ["synthetic_world", "serve", "--db", str(world), "--bench-tools"],
            token_env="WORLD_MCP_TOKEN",
            what=f"the {label} research world's MCP server",
        )
        for label, world in worlds.items()
    }
    try:
        clients = {}
        for label, server in servers.items():
            auth = {"Authorization": f"Bearer {server.endpoint.token}"}
            clients[label] = Client(StreamableHttpTransport(server.endpoint.url, headers=auth))
            await clients[label].__aenter__()
        shaped = {label: shapes(world, n) for label, world in worlds.items()}
        samples = {label: {"floor (ping)": []} for label in worlds}
        for client in clients.values():
            for _ in range(20):
                await client.call_tool("ping", {})
        for name in shaped[next(iter(worlds))]:
            for index in range(n):
                for label, client in clients.items():
                    arguments = shaped[label][name][index]
                    for tool, args in (("ping", {}), ("search", {**arguments, "k": 10})):
                        started = time.perf_counter()
                        await client.call_tool(tool, args)
                        elapsed = (time.perf_counter() - started) * 1000
                        key = "floor (ping)" if tool == "ping" else name
                        samples[label].setdefault(key, []).append(elapsed)
        for client in clients.values():
            await client.__aexit__(None, None, None)
        return {
            label: {name: statistics.median(values) for name, values in by_shape.items()}
            for label, by_shape in samples.items()
        }
    finally:
        for server in servers.values():
            server.stop()


def exact_before(engine: SearchEngine, query: str, k: int) -> list[int]:
    """The ranking the bound replaced: AND by bm25 over every match, then an OR of the words in
    under RARE_SHARE of the documents (all words if none), also over every match."""
    words = query_words(query)
    weights = ", ".join(str(w) for w in BM25_WEIGHTS)

    def ranked(match: str, limit: int) -> list[int]:
        sql = (
            f"SELECT rowid FROM document_fts WHERE document_fts MATCH ? "
            f"ORDER BY bm25(document_fts, {weights}), rowid LIMIT ?"
        )
        return [rowid for (rowid,) in engine.conn.execute(sql, [match, limit])]

    def count(word: str) -> int:
        sql = "SELECT count(*) FROM document_fts WHERE document_fts MATCH ?"
        return engine.conn.execute(sql, [f'"{word}"']).fetchone()[0]

    hits = ranked(" AND ".join(f'"{w}"' for w in words), k)
    if len(hits) < k and len(words) > 1:
        rare = [w for w in words if count(w) <= RARE_SHARE * engine.documents] or words
        more = ranked(" OR ".join(f'"{w}"' for w in rare), k + len(hits))
        hits += [h for h in more if h not in hits][: k - len(hits)]
    return hits


def overlap(world: Path, n: int) -> float:
    conn = sqlite3.connect(f"file:{world}?mode=ro", uri=True)
    engine = SearchEngine(conn, conn.execute("SELECT count(*) FROM document").fetchone()[0])
    shared = total = 0
    for query, _ in agent_queries(world, n, seed=3):
        before = exact_before(engine, query, 10)
        now = [hit.rowid for hit in engine.search(query, 10)]
        shared += len(set(before) & set(now))
        total += len(before)
    conn.close()
    return shared / max(total, 1)


def world_at(scale: float) -> Path:
    from harnesses._erp_process import ensure_default_erp
    from harnesses._world_serving import ensure_default_world
    from synthetic_world import generate_world

    erp = ensure_default_erp()
    if scale == 1:
        return ensure_default_world(erp, seed=42, expected_snapshot=None)
    path = Path(tempfile.gettempdir()) / f"ledgerbench_bench_world_{scale:g}x.db"
    if not path.exists():
        print(f"generating a {scale:g}x world at {path} (once; minutes)")
        generate_world(erp, path, seed=42, scale=scale)
    return path


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("-n", type=int, default=40, help="calls per shape")
    parser.add_argument("--busy", type=int, default=0, help="busy loops beside the server")
    parser.add_argument("--skip-4x", action="store_true")
    args = parser.parse_args()
    worlds = {"1x": world_at(1)} | ({} if args.skip_4x else {"4x": world_at(4)})
    with busy_loops(args.busy):
        print(f"{args.busy} busy loops beside{describe_load()}; {args.n} calls per shape")
        results = asyncio.run(latencies(worlds, args.n))
    for label, p50 in results.items():
        floor, typical = p50["floor (ping)"], p50["typical"]
        print(f"== {label} world: p50 ms (x floor, x typical)")
        for name, value in p50.items():
            line = f"  {name:16} {value:7.2f} ms  {value / floor:5.2f}x floor  "
            print(line + f"{value / typical:5.2f}x typical")
    if "4x" in results:
        print("== 4x over 1x, p50")
        for name, value in results["4x"].items():
            print(f"  {name:16} {value / results['1x'][name]:5.2f}x")
    shared = overlap(worlds["1x"], 200)
    print(f"top-10 overlap with the exact ranking, agent queries (1x): {shared:.1%}")
    print(f"after{describe_load()}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
