"""sqliteQuery's limits (issue 22): a deadline, a row cap, a cap on the result's size and on any one value,
the same in chat (ToolRunner) and over MCP; and `cairn mcp` neither stalls behind a slow query nor
outlives its client."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import anyio
import pytest

from core.agent.tools import MAX_SQL_ROWS, ToolContext, ToolError, ToolRunner
from core.graph.store import MAX_SOURCE, Store

ENDLESS = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c) SELECT x FROM c WHERE x < 0"
TEN_THOUSAND = "WITH RECURSIVE c(x) AS (SELECT 1 UNION ALL SELECT x+1 FROM c WHERE x < 10000) SELECT x FROM c"
BOUND = 30  # seconds: proves "returns" rather than "hangs"; never a measure of speed


@pytest.fixture
def sql_db(tmp_path) -> Path:
    path = tmp_path / "sql.db"
    with Store(path) as store:
        store.add_node("A note", "Some text.")
    return path


def _in_thread(fn, *args, **kwargs):
    """fn's result or exception, or a failure after BOUND seconds (the thread is left behind)."""
    out: dict = {}

    def run():
        try:
            out["value"] = fn(*args, **kwargs)
        except BaseException as exc:  # handed to the test, which asserts on it
            out["error"] = exc

    thread = threading.Thread(target=run, daemon=True)
    thread.start()
    thread.join(BOUND)
    assert not thread.is_alive(), f"still running after {BOUND} s"
    return out


def test_an_endless_recursive_query_is_stopped_at_its_deadline(sql_db):
    from core.agent.readonly_sql import QueryRefused, run_readonly

    out = _in_thread(run_readonly, sql_db, ENDLESS, MAX_SQL_ROWS, deadline=0.5)
    assert isinstance(out.get("error"), QueryRefused), out
    message = str(out["error"])
    assert "0.5 s limit" in message and "stopped" in message and "\n" not in message


def test_the_chat_tool_has_the_same_deadline(sql_db):
    from core.agent import readonly_sql

    store = Store(sql_db)
    try:
        runner = ToolRunner(ToolContext(store=store, searcher=None), ("sqliteQuery",))
        out = _in_thread(runner.run, "sqliteQuery", {"sql": ENDLESS})
    finally:
        store.close()
    assert isinstance(out.get("error"), ToolError), out
    assert f"{readonly_sql.SQL_DEADLINE_SECONDS:g} s limit" in str(out["error"])


def test_ten_thousand_rows_are_cut_at_the_row_limit_and_it_says_so(sql_db):
    from core.agent.readonly_sql import run_readonly

    result = run_readonly(sql_db, TEN_THOUSAND, MAX_SQL_ROWS)
    assert [r[0] for r in result["rows"]] == list(range(1, MAX_SQL_ROWS + 1))
    assert result["truncated"] is True
    assert f"first {MAX_SQL_ROWS} rows" in result["note"]


def test_a_result_past_the_byte_limit_is_cut_and_says_so(sql_db):
    from core.agent.readonly_sql import MAX_RESULT_BYTES, run_readonly

    # 200 rows of 20,000 characters would be 4 MB.
    result = run_readonly(sql_db, f"SELECT x, hex(randomblob(10000)) FROM ({TEN_THOUSAND})", MAX_SQL_ROWS)
    assert result["truncated"] is True
    assert 0 < len(result["rows"]) < MAX_SQL_ROWS
    assert sum(len(r[1]) for r in result["rows"]) <= MAX_RESULT_BYTES
    assert "1 MB" in result["note"] and f"{len(result['rows'])} rows" in result["note"]


def test_a_single_value_past_the_byte_limit_is_refused(sql_db):
    from core.agent.readonly_sql import QueryRefused, run_readonly

    with pytest.raises(QueryRefused) as refused:
        run_readonly(sql_db, "SELECT 1, hex(randomblob(1000000))", MAX_SQL_ROWS)
    message = str(refused.value)
    assert "passed 1 MB" in message and "fewer columns" in message and "\n" not in message


HUGE_VALUE = r"""
import json, re, sys
from core.agent.readonly_sql import QueryRefused, run_readonly
try:
    run_readonly(sys.argv[1], "SELECT randomblob(300000000)", 200)
    message = None
except QueryRefused as exc:
    message = str(exc)
# This process's own high-water mark (VmHWM starts afresh at exec; ru_maxrss keeps the parent's on Linux,
# which under a large pytest worker read 1.5 GB).
peak_kb = int(re.search(r"VmHWM:\s+(\d+) kB", open("/proc/self/status").read()).group(1))
print(json.dumps({"message": message, "peak_mb": peak_kb / 1024}))
"""


