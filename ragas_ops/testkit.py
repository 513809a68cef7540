"""Where the test judge lives: in the test kit, the distribution ragas-ops-testing (package
`ragas_ops_testing`, testkit/ in the repository), which `pip install ragas-ops` does not
install (a test double ships beside the library, as moto beside boto3). The library starts the
test judge in a few places (`ragas-ops test-judge`, `ragas-ops airflow up` with neither a key
nor the local judge, the cluster's processes) and looks for the kit only then, never when it is
imported, so a missing kit costs nothing until it is asked for and then says what to install."""

from __future__ import annotations

import importlib.util

TEST_KIT_PACKAGE = "ragas_ops_testing"
INSTALL_TEST_KIT = (
    "the test judge is in the test kit, which is not installed: "
    "pip install -e ./testkit (ragas-ops-testing, from a checkout of ragas-ops)"
)


class MissingTestKitError(RuntimeError):
    """The test judge was asked for and the test kit is not installed."""


def has_test_kit() -> bool:
    """Whether `ragas_ops_testing` can be imported (without importing it)."""
    return importlib.util.find_spec(TEST_KIT_PACKAGE) is not None


def require_test_kit() -> None:
    """Refuse, in one line saying what to install, to start a test judge there is none of."""
    if not has_test_kit():
        raise MissingTestKitError(INSTALL_TEST_KIT)
