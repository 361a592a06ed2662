"""The Makefile's installer choice, run by real make against a venv of logging stand-ins.

The stand-ins for the venv's ``python`` and ``uv`` write each call to a log and succeed or fail as
a test asks, so these tests see which installer ran without installing anything."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

REPO_ROOT = Path(__file__).resolve().parents[1]

pytestmark = pytest.mark.skipif(shutil.which("make") is None, reason="make not installed")


def _stand_in(path: Path, log: Path, fail_when: str | None) -> None:
    """A program that logs its name and arguments, and exits 1 when they contain ``fail_when``."""
    check = f'case "$*" in *"{fail_when}"*) exit 1;; esac\n' if fail_when else ""
    path.write_text(f'#!/bin/sh\necho "{path.name} $*" >> {log}\n{check}exit 0\n')
    path.chmod(0o755)


def _make(tmp_path: Path, *, uv: str | None, python_fails: str | None = None, installer=None):
    venv = tmp_path / "venv"
    (venv / "bin").mkdir(parents=True)
    log = tmp_path / "calls.log"
    log.touch()
    _stand_in(venv / "bin" / "python", log, python_fails)
    if uv is not None:
        _stand_in(venv / "bin" / "uv", log, "pip install" if uv == "fails" else None)
    command = ["make", "--no-print-directory", f"VENV={venv}", f"{venv}/.installed-demo"]
    if installer:
        command.append(f"INSTALLER={installer}")
    env = {k: v for k, v in os.environ.items() if not k.startswith("MAKE")}
    done = subprocess.run(command, cwd=REPO_ROOT, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert (venv / ".installed-demo").exists()
    return log.read_text().splitlines(), done.stdout


def test_uv_installs_when_it_can(tmp_path: Path) -> None:
    calls, _ = _make(tmp_path, uv="works")
    python = tmp_path / "venv" / "bin" / "python"
    assert calls == [f"uv pip install --quiet --compile-bytecode --python {python} -e ."]


def test_uv_is_put_into_the_venv_first(tmp_path: Path) -> None:
    calls, _ = _make(tmp_path, uv=None)
    assert calls[0].startswith("python -m pip install") and calls[0].endswith(" uv")
    # the stand-in python installs nothing, so uv is still missing: pip does the install
    assert calls[-1].startswith("python -m pip install") and calls[-1].endswith(" -e .")


def test_pip_installs_when_uv_fails(tmp_path: Path) -> None:
    calls, out = _make(tmp_path, uv="fails")
    assert calls[0].startswith("uv pip install")
    assert calls[1].startswith("python -m pip install") and calls[1].endswith(" -e .")
    assert len(calls) == 2
    assert "uv could not install -e .; installing with pip" in out


def test_pip_installs_when_uv_cannot_be_had(tmp_path: Path) -> None:
    calls, out = _make(tmp_path, uv=None, python_fails=" uv")
    assert [c.split()[-1] for c in calls] == ["uv", "."]
    assert "installing with pip" in out


def test_installer_pip_never_calls_uv(tmp_path: Path) -> None:
    calls, out = _make(tmp_path, uv="works", installer="pip")
    assert len(calls) == 1 and calls[0].startswith("python -m pip install")
    assert "uv could not" not in out
