"""The test kit is not part of the library (`pip install ragas-ops` installs no test judge and
no local-Airflow launcher): the library imports none of it when it is imported, and where it
would start the test judge or the launcher without the kit installed it says, in one line,
what to install."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from ragas_ops.cli import main
from ragas_ops.testkit import (
    INSTALL_COMMAND,
    INSTALL_TEST_KIT,
    LOCAL_AIRFLOW,
    MissingTestKitError,
    has_test_kit,
    install_test_kit,
    require_test_kit,
)

PROJECT = Path(__file__).resolve().parents[2]


@pytest.fixture
def no_test_kit(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test kit as on a machine with `pip install ragas-ops` only: None in sys.modules
    makes both find_spec and import say there is no such package."""
    for name in [name for name in sys.modules if name.startswith("ragas_ops_testing")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "ragas_ops_testing", None)


def test_the_library_loads_without_importing_the_test_kit() -> None:
    """The command line, which starts the test judge and the local Airflow on demand, and the
    Airflow room are imported in a fresh interpreter: the test kit stays unloaded."""
    probe = (
        "import sys, ragas_ops.cli.main, ragas_ops.airflow.operators, ragas_ops.testkit; "
        "print(sorted(name for name in sys.modules if name.startswith('ragas_ops_testing')))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    ).stdout.strip()
    assert loaded == "[]"


def test_the_test_kit_is_found_where_it_is_installed() -> None:
    assert has_test_kit()  # the development venv installs testkit/ (make install, .ci/run)
    require_test_kit()
    require_test_kit(LOCAL_AIRFLOW)


@pytest.mark.usefixtures("no_test_kit")
def test_test_judge_command_says_what_to_install_without_the_kit(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["test-judge", "--port", "0"]) == 2
    said = capsys.readouterr().err.strip().splitlines()
    assert said == [f"ragas-ops: error: {INSTALL_TEST_KIT}"]
    assert said[0].startswith("ragas-ops: error: the test judge is in the test kit")
    assert "pip install -e ./testkit" in said[0]


@pytest.mark.parametrize(
    "command", [["airflow", "up"], ["airflow", "down"], ["demo", "--days", "1"]]
)
def test_the_local_airflow_commands_say_what_to_install_without_the_kit(
    command: list[str], tmp_path: Path
) -> None:
    """In a fresh interpreter whose test kit is hidden (installed or not, as after `pip
    install ragas-ops`): one line on stderr, a usage exit code, nothing started or written."""
    home = ["--folder" if command[0] == "demo" else "--home", str(tmp_path / "home")]
    program = (
        "import sys; sys.modules['ragas_ops_testing'] = None; "
        "from ragas_ops.cli.main import main; sys.exit(main(sys.argv[1:]))"
    )
    done = subprocess.run(
        [sys.executable, "-c", program, *command, *home],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
        cwd=tmp_path,
        env={**os.environ, "PYTHONPATH": str(PROJECT)},
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.splitlines() == [f"ragas-ops: error: {install_test_kit(LOCAL_AIRFLOW)}"]
    assert "the local-Airflow launcher (`ragas-ops airflow`, `ragas-ops demo`)" in done.stderr
    assert INSTALL_COMMAND in done.stderr
    assert list(tmp_path.iterdir()) == []


@pytest.mark.usefixtures("no_test_kit")
def test_require_test_kit_refuses_without_the_kit() -> None:
    assert not has_test_kit()
    with pytest.raises(MissingTestKitError, match="ragas-ops-testing") as refused:
        require_test_kit()
    assert str(refused.value).startswith("the test judge is in the test kit")
    with pytest.raises(MissingTestKitError, match=r"^the local-Airflow launcher") as refused:
        require_test_kit(LOCAL_AIRFLOW)
    assert "\n" not in str(refused.value)
