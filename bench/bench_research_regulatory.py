"""The regulatory world and its questions: what the history holds, and who answers its items.

On one world (``--world-db``, a SQLite URL as the other commands take or a file path; default
``world.db`` beside the seed-42 ``erp.db``) it prints the
regulatory history (companies with one, events by kind, penalties as a share of the operating
income of the fiscal year they fell in), then draws ``--items`` regulatory-exposure items and as
many latest-penalty items of each polarity with the generator's own drafter, runs the scripted
baseline, the ``nothing`` agent and the shortcut reader (``tests/fakes/research_model.py`` on the
fake OpenAI server: search the question, read the top result, state its first figure) on them,
judges them with the rules judge and prints accuracy per agent, kind and polarity.

    .venv/bin/python bench/bench_research_regulatory.py [--world-db sqlite:///world.db
        --erp-db sqlite:///erp.db]
        [--items 20]
"""

from __future__ import annotations

import argparse
import datetime as dt
import json
import os
import random
import sqlite3
import statistics
import sys
import tempfile
from collections import Counter, defaultdict
from decimal import Decimal
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from harnesses._runner import RunConfig, run  # noqa: E402
from judge import JudgeRunConfig, run_judge  # noqa: E402
from ledgerbench_core.dataset import load_dataset, write_dataset  # noqa: E402
from synthetic_erp._db import sqlite_path  # noqa: E402
from synthetic_world._calendar import fiscal_year_of  # noqa: E402
from synthetic_world._keys import KeyContext  # noqa: E402
from synthetic_world._questions import Drafter, question_kinds  # noqa: E402
from synthetic_world._runtime import connect_read_only  # noqa: E402
from tests.fakes.openai_server import serve_openai  # noqa: E402
from tests.fakes.research_model import openai_script  # noqa: E402

KEY = "sk-bench-regulatory"


def history(world: Path) -> None:
    conn = sqlite3.connect(f"file:{world}?mode=ro", uri=True)
    kinds = Counter(
        dict(
            conn.execute(
                "SELECT kind, count(*) FROM event WHERE kind LIKE 'regulatory%' GROUP BY kind"
            )
        )
    )
    (companies,) = conn.execute(
        "SELECT count(DISTINCT company_id) FROM event WHERE kind = 'regulatory_investigation'"
    ).fetchone()
    months = dict(conn.execute("SELECT company_id, fiscal_year_end_month FROM company"))
    shares = []
    for cid, day, details in conn.execute(
        "SELECT company_id, date, details FROM event WHERE kind = 'regulatory_action'"
    ):
        fy = fiscal_year_of(months[cid], dt.date.fromisoformat(day))
        row = conn.execute(
            "SELECT value FROM fact WHERE company_id = ? AND metric = 'operating_income' AND "
            "period_id = ? AND basis = 'GAAP' AND member = '' ORDER BY version DESC LIMIT 1",
            (cid, f"FY{fy}"),
        ).fetchone()
        if row and Decimal(row[0]) > 0:
            shares.append(float(Decimal(json.loads(details)["amount"]) / Decimal(row[0]) * 100))
    conn.close()
    shares.sort()
    print(f"companies with a regulatory history: {companies}")
    print("events: " + ", ".join(f"{k} {v}" for k, v in sorted(kinds.items())))
    quartiles = statistics.quantiles(shares, n=4)
    print(
        f"penalty / operating income of its fiscal year ({len(shares)} penalties on a profit): "
        f"median {quartiles[1]:.1f}%, quartiles {quartiles[0]:.1f}-{quartiles[2]:.1f}%, "
        f"max {shares[-1]:.1f}%"
    )


def draw(world: Path, template: Path, items: int, out: Path) -> Path:
    conn = connect_read_only(world)
    try:
        drafter = Drafter(KeyContext(conn), random.Random("bench-regulatory"), {})
        kinds = {k.kind: k for k in question_kinds()[2]}
        plan = [("regulatory_exposure", False, items), ("regulatory_action", False, items // 2)]
        plan.append(("regulatory_action", True, items // 2))
        drawn = [
            item
            for name, negative, count in plan
            for item in drafter.draw_questions(
                kinds[name], negative, count, f"reg-{name}-{'neg' if negative else 'pos'}",
                tries=50 * count,
            )
        ]  # fmt: skip
    finally:
        conn.close()
    base = load_dataset(template)
    return write_dataset(base.model_copy(update={"items": drawn}), out)


def accuracy(dataset: Path, out: Path, erp_db: str, world: Path, **options) -> dict:
    run(
        RunConfig(
            dataset=dataset,
            erp_db=erp_db,
            world_db=f"sqlite:///{world}",
            out=out,
            progress=False,
            concurrency=2,
            **options,
        ),
        log=lambda _m: None,
    )
    run_judge(
        JudgeRunConfig(
            run_dir=out, judge="rules", dataset=str(dataset), erp_db=erp_db, progress=False
        )
    )
    items = {item.id: item for item in load_dataset(dataset).items}
    cells: dict[tuple, list[float]] = defaultdict(list)
    for line in (out / "scores" / "rules.jsonl").open():
        record = json.loads(line)
        item = items[record["question_id"]]
        polarity = "none" if item.metadata["negative"] else "positive"
        cells[item.metadata["kind"], polarity].append(record["dimensions"]["accuracy"]["score"])
    return {cell: statistics.fmean(values) for cell, values in cells.items()} | {
        ("n", cell): len(values) for cell, values in cells.items()
    }


def _world_file(value: str) -> Path:
    """``--world-db``: a SQLite URL (as every other command takes it) or a plain file path."""
    if "://" not in value:
        return Path(value)
    path = sqlite_path(value)
    if path is None:
        raise argparse.ArgumentTypeError(f"{value} is not a SQLite file URL (sqlite:///world.db)")
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--world-db", type=_world_file, default=Path("world.db"),
                        help="the world: a sqlite:/// URL or a file path")  # fmt: skip
    parser.add_argument("--erp-db", default="sqlite:///erp.db")
    parser.add_argument("--items", type=int, default=20)
    parser.add_argument(
        "--template", type=Path, default=ROOT / "datasets" / "entity_performance.yaml"
    )
    args = parser.parse_args()
    if not args.world_db.exists():
        sys.exit(f"no world at {args.world_db}; make one with python -m synthetic_world generate")
    history(args.world_db)
    os.environ["OPENAI_API_KEY"] = KEY
    with tempfile.TemporaryDirectory() as tmp:
        dataset = draw(args.world_db, args.template, args.items, Path(tmp) / "regulatory.yaml")
        results = {}
        for agent in ("scripted", "nothing"):
            results[agent] = accuracy(
                dataset, Path(tmp) / agent, args.erp_db, args.world_db, harness=agent
            )
        with serve_openai(openai_script, api_key=KEY) as fake:
            results["shortcut"] = accuracy(
                dataset,
                Path(tmp) / "shortcut",
                args.erp_db,
                args.world_db,
                harness="openai",
                model="gpt-5.2",
                base_url=fake.base_url,
            )
    cells = sorted(c for c in results["scripted"] if c[0] != "n")
    print(f"\n{'kind':<22}{'items':<10}{'n':>4}" + "".join(f"{a:>10}" for a in results))
    for cell in cells:
        n = results["scripted"][("n", cell)]
        row = "".join(f"{results[a].get(cell, float('nan')):>10.3f}" for a in results)
        print(f"{cell[0]:<22}{cell[1]:<10}{n:>4}{row}")


if __name__ == "__main__":
    main()
