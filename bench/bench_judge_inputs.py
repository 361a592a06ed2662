"""The same answers get the same score however the judge is told the ERP, and 1,000 answers with
the rules judge take how long (issue 37).

A scripted run of the obligations is made against an ERP server by ``--erp-url`` (its manifest
knows no database, only the snapshot hash the server reported) and judged three ways: plain
``--judge rules`` (the judge looks for the snapshot in the default workspace, or refuses),
``--erp-db URL``, and with the database's path recorded in the manifest. Then its answers,
repeated as 10 trials (1,000 answers), are judged by the rules judge and timed.

    .venv/bin/python bench/bench_judge_inputs.py [--limit 100] [--trials 10]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from judge import JudgeRunConfig, JudgeRunError, read_scores, run_judge, run_overall
from ledgerbench_core._overall import scored_answers
from tests.conftest import free_port, stop_process, wait_for_port

ROOT = Path(__file__).resolve().parents[1]


def scripted_run_by_url(erp_db_url: str, out: Path, limit: int) -> Path:
    port = free_port()
    env = dict(os.environ, FASTMCP_LOG_LEVEL="WARNING", FASTMCP_SHOW_SERVER_BANNER="false")
    command = [sys.executable, "-m", "erp_mcp", "--db", erp_db_url, "--transport", "http"]
    command += ["--host", "127.0.0.1", "--port", str(port)]
    server = subprocess.Popen(
        command,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        wait_for_port(port, server)  # on the server's progress, not a clock
        args = [sys.executable, "-m", "harnesses.run", "--harness", "scripted", "--no-progress"]
        args += ["--dataset", str(ROOT / "datasets" / "obligations.yaml"), "--limit", str(limit)]
        args += ["--erp-url", f"http://127.0.0.1:{port}/mcp", "--out", str(out)]
        subprocess.run(args, check=True, cwd=ROOT, capture_output=True, timeout=900)
    finally:
        stop_process(server)
    return out


def judged_overall(run: Path, **options) -> str:
    try:
        result = run_judge(JudgeRunConfig(run_dir=run, progress=False, **options))
    except JudgeRunError as exc:
        return f"refused: {exc}"
    records, _ = read_scores(result.scores_path)
    return repr(run_overall(scored_answers(records)))


def copy(run: Path, to: Path) -> Path:
    shutil.copytree(run, to, ignore=shutil.ignore_patterns("scores", ".*.lock"))
    return to


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--limit", type=int, default=100, help="obligations in the run")
    parser.add_argument("--trials", type=int, default=10, help="repeats for the timed judging")
    args = parser.parse_args()
    from harnesses._erp_process import ensure_default_erp

    erp_db_url = ensure_default_erp()
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        run = scripted_run_by_url(erp_db_url, root / "url", args.limit)
        print(f"run made by --erp-url: {run}")
        print(f"  judge.run --judge rules:            {judged_overall(copy(run, root / 'a'))}")
        given = judged_overall(copy(run, root / "b"), erp_db=erp_db_url)
        print(f"  judge.run --judge rules --erp-db:   {given}")
        recorded = copy(run, root / "c")
        manifest = json.loads((recorded / "manifest.json").read_text())
        manifest["erp_db_url"] = erp_db_url
        (recorded / "manifest.json").write_text(json.dumps(manifest))
        print(f"  judge.run, path in the manifest:    {judged_overall(recorded)}")

        many = copy(run, root / "many")
        lines = (run / "trajectories.jsonl").read_text().splitlines()
        repeated = []
        for trial in range(args.trials):
            for line in lines:
                record = json.loads(line)
                record["trial"] = trial
                repeated.append(json.dumps(record))
        (many / "trajectories.jsonl").write_text("\n".join(repeated) + "\n")
        start = time.perf_counter()
        result = run_judge(JudgeRunConfig(run_dir=many, erp_db=erp_db_url, progress=False))
        seconds = time.perf_counter() - start
        print(
            f"rules judge: {result.judged} answers in {seconds:.2f} s "
            f"({result.judged / seconds:.0f}/s; the issue's bound: 1,000 in < 30 s)"
        )


if __name__ == "__main__":
    main()