def test_a_huge_value_is_refused_before_it_is_built(sql_db):
    proc = subprocess.run([sys.executable, "-c", HUGE_VALUE, str(sql_db)], capture_output=True, text=True,
                          timeout=120, cwd=Path(__file__).resolve().parent.parent)
    assert proc.returncode == 0, proc.stderr
    out = json.loads(proc.stdout)
    assert out["message"] and "MB" in out["message"] and "\n" not in out["message"], out
    assert out["peak_mb"] < 150, out  # 300 MB would have been built (and copied) without the limit


def test_the_largest_note_the_store_holds_can_still_be_read(sql_db):
    """SQLite's value limit is above anything the store writes: only the 1 MB result cap applies."""
    from core.agent.readonly_sql import MAX_VALUE_BYTES, run_readonly

    assert MAX_VALUE_BYTES >= 4 * MAX_SOURCE  # 10 M characters of UTF-8, 4 bytes each at most
    with Store(sql_db) as store:
        big = store.add_node("Big", "é" * 3_000_000)["id"]  # 6 MB of UTF-8
    result = run_readonly(sql_db, f"SELECT length(source), substr(source, 1, 3), source LIKE '%z%' "
                                  f"FROM nodes WHERE id = {big}", MAX_SQL_ROWS)
    assert result == {"columns": ["length(source)", "substr(source, 1, 3)", "source LIKE '%z%'"],
                      "rows": [[3_000_000, "ééé", 0]], "truncated": False}


# -- over MCP ---------------------------------------------------------------------------------------
async def test_a_slow_query_does_not_hold_up_the_next_call(cairn_cmd, sql_db, tmp_path):
    from mcp.client.session import ClientSession
    from mcp.client.stdio import StdioServerParameters, stdio_client

    params = StdioServerParameters(command=cairn_cmd[0], args=[*cairn_cmd[1:], "mcp", "--db", str(sql_db)],
                                   env={"CAIRN_HOME": os.environ["CAIRN_HOME"], "HOME": os.environ["HOME"]})
    slow: dict = {}
    with open(tmp_path / "server-stderr.log", "w") as err, anyio.fail_after(60):
        async with stdio_client(params, errlog=err) as (read, write):
            async with ClientSession(read, write) as session:
                await session.initialize()

                async def endless():
                    slow["result"] = await session.call_tool("sqliteQuery", {"sql": ENDLESS})

                async with anyio.create_task_group() as tg:
                    tg.start_soon(endless)
                    await anyio.sleep(0)  # let the endless call be sent first
                    quick = await session.call_tool("getNodesById", {"ids": [1]})
                    assert "result" not in slow  # the quick call came back while the query still ran
                    assert not quick.is_error
                    assert json.loads(quick.content[0].text)["nodes"][0]["title"] == "A note"
                # The endless query was stopped at its deadline, and said so.
                assert slow["result"].is_error
                assert "limit and was stopped" in slow["result"].content[0].text
                again = await session.call_tool("sqliteQuery", {"sql": "SELECT title FROM nodes"})
                assert json.loads(again.content[0].text)["rows"] == [["A note"]]


def _rpc(proc, message: dict) -> None:
    proc.stdin.write((json.dumps(message) + "\n").encode())
    proc.stdin.flush()


def test_closing_stdin_ends_the_server_even_with_a_query_running(cairn_cmd, sql_db, tmp_path):
    env = {**os.environ, "CAIRN_HOME": os.environ["CAIRN_HOME"], "HOME": os.environ["HOME"]}
    with open(tmp_path / "server-stderr.log", "w") as err:
        proc = subprocess.Popen([*cairn_cmd, "mcp", "--db", str(sql_db)], stdin=subprocess.PIPE,
                                stdout=subprocess.PIPE, stderr=err, env=env)
    lines: list[dict] = []
    got_quick = threading.Event()

    def read_stdout():
        for line in proc.stdout:
            lines.append(json.loads(line))
            if lines[-1].get("id") == 3:
                got_quick.set()

    reader = threading.Thread(target=read_stdout, daemon=True)
    reader.start()
    try:
        _rpc(proc, {"jsonrpc": "2.0", "id": 1, "method": "initialize",
                    "params": {"protocolVersion": "2025-06-18", "capabilities": {},
                               "clientInfo": {"name": "test", "version": "1"}}})
        _rpc(proc, {"jsonrpc": "2.0", "method": "notifications/initialized"})
        _rpc(proc, {"jsonrpc": "2.0", "id": 2, "method": "tools/call",
                    "params": {"name": "sqliteQuery", "arguments": {"sql": ENDLESS}}})
        _rpc(proc, {"jsonrpc": "2.0", "id": 3, "method": "tools/call",
                    "params": {"name": "getNodesById", "arguments": {"ids": [1]}}})
        assert got_quick.wait(BOUND), lines  # served while the endless query runs
        assert all(m.get("id") != 2 for m in lines)  # which is still running
        proc.stdin.close()  # the client goes away
        assert proc.wait(timeout=BOUND) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
