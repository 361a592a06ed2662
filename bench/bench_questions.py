"""Throughput of the obligation question generator and of dataset loading.

    .venv/bin/python bench/bench_questions.py [--db sqlite:///erp.db] [--n 100 1000 5000]

Generates a default ERP in a temporary directory when --db is not given.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from pathlib import Path

from ledgerbench_core.dataset import dataset_hash, load_dataset, write_dataset
from synthetic_erp import generate_erp
from synthetic_erp._questions import generate_questions


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--db", help="existing ERP URL (default: generate one, seed 42, 1x)")
    parser.add_argument("--n", type=int, nargs="+", default=[100, 1000, 3000])
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        db = args.db
        if db is None:
            db = f"sqlite:///{Path(tmp) / 'erp.db'}"
            started = time.perf_counter()
            generate_erp(db, seed=42)
            print(f"ERP generated in {time.perf_counter() - started:.1f} s")
        for n in args.n:
            started = time.perf_counter()
            dataset = generate_questions(db, n=n, seed=42)
            seconds = time.perf_counter() - started
            path = write_dataset(dataset, Path(tmp) / f"q{n}.yaml")
            loaded_at = time.perf_counter()
            loaded = load_dataset(path)
            load_seconds = time.perf_counter() - loaded_at
            nones = sum(i.metadata["answer_kind"] == "none" for i in dataset.items)
            print(
                f"n={n:>5}: generate {seconds:6.1f} s ({n / seconds:6.1f} items/s), "
                f"file {path.stat().st_size / 1e6:5.1f} MB, load+validate {load_seconds:5.2f} s, "
                f"none answers {nones / n:.0%}, hash {dataset_hash(loaded)[:12]}"
            )


if __name__ == "__main__":
    main()
