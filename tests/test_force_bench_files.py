"""scripts/fetch-force-bench lays a clone of microsoft/FinanceBenchmark out as the tests read it.

The clone is built here in the upstream layout from the published files themselves (the tests
never reach the network), once with the ERP files in their folder and once only in the ZIP.
"""

from __future__ import annotations

import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from tests.conftest import REFERENCE_DIR, REFERENCE_MISSING, REPO_ROOT

SCRIPT = REPO_ROOT / "scripts" / "fetch-force-bench"
UPSTREAM_ERP = {
    "customers.csv": "Master Data/D365_Customers_DMF_Final.csv",
    "vendors.csv": "Master Data/D365_Vendors_DMF_Final.csv",
    "ar_journal.xlsx": "Transactional Data/AR_Journal_Import_Updated.xlsx",
    "ap_journal.xlsx": "Transactional Data/AP_Journal_Import_Updated.xlsx",
}


def _upstream_clone(root: Path, *, zipped: bool) -> Path:
    if not REFERENCE_DIR.exists():
        pytest.skip(REFERENCE_MISSING)
    clone = root / "FinanceBenchmark"
    bench = REFERENCE_DIR / "force-bench"
    (clone / "data").mkdir(parents=True)
    shutil.copy2(bench / "dataset.yaml", clone / "data" / "dataset.yaml")
    shutil.copytree(bench / "results", clone / "results")
    raw = clone / "data" / "fno_benchmark_data_raw"
    folder = raw / "FO Benchmark_Data"
    for ours, theirs in UPSTREAM_ERP.items():
        (folder / theirs).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REFERENCE_DIR / "fno" / ours, folder / theirs)
    if zipped:
        with zipfile.ZipFile(raw / "FO Benchmark_Data.zip", "w") as bundle:
            for theirs in UPSTREAM_ERP.values():
                bundle.write(folder / theirs, f"FO Benchmark_Data/{theirs}")
        shutil.rmtree(folder)
    return clone


def _fetch(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], capture_output=True, text=True, timeout=120
    )


@pytest.mark.parametrize("zipped", [False, True], ids=["folder", "zip"])
def test_a_clone_is_laid_out_as_the_tests_read_it(tmp_path: Path, zipped: bool) -> None:
    clone = _upstream_clone(tmp_path, zipped=zipped)
    dest = tmp_path / "reference"
    completed = _fetch(str(clone), str(dest))
    assert completed.returncode == 0, completed.stderr
    assert f"export LEDGERBENCH_REFERENCE_DIR={dest.resolve()}" in completed.stdout
    expected = [
        "fno/ap_journal.xlsx",
        "fno/ar_journal.xlsx",
        "fno/customers.csv",
        "fno/vendors.csv",
        "force-bench/dataset.yaml",
        *(
            f"force-bench/results/{p.name}"
            for p in (REFERENCE_DIR / "force-bench/results").iterdir()
        ),
    ]
    laid_out = sorted(str(p.relative_to(dest)) for p in dest.rglob("*") if p.is_file())
    assert laid_out == sorted(expected)
    for relative in expected:
        assert (dest / relative).read_bytes() == (REFERENCE_DIR / relative).read_bytes()


def test_a_folder_that_is_not_a_clone_is_one_line(tmp_path: Path) -> None:
    completed = _fetch(str(tmp_path), str(tmp_path / "reference"))
    assert completed.returncode == 2
    assert completed.stderr.count("\n") == 1 and "microsoft/FinanceBenchmark" in completed.stderr
