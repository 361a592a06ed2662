"""World servers started as the runner starts them, while other programs on the machine keep
binding free ports and listening (as other servers and test suites on a shared runner do): how
many first ``world_info`` calls reach their own server.

Each neighbour binds a free port (port 0), listens for ``--hold`` seconds answering every request
with a 401, and starts over. Before the runner handed the port over (it picked a free port,
released it, and the server bound it seconds later), a neighbour could take the port meanwhile;
the runner then saw it listen and its first call failed with "Server returned an error response".
``--busy N`` runs N ``yes`` loops beside (a longer start is a longer window).

    .venv/bin/python bench/bench_port_race.py [--rounds 4] [--at-once 6] [--neighbours 600]
        [--hold 2] [--busy 8]
"""

from __future__ import annotations

import argparse
import asyncio
import collections
import socket
import sys
import tempfile
import threading
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from bench.bench_server_start import busy_loops  # noqa: E402

FOREIGN_REPLY = (
    b"HTTP/1.1 401 Unauthorized\r\ncontent-type: application/json\r\ncontent-length: 25\r\n"
    b'connection: close\r\n\r\n{"error":"invalid_token"}'
)


def neighbour(hold_s: float, stop: threading.Event, binds: collections.Counter) -> None:
    """Another program's server: a free port, listened on for ``hold_s``, again and again."""
    while not stop.is_set():
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            sock.listen(8)
            sock.settimeout(0.2)
            binds["listeners"] += 1
            until = time.monotonic() + hold_s
            while time.monotonic() < until and not stop.is_set():
                try:
                    conn, _ = sock.accept()
                except OSError:
                    continue
                with conn:
                    conn.recv(65536)
                    conn.sendall(FOREIGN_REPLY)


async def start_and_ask(world: Path, log: Path) -> str:
    """``ok``, or the first line of why the start or the first ``world_info`` failed."""
    from harnesses._erp_process import ServerStartError
    from harnesses._run_config import RunConfigError
    from harnesses._world_serving import fetch_world_info, start_world_server

    server = start_world_server(world, [], log, None, wait=False)
    try:
        await server.until_listening()
        await fetch_world_info(server.endpoint)
        return "ok"
    except (RunConfigError, ServerStartError) as error:
        return str(error).split(" at http://")[0] + " ... " + str(error).split("(", 1)[-1][:60]
    finally:
        await asyncio.to_thread(server.stop)


async def rounds(args: argparse.Namespace, world: Path, scratch: Path) -> collections.Counter:
    outcomes: collections.Counter = collections.Counter()
    for index in range(args.rounds):
        logs = [scratch / f"world-{index}-{k}.log" for k in range(args.at_once)]
        outcomes.update(await asyncio.gather(*(start_and_ask(world, log) for log in logs)))
    return outcomes


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--rounds", type=int, default=4, help="rounds of starts, e.g. 4")
    parser.add_argument("--at-once", type=int, default=6, help="starts per round, e.g. 6")
    parser.add_argument("--neighbours", type=int, default=600, help="neighbour threads")
    parser.add_argument("--hold", type=float, default=2.0, help="seconds a neighbour listens")
    parser.add_argument("--busy", type=int, default=8, help="busy loops beside")
    args = parser.parse_args(argv)
    if min(args.rounds, args.at_once, args.neighbours) < 1 or args.hold <= 0 or args.busy < 0:
        parser.error("--rounds, --at-once and --neighbours at least 1, --hold above 0")
    from harnesses._erp_process import ensure_default_erp
    from harnesses._world_serving import DEFAULT_WORLD_SEED, ensure_default_world
    from ledgerbench_core._startup import describe_load

    world = ensure_default_world(ensure_default_erp(), seed=DEFAULT_WORLD_SEED,
                                 expected_snapshot=None)  # fmt: skip
    stop, binds = threading.Event(), collections.Counter()
    threads = [
        threading.Thread(target=neighbour, args=(args.hold, stop, binds), daemon=True)
        for _ in range(args.neighbours)
    ]
    with busy_loops(args.busy), tempfile.TemporaryDirectory() as scratch:
        print(f"{args.busy} busy loops, {args.neighbours} neighbours{describe_load()}")
        for thread in threads:
            thread.start()
        try:
            outcomes = asyncio.run(rounds(args, world, Path(scratch)))
        finally:
            stop.set()
            for thread in threads:
                thread.join()
    total = sum(outcomes.values())
    print(f"first world_info answered by its own server: {outcomes['ok']}/{total}; neighbour "
          f"listeners meanwhile: {binds['listeners']}{describe_load()}")  # fmt: skip
    for outcome, count in outcomes.items():
        if outcome != "ok":
            print(f"  {count} x {outcome}")
    return 0 if outcomes["ok"] == total else 1


if __name__ == "__main__":
    raise SystemExit(main())
