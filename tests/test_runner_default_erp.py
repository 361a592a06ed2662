"""The default ERP is a cache the runner owns: rebuilt when it does not match the dataset."""

from __future__ import annotations

from harnesses._erp_process import DEFAULT_ERP_RELATIVE_PATH, ensure_default_erp
from synthetic_erp import erp_stats, generate_erp


def test_stale_default_erp_is_rebuilt_to_the_datasets_snapshot(tmp_path, erp_db_url) -> None:
    path = tmp_path / DEFAULT_ERP_RELATIVE_PATH
    path.parent.mkdir(parents=True)
    generate_erp(f"sqlite:///{path}", customers=5, vendors=5, seed=9)
    stale = erp_stats(f"sqlite:///{path}")["snapshot_hash"]

    url = ensure_default_erp(tmp_path)
    assert erp_stats(url)["snapshot_hash"] == stale, "no expectation: the file is left alone"

    wanted = erp_stats(erp_db_url)["snapshot_hash"]
    url = ensure_default_erp(tmp_path, seed=42, expected_snapshot=wanted)
    assert erp_stats(url)["snapshot_hash"] == wanted
    assert not path.with_name(path.name + ".partial").exists()


def test_missing_default_erp_is_generated(tmp_path) -> None:
    url = ensure_default_erp(tmp_path, seed=42)
    assert erp_stats(url)["customers"] == 1000


def test_a_dataset_from_another_erp_leaves_the_default_erp_alone(tmp_path, erp_db_url) -> None:
    """The default ERP is already what a rebuild would make (this generator, default size, seed
    42): a dataset keyed on another snapshot cannot be served by rebuilding it, so the shared file
    is kept (the run then refuses the dataset, naming the ERP to build) and nothing is said."""
    import shutil

    path = tmp_path / DEFAULT_ERP_RELATIVE_PATH
    path.parent.mkdir(parents=True)
    shutil.copyfile(erp_db_url.removeprefix("sqlite:///"), path)
    before = (path.stat().st_mtime_ns, erp_stats(f"sqlite:///{path}")["snapshot_hash"])
    said: list[str] = []
    url = ensure_default_erp(tmp_path, seed=42, expected_snapshot="0" * 64, announce=said.append)
    assert url == f"sqlite:///{path}"
    assert (path.stat().st_mtime_ns, erp_stats(url)["snapshot_hash"]) == before
    assert said == []
