"""The test kit is not part of the library (`pip install ragas-ops` installs no test judge):
the library imports none of it when it is imported, and where it would start the test judge
without the kit installed it says, in one line, what to install."""

from __future__ import annotations

import subprocess
import sys

import pytest

from ragas_ops.airflow.standalone import StandaloneError, check_judge, choose_judge
from ragas_ops.cli import main
from ragas_ops.testkit import INSTALL_TEST_KIT, MissingTestKitError, has_test_kit, require_test_kit


@pytest.fixture
def no_test_kit(monkeypatch: pytest.MonkeyPatch) -> None:
    """The test kit as on a machine with `pip install ragas-ops` only: None in sys.modules
    makes both find_spec and import say there is no such package."""
    for name in [name for name in sys.modules if name.startswith("ragas_ops_testing")]:
        monkeypatch.delitem(sys.modules, name)
    monkeypatch.setitem(sys.modules, "ragas_ops_testing", None)


def test_the_library_loads_without_importing_the_test_kit() -> None:
    """The command line and the local-Airflow launcher, which both start the test judge on
    demand, are imported in a fresh interpreter: the test kit stays unloaded."""
    probe = (
        "import sys, ragas_ops.cli.main, ragas_ops.airflow.standalone, ragas_ops.testkit; "
        "print(sorted(name for name in sys.modules if name.startswith('ragas_ops_testing')))"
    )
    loaded = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, check=True, timeout=120
    ).stdout.strip()
    assert loaded == "[]"


def test_the_test_kit_is_found_where_it_is_installed() -> None:
    assert has_test_kit()  # the development venv installs testkit/ (make install, .ci/run)
    require_test_kit()


@pytest.mark.usefixtures("no_test_kit")
def test_test_judge_command_says_what_to_install_without_the_kit(
    capsys: pytest.CaptureFixture[str],
) -> None:
    assert main(["test-judge", "--port", "0"]) == 2
    said = capsys.readouterr().err.strip().splitlines()
    assert said == [f"ragas-ops: error: {INSTALL_TEST_KIT}"]
    assert "pip install -e ./testkit" in said[0]


@pytest.mark.usefixtures("no_test_kit")
def test_airflow_up_without_key_local_judge_or_kit_says_what_to_install(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("ragas_ops.airflow.standalone.local_judge_installed", lambda: False)
    chosen = choose_judge("auto", {})
    assert chosen == "test"
    with pytest.raises(StandaloneError, match=r"pip install -e \./testkit") as refused:
        check_judge(chosen, {})
    assert "\n" not in str(refused.value)


@pytest.mark.usefixtures("no_test_kit")
def test_require_test_kit_refuses_without_the_kit() -> None:
    assert not has_test_kit()
    with pytest.raises(MissingTestKitError, match="ragas-ops-testing"):
        require_test_kit()
