"""Where the test kit lives: the distribution ragas-ops-testing (package `ragas_ops_testing`,
testkit/ in the repository), which `pip install ragas-ops` does not install (test doubles and
launchers ship beside the library, as moto beside boto3). It holds the test judge and the
local-Airflow launcher. The library asks for them in a few places (`ragas-ops test-judge`,
`ragas-ops airflow up|down`, `ragas-ops demo`) and looks for the kit only then, never when it
is imported, so a missing kit costs nothing until it is asked for and then says, in one line,
what to install."""

from __future__ import annotations

import importlib.util

TEST_KIT_PACKAGE = "ragas_ops_testing"
INSTALL_COMMAND = "pip install -e ./testkit (ragas-ops-testing, from a checkout of ragas-ops)"
TEST_JUDGE = "the test judge"
LOCAL_AIRFLOW = "the local-Airflow launcher (`ragas-ops airflow`, `ragas-ops demo`)"


def install_test_kit(what: str) -> str:
    """The one line that says `what` needs the test kit, and how to install it."""
    return f"{what} is in the test kit, which is not installed: {INSTALL_COMMAND}"


INSTALL_TEST_KIT = install_test_kit(TEST_JUDGE)


class MissingTestKitError(RuntimeError):
    """Something of the test kit was asked for and the kit is not installed."""


def has_test_kit() -> bool:
    """Whether `ragas_ops_testing` can be imported (without importing it)."""
    return importlib.util.find_spec(TEST_KIT_PACKAGE) is not None


def require_test_kit(what: str = TEST_JUDGE) -> None:
    """Refuse, in one line saying what to install, to start `what` when there is no kit."""
    if not has_test_kit():
        raise MissingTestKitError(install_test_kit(what))
