"""The floors (#43): no package cycle, each package imports only floors below it, the ground
(``ledgerbench_core``) imports none of ours; the old public paths still re-export moved names."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from ledgerbench._layering import (
    FLOORS,
    cycles,
    graph_text,
    import_sites,
    main,
    package_edges,
    upward_imports,
)

REPO = Path(__file__).resolve().parents[1]


def _failure(sites: list) -> str:
    return "\n".join(str(site) for site in sites)


def test_no_package_cycle():
    sites = import_sites(REPO)
    found = cycles(package_edges(sites))
    upward = upward_imports(sites)
    detail = {
        " <-> ".join(group): _failure(
            [s for s in upward if s.source_package in group and s.target_package in group]
        )
        for group in found
    }
    assert not found, f"package cycles, closed by these imports against the floors: {detail}"


def test_each_package_imports_only_lower_floors():
    upward = upward_imports(import_sites(REPO))
    assert not upward, (
        f"imports against the floors {' < '.join(FLOORS)} (move the code down, or pass what it "
        f"needs in):\n{_failure(upward)}"
    )


def test_the_ground_floor_imports_nothing_of_ours():
    sites = [s for s in import_sites(REPO) if s.source_package == "ledgerbench_core"]
    assert not sites, f"ledgerbench_core must import no other package:\n{_failure(sites)}"


def _write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text)


def test_the_check_sees_every_kind_of_import(tmp_path: Path):
    """Function-level, relative and ``importlib.import_module("...")`` imports all make edges, so
    a cycle hidden in any of them is found and named."""
    _write(
        tmp_path,
        {
            "ledgerbench_core/__init__.py": "",
            "synthetic_erp/__init__.py": "",
            "synthetic_erp/_gen.py": "def f():\n    from judge._rules import x\n",
            "harnesses/__init__.py": "",
            "harnesses/_a.py": "import importlib\nM = importlib.import_module('analysis._load')\n",
            "harnesses/_b.py": "from . import _a\nfrom ._a import M\n",
            "judge/__init__.py": "from synthetic_erp import _gen\n",
            "judge/_rules.py": "",
        },
    )
    sites = import_sites(tmp_path)
    assert {str(s) for s in sites} == {
        "synthetic_erp._gen:2 imports judge._rules",
        "harnesses._a:2 imports analysis._load",
        "judge:1 imports synthetic_erp",
    }
    edges = package_edges(sites)
    assert cycles(edges) == [["judge", "synthetic_erp"]]
    assert {str(s) for s in upward_imports(sites)} == {
        "synthetic_erp._gen:2 imports judge._rules",
        "harnesses._a:2 imports analysis._load",
    }
    assert graph_text(edges, verbose=False).splitlines() == [
        "harnesses -> analysis: 1",
        "judge -> synthetic_erp: 1",
        "synthetic_erp -> judge: 1",
    ]


def test_package_graph_script_prints_edges_and_no_cycle(capsys: pytest.CaptureFixture[str]):
    assert main(["--root", str(REPO)]) == 0
    out = capsys.readouterr().out
    assert "harnesses -> ledgerbench_core: " in out
    assert "package cycles: 0" in out
    assert "imports against the floors" in out and out.rstrip().endswith(": 0")


def test_package_graph_script_refuses_a_root_without_packages(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
):
    assert main(["--root", str(tmp_path)]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pass the repository root with --root" in err[0]


@pytest.mark.parametrize(
    ("old", "new"),
    [
        ("harnesses.records", "ledgerbench_core.trajectory"),
        ("judge.records", "ledgerbench_core.scores"),
        ("ledgerbench.dataset", "ledgerbench_core.dataset"),
        ("ledgerbench.linked", "judge.linked"),
    ],
)
def test_old_public_paths_re_export_the_same_objects(old: str, new: str):
    old_module, new_module = importlib.import_module(old), importlib.import_module(new)
    assert old_module.__all__, old
    for name in old_module.__all__:
        assert getattr(old_module, name) is getattr(new_module, name), f"{old}.{name}"


def test_judge_public_names_come_from_the_ground():
    import judge
    from ledgerbench_core import _overall, scores

    assert judge.ScoreRecord is scores.ScoreRecord
    assert judge.overall is _overall.overall and judge.run_overall is _overall.run_overall


def test_the_ground_record_links_name_every_erp_entity_set():
    """The dataset loader checks ``record_refs`` with the ground's link grammar; the ERP binds the
    same entity sets to its tables."""
    from ledgerbench_core.record_links import ERP_ENTITY_SET_NAMES
    from synthetic_erp._catalog import ENTITY_SETS

    assert tuple(entity_set.name for entity_set in ENTITY_SETS) == ERP_ENTITY_SET_NAMES
