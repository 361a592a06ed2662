"""``python -m judge.run runs/NAME --judge MODEL``: score a run's trajectories."""

from __future__ import annotations

import argparse
import os
import re
import shlex
import sys
from pathlib import Path

from ledgerbench_core._cli import OneLineParser

EXAMPLES = """\
examples:
  python -m judge.run runs/demo --judge rules
  python -m judge.run runs/demo --judge rules --erp-db sqlite:///erp.db
  python -m judge.run runs/demo --judge openai/gpt-5.2 --concurrency 8
  python -m judge.run runs/demo --judge openai/qwen3 --base-url http://127.0.0.1:8000/v1 \
      --api-key-env LOCAL_KEY
  python -m judge.run runs/demo --judge anthropic/claude-sonnet-4-5 --mode single-call --with-rules
  python -m judge.run runs/demo --judge openai/gpt-5.2 --judge anthropic/claude-sonnet-4-5 \
      --judge rules --name panel-3
  python -m judge.run runs/demo --judge openai/gpt-5.2 --executor ray --ray-address head:6379
"""


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(
        prog="python -m judge.run",
        description="Score every trajectory of a run; writes runs/NAME/scores/<judge>.jsonl and "
        "<judge>.manifest.json. Re-running resumes: records already scored are skipped. One judge "
        "per run at a time; scores of another grading version are never added to (--overwrite).",
        epilog=EXAMPLES,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument(
        "run_dir",
        type=Path,
        help="run directory with manifest.json and trajectories.jsonl, e.g. runs/demo",
    )
    parser.add_argument(
        "--judge",
        required=True,
        action="append",
        help="'rules' (offline, deterministic), a DSPy model string (e.g. openai/gpt-5.2) or "
        "package.module:factory; repeat for a panel (--judge A --judge B --judge C): each judge "
        "scores, then the panel's mean per assertion is written as its own judge "
        "(panel-<hash>, or --name)",
    )
    parser.add_argument(
        "--base-url",
        help="OpenAI-compatible endpoint for the judge model, e.g. http://127.0.0.1:8000/v1",
    )
    parser.add_argument(
        "--api-key-env",
        help="name of the environment variable holding the judge API key, e.g. OPENAI_API_KEY "
        "(the key is never written)",
    )
    parser.add_argument(
        "--mode",
        choices=["per-dimension", "single-call"],
        default="per-dimension",
        help="one call per dimension (default, as in the paper) or all dimensions in one call "
        "(cheaper)",
    )
    parser.add_argument(
        "--with-rules",
        action="store_true",
        help="let the deterministic rules decide the assertions they can; the LLM judges the rest "
        "(judge name gets '+rules')",
    )
    parser.add_argument(
        "--name",
        help="scores-file name instead of the default (model slug or 'rules'; for a panel, the "
        "panel's name), e.g. --name gpt52-run2",
    )
    parser.add_argument(
        "--erp-db",
        help="ERP database URL for the rules' checks; it must hold the ERP snapshot the run "
        "recorded (default: the database with that snapshot at the manifest's erp_db_url or "
        ".ledgerbench/erp.db; none: refused), e.g. sqlite:///erp.db",
    )
    parser.add_argument(
        "--world-db",
        help="research world file for checking cited world documents; it must hold the run's "
        "(or the dataset's) world snapshot (default: the manifest's world_db or "
        ".ledgerbench/world.db), e.g. sqlite:///world.db",
    )
    parser.add_argument(
        "--dataset",
        help="dataset file (default: the run manifest's dataset_path), e.g. "
        "datasets/obligations.yaml",
    )
    parser.add_argument(
        "--concurrency",
        type=int,
        default=4,
        help="trajectories judged at once (default 4), e.g. --concurrency 8",
    )
    parser.add_argument(
        "--retries",
        type=int,
        default=2,
        help="retries after an unusable judge reply before judge_error (default 2)",
    )
    parser.add_argument(
        "--temperature",
        type=float,
        default=0.0,
        help="sampling temperature (default 0; reasoning models switch to their required "
        "setting), e.g. 0",
    )
    parser.add_argument(
        "--max-tokens",
        type=int,
        default=4000,
        help="reply token limit (default 4000), e.g. 16000 for reasoning models",
    )
    parser.add_argument(
        "--evidence-chars",
        type=int,
        default=60_000,
        help="character limit of the evidence given to the groundedness call (default 60000)",
    )
    parser.add_argument(
        "--price-per-mtok",
        nargs=2,
        type=float,
        metavar=("INPUT", "OUTPUT"),
        help="USD per million input and output tokens when the price table does not know the "
        "model, e.g. 0.15 0.60",
    )
    parser.add_argument(
        "--adapter",
        choices=["chat", "json"],
        default="chat",
        help="DSPy output format (default chat)",
    )
    parser.add_argument(
        "--program",
        help="load a tuned judge program (DSPy module.save JSON: demos, instructions); its hash "
        "goes into the settings, e.g. --program judges/tuned.json",
    )
    parser.add_argument(
        "--no-cache",
        action="store_true",
        help="do not read or write the verdict cache (runs/NAME/scores/.cache/)",
    )
    parser.add_argument(
        "--cache-dir", help="verdict cache directory instead of runs/NAME/scores/.cache/<judge>"
    )
    parser.add_argument(
        "--overwrite",
        action="store_true",
        help="delete this judge's existing scores for the run and start over",
    )
    parser.add_argument(
        "--max-consecutive-infra-failures",
        type=int,
        default=5,
        metavar="N",
        help="stop after N records in a row could not reach the judge model (connection "
        "refused, no reply in time), printing the command to resume (default 5; 0: never stop)",
    )
    parser.add_argument(
        "--no-preflight",
        action="store_true",
        help="skip the one call to the judge model made before judging to learn that it answers",
    )
    parser.add_argument("--no-progress", action="store_true", help="no progress bar")
    from ledgerbench_core._ray import add_executor_arguments

    add_executor_arguments(parser, unit="trajectory")
    return parser


def main(argv: list[str] | None = None) -> int:
    os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from judge._base import JudgeAbort, JudgeUnreachable
    from judge._registry import JudgeLoadError
    from judge._runner import JudgeRunConfig, JudgeRunError, print_warnings, run_judge
    from judge._summary import run_summary, summarize, summary_markdown
    from ledgerbench_core._ray import check_executor_arguments

    args = build_parser().parse_args(argv)
    if (problem := check_executor_arguments(args)) is not None:
        print(f"error: {problem}", file=sys.stderr)
        return 2
    if not args.run_dir.is_dir():
        print(f"error: run directory {args.run_dir} not found; pass runs/NAME", file=sys.stderr)
        return 2
    panel = list(dict.fromkeys(args.judge))
    config = JudgeRunConfig(
        run_dir=args.run_dir,
        judge=panel[0],
        base_url=args.base_url,
        api_key_env=args.api_key_env,
        mode=args.mode,
        with_rules=args.with_rules,
        name=args.name if len(panel) == 1 else None,
        erp_db=args.erp_db,
        world_db=args.world_db,
        dataset=args.dataset,
        concurrency=args.concurrency,
        retries=args.retries,
        temperature=args.temperature,
        max_tokens=args.max_tokens,
        evidence_chars=args.evidence_chars,
        price_per_mtok=tuple(args.price_per_mtok) if args.price_per_mtok else None,
        adapter=args.adapter,
        program=args.program,
        cache=not args.no_cache,
        cache_dir=args.cache_dir,
        overwrite=args.overwrite,
        progress=not args.no_progress and sys.stderr.isatty(),
        preflight=not args.no_preflight,
        max_consecutive_infra_failures=args.max_consecutive_infra_failures,
        executor=args.executor,
        ray_address=args.ray_address,
        ray_num_cpus=args.ray_num_cpus,
        ray_memory_mb=args.ray_memory_mb,
    )
    if args.max_consecutive_infra_failures < 0:
        print("error: --max-consecutive-infra-failures must be 0 or more", file=sys.stderr)
        return 2
    results = []
    try:
        for spec in panel:
            results.append(run_judge(config.model_copy(update={"judge": spec})))
    except JudgeUnreachable as exc:
        given = sys.argv[1:] if argv is None else list(argv)
        # No password of a --base-url or --erp-db URL reaches the terminal.
        given = [re.sub(r"://[^/@\s:]+:[^/@\s]+@", "://***@", arg) for arg in given]
        command = shlex.join(["python", "-m", "judge.run", *given])
        print(
            f"error: {str(exc).splitlines()[0]}; records written so far are kept; fix the "
            f"endpoint, then resume with: {command}",
            file=sys.stderr,
        )
        return 2
    except (JudgeRunError, JudgeLoadError, JudgeAbort, ValueError) as exc:
        print(f"error: {str(exc).splitlines()[0]}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        from ledgerbench_core._cli import quiet_stop

        if quiet_stop():
            return 130
        print(
            "interrupted: the records written so far are kept; run the same command again to "
            "resume",
            file=sys.stderr,
        )
        return 130
    from judge._runner import read_scores, read_trajectories

    for result in results:
        print_warnings(result.warnings)
        records, _ = read_scores(result.scores_path)
        cost = "unknown" if result.cost_usd is None else f"${result.cost_usd:.4f}"
        print(
            f"{result.scores_path}: {result.judged} judged now, {result.resumed} already scored; "
            f"{result.calls} model calls, {result.usage.input_tokens} in / "
            f"{result.usage.output_tokens} out "
            f"tokens, cost {cost}"
        )
        trajectories, _ = read_trajectories(args.run_dir)
        summary, _ = run_summary(result.scores_path.stem, records, trajectories)
        print(summary_markdown(summary, result.scores_path.stem))
    if len(results) > 1:
        from judge._panel import write_panel

        members = [result.scores_path.stem for result in results]
        path = write_panel(args.run_dir, members, args.name)
        records, _ = read_scores(path)
        print(f"{path}: panel of {', '.join(members)}: mean verdict per assertion")
        print(summary_markdown(summarize(records), path.stem))
    return 0


if __name__ == "__main__":
    from ledgerbench_core._cli import run_cli

    sys.exit(run_cli(main, "judge.run"))
