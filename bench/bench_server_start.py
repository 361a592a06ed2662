"""What an ERP and a world server spend before they listen: CPU seconds and wall time per start.

    python bench/bench_server_start.py [--repeats 5] [--busy 4] [--cold-cache]

Each start is the runner's own (a subprocess on a free port with a token, waited for on its
progress), measured from the spawn to the first accepted connection. CPU is the server process's
user+system time from /proc at that moment. ``--busy N`` runs N ``yes > /dev/null`` loops beside
the servers (the load a shared CI box adds). ``--cold-cache`` starts each server with an empty
tool-schema cache (``erp_mcp._tool_cache``), as the first start after a code change. Goals
(issue 40): ERP ready in under 1.5 s of CPU at 1x, world under 2 s.
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from erp_mcp._tool_cache import CACHE_DIR_ENV
from harnesses._erp_process import start_erp_server, start_mcp_server
from ledgerbench_core._startup import describe_load


@contextlib.contextmanager
def busy_loops(count: int) -> Iterator[None]:
    loops = [
        subprocess.Popen(["yes"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        for _ in range(count)
    ]
    try:
        yield
    finally:
        for loop in loops:
            loop.kill()
            loop.wait()


def measure(start, repeats: int, cold_cache: bool) -> tuple[list[float], list[float]]:
    walls, cpus = [], []
    for _ in range(repeats):
        if cold_cache:  # an empty schema cache: the start derives every tool schema again
            os.environ[CACHE_DIR_ENV] = tempfile.mkdtemp(prefix="bench-cold-cache-")
        server = start()
        try:
            walls.append(server.started_in_s or 0.0)
            cpus.append(server.start_cpu_s or 0.0)
        finally:
            server.stop()
    return walls, cpus


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=5)
    parser.add_argument("--busy", type=int, default=0, help="busy loops beside the servers")
    parser.add_argument(
        "--cold-cache",
        action="store_true",
        help="every start with an empty tool-schema cache (as the first start after a change)",
    )
    args = parser.parse_args()
    from harnesses._erp_process import ensure_default_erp
    from harnesses._world_serving import ensure_default_world

    erp_url = ensure_default_erp()
    world = ensure_default_world(erp_url, seed=42, expected_snapshot=None)
    starts = {
        "ERP server (1x)": lambda: start_erp_server(erp_url),
        "world server": lambda: start_mcp_server(
            ["synthetic_world", "serve", "--db", str(world)],
            token_env="WORLD_MCP_TOKEN",
            what="the research world's MCP server",
            log_path=Path(tempfile.gettempdir()) / "bench_server_start_world.log",
        ),
    }
    with busy_loops(args.busy):
        cache = "empty" if args.cold_cache else "warm"
        print(
            f"{args.busy} busy loops beside{describe_load()}; {args.repeats} starts each; "
            f"tool-schema cache {cache}"
        )
        for name, start in starts.items():
            walls, cpus = measure(start, args.repeats, args.cold_cache)
            print(
                f"{name:18} CPU median {statistics.median(cpus):.2f} s (max {max(cpus):.2f}); "
                f"wall median {statistics.median(walls):.2f} s (max {max(walls):.2f})"
            )
        print(f"after{describe_load()}")
    return 0


if __name__ == "__main__":
    os.environ.setdefault("FASTMCP_LOG_LEVEL", "WARNING")
    raise SystemExit(main())
