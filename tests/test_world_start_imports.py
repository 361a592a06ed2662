"""The research world's server never loads the ERP's database layer (issue 40 item 1): it reuses
erp_mcp's paging, strict models, page guards and middleware, which used to pull in SQLAlchemy,
SQLModel and the ERP schema (~0.19 s of a start's CPU) though a world server never reads an ERP."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from tests.conftest import REPO_ROOT
from tests.world_fixtures import shared_folder, small_world

pytestmark = pytest.mark.timeout(180)

ERP_DATABASE_LAYER = ("sqlalchemy", "sqlmodel", "synthetic_erp._schema", "synthetic_erp._db")

SERVE_AND_CALL = """
import asyncio, json, sys
from fastmcp import Client
from synthetic_world._cli import worker_server
from erp_mcp._serving import http_app

server = worker_server(["serve", "--db", sys.argv[1], "--transport", "http"])
http_app(server)

async def calls():
    async with Client(server) as client:
        info = await client.call_tool("world_info", {})
        found = await client.call_tool("search", {"query": "revenue"})
        return info.structured_content, found.structured_content

info, found = asyncio.run(calls())
layer = sys.argv[2].split(",")
loaded = sorted(m for m in sys.modules if m in layer or m.split(".")[0] in layer)
print(json.dumps({"loaded": loaded, "info": info, "found": found}))
"""


@pytest.fixture(scope="module")
def world(erp_db_url: str, tmp_path_factory: pytest.TempPathFactory, worker_id: str) -> Path:
    return small_world(erp_db_url, shared_folder(tmp_path_factory, worker_id, "world"))


def test_a_world_server_serves_without_the_erp_database_layer(world: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SERVE_AND_CALL, str(world), ",".join(ERP_DATABASE_LAYER)],
        cwd=REPO_ROOT,
        capture_output=True,
        text=True,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    result = json.loads(done.stdout.strip().splitlines()[-1])
    assert result["info"]["snapshot_hash"], result["info"]  # it served
    assert result["found"]["results"], result["found"]
    assert result["loaded"] == [], f"a world server loaded {result['loaded']}"
