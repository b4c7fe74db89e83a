"""Two (or more) first commands at once on a new database: both create it, neither fails with "table
meta already exists", and every note is saved. Each `cairn add` runs in its own process; they start
the command together (a file they wait for), so they race the database's creation every time."""

from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

from core.graph.store import Store

PROCESSES = 6
ROUNDS = 4

# `cairn add`, imported first and then held until the start file exists: the slow part (imports) is
# done before the race, so the processes open the new database within a millisecond of each other.
AT_THE_SIGNAL = """
import sys, time
from pathlib import Path
from tui.cli.main import main
go, ready = Path(sys.argv[1]), Path(sys.argv[2])
ready.touch()
while not go.exists():
    time.sleep(0.001)
sys.exit(main(sys.argv[3:]))
"""


def test_first_commands_at_once_all_save_their_note(cli_env, tmp_path):
    for round_ in range(ROUNDS):
        home = tmp_path / f"home{round_}"
        env = {**cli_env, "CAIRN_HOME": str(home)}
        go = tmp_path / f"go{round_}"
        ready = [tmp_path / f"ready{round_}.{i}" for i in range(PROCESSES)]
        procs = [subprocess.Popen([sys.executable, "-c", AT_THE_SIGNAL, str(go), str(ready[i]),
                                   "add", f"Note {i} of round {round_}"],
                                  env=env, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  text=True) for i in range(PROCESSES)]
        deadline = time.monotonic() + 120
        while not all(r.exists() for r in ready) and time.monotonic() < deadline:
            time.sleep(0.01)
        go.touch()
        results = [(p.wait(timeout=120), *p.communicate()) for p in procs]
        assert all(rc == 0 for rc, _, _ in results), results
        with Store(Path(home) / "cairn.db", readonly=True) as store:
            titles = sorted(r[0] for r in store.db.execute("SELECT title FROM nodes"))
        assert titles == sorted(f"Note {i} of round {round_}" for i in range(PROCESSES))
