"""The log file (core/logfile.py): where it is, what reaches it, its rotation, and `cairn doctor`."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

from core import logfile


def run(cairn_cmd, cli_env, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([*cairn_cmd, *args], capture_output=True, text=True, env=cli_env, timeout=120)


def test_the_log_lives_in_cairn_home_when_set_else_in_the_platform_log_folder(monkeypatch, tmp_path):
    monkeypatch.setenv("CAIRN_HOME", str(tmp_path / "home"))
    assert logfile.log_path() == tmp_path / "home" / "cairn.log"
    monkeypatch.delenv("CAIRN_HOME")
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "state"))
    from platformdirs import user_log_dir

    assert logfile.log_path() == Path(user_log_dir("cairn")) / "cairn.log"


def test_a_failed_verb_is_logged_with_its_error_and_doctor_names_the_file(cairn_cmd, cli_env):
    home = Path(cli_env["CAIRN_HOME"])
    assert run(cairn_cmd, cli_env, "add", "A note").returncode == 0
    assert not (home / "cairn.log").exists()  # nothing went wrong: nothing written
    missing = run(cairn_cmd, cli_env, "show", "999")
    assert missing.returncode == 1
    log = (home / "cairn.log").read_text(encoding="utf-8")
    assert "cairn.cli WARNING cairn show: NotFound:" in log and "999" in log
    assert (home / "cairn.log").stat().st_mode & 0o077 == 0  # it names notes: readable by the user only

    doctor = run(cairn_cmd, cli_env, "doctor", "--json")
    found = {f["check"]: f for f in json.loads(doctor.stdout)["findings"]}
    assert found["log_file"] == {"check": "log_file", "count": 0, "detail": f"errors are logged to {home / 'cairn.log'}",
                                 "repaired": False}


def test_a_home_whose_log_cannot_be_written_is_a_doctor_problem_not_a_crash(cairn_cmd, cli_env, tmp_path):
    home = Path(cli_env["CAIRN_HOME"])
    assert run(cairn_cmd, cli_env, "add", "A note").returncode == 0
    (home / "cairn.log").unlink(missing_ok=True)
    (home / "cairn.log").mkdir()  # a folder where the file should be: cannot be opened for appending
    listed = run(cairn_cmd, cli_env, "list")
    assert listed.returncode == 0 and "A note" in listed.stdout  # a verb that logs nothing opens nothing
    missing = run(cairn_cmd, cli_env, "show", "999")  # logs a line: the file cannot be opened
    assert missing.returncode == 1 and "There is no node 999" in missing.stderr
    assert "cannot write the log file" in missing.stderr and "Traceback" not in missing.stderr
    doctor = run(cairn_cmd, cli_env, "doctor", "--json")
    found = {f["check"]: f for f in json.loads(doctor.stdout)["findings"]}
    assert found["log_file"]["count"] == 1 and "cannot write the log file" in found["log_file"]["detail"]
    assert doctor.returncode == 1


def test_a_large_log_is_rotated_when_a_process_starts_keeping_three_older_files(tmp_path):
    path = tmp_path / "cairn.log"
    for n in (1, 2, 3):
        path.with_name(f"cairn.log.{n}").write_text(f"old {n}\n")
    path.write_text("x" * (logfile.MAX_BYTES + 1))
    logfile.rotate_if_large(path)
    assert not path.exists()
    assert path.with_name("cairn.log.1").stat().st_size == logfile.MAX_BYTES + 1
    assert path.with_name("cairn.log.2").read_text() == "old 1\n"
    assert path.with_name("cairn.log.3").read_text() == "old 2\n"  # "old 3" was the oldest: dropped
    assert not path.with_name("cairn.log.4").exists()
    path.write_text("small\n")
    logfile.rotate_if_large(path)  # under the limit: left alone
    assert path.read_text() == "small\n"
