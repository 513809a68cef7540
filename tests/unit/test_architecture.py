"""The house's rules, read from the code's own imports: no import circle, no arrow from a lower
layer to a higher one, no private name taken across modules, settings modules that any floor
may import; the judge's seam (the engine imports no provider, no provider imports another);
and which rooms speak which SDK, from the one list in pyproject.toml (ruff's banned-api and
`[tool.ragas_ops.boundaries]`)."""

from __future__ import annotations

import ast
import json
import subprocess
import sys
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

ROOT = Path(__file__).resolve().parents[2]
PACKAGE = ROOT / "ragas_ops"

# Rooms from the bottom up; a room may import its own floor and the floors below it. The judge
# is its interface (base, batch, tokens, endpoint, providers) with its pacing and its cache,
# then the provider-neutral engine (the request's life), then the provider packages (each its
# wire), then the factory that builds them.
LAYERS: tuple[frozenset[str], ...] = (
    frozenset(
        {
            "contract",
            "text",
            "secrets",
            "sampling",
            "samples",
            "pricing",
            "storage",
            "testkit",
            "settings_fields",
        }
    ),
    frozenset({"prompts", "config", "tables", "labels"}),
    frozenset({"judge", "judge.limits", "judge.cache"}),
    frozenset({"judge.engine"}),
    frozenset({"judge.openai", "judge.local"}),
    frozenset({"judge.factory"}),
    frozenset({"metrics"}),
    frozenset({"scoring", "quality", "capture"}),
    frozenset({"pipeline", "estimate", "evaluation"}),
    frozenset({"airflow"}),
    frozenset({"cli"}),
)
SUBROOMS = {
    "judge.engine",
    "judge.openai",
    "judge.local",
    "judge.limits",
    "judge.cache",
    "judge.factory",
}
ENGINE = "judge.engine"
NOT_PROVIDERS = frozenset({ENGINE, "judge.limits", "judge.cache", "judge.factory"})
"""The judge's rooms that are no provider package: every other folder of judge/ is one."""
# What another room may import of a room of the judge. The providers are built by the factory
# alone; the local judge's toolkit is what the metrics' local rules (and the benchmarks'
# perturbations) are written with; the engine's graceful stop is what a scoring run's stop
# flips.
DOORS: dict[str, frozenset[str]] = {
    "judge.engine": frozenset({"ragas_ops.judge.engine.stopping"}),
    "judge.openai": frozenset(),
    "judge.local": frozenset(
        f"ragas_ops.judge.local.{name}" for name in ("rules", "evidence", "questions", "generator")
    ),
    "judge.limits": frozenset(),
    "judge.cache": frozenset({"ragas_ops.judge.cache", "ragas_ops.judge.cache.keys"}),
    "judge.factory": frozenset({"ragas_ops.judge.factory"}),
}
# A room's settings (the specs `config` composes) are in its `spec.py`, beside the part they
# configure. A settings module imports nothing of ragas_ops but the settings toolkit, and the
# packages it sits in import nothing at all when imported, so it stands on the toolkit's floor
# and is a door of its room: `config` (floor 1) composes the judge's specs without an arrow up.
TOOLKIT = "ragas_ops.settings_fields"
SETTINGS_MODULE = "spec"


def is_settings_module(module: str) -> bool:
    return module.rsplit(".", 1)[-1] == SETTINGS_MODULE


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def modules() -> dict[str, ast.Module]:
    return {
        module_name(path): ast.parse(path.read_text(), str(path))
        for path in sorted(PACKAGE.rglob("*.py"))
    }


def imports(tree: ast.Module) -> Iterator[tuple[str, list[str], bool]]:
    """(module, names, at module level) for every `ragas_ops` import, lazy ones included."""
    top_level = {id(node) for node in tree.body}
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("ragas_ops"):
            yield node.module, [alias.name for alias in node.names], id(node) in top_level
        elif isinstance(node, ast.Import):
            for alias in node.names:
                if alias.name.startswith("ragas_ops"):
                    yield alias.name, [], id(node) in top_level


def room(module: str) -> str:
    parts = module.split(".")
    if ".".join(parts[1:3]) in SUBROOMS:
        return ".".join(parts[1:3])
    return parts[1] if len(parts) > 1 else ""


def floor(module: str) -> int:
    if is_settings_module(module):
        return floor(TOOLKIT)
    name = room(module)
    for level, rooms in enumerate(LAYERS):
        if name in rooms:
            return level
    raise AssertionError(f"{module}: room {name!r} is on no floor of LAYERS; add it")


def resolve(target: str, names: list[str], known: dict[str, ast.Module]) -> list[str]:
    """The modules an import really loads (`from pkg import module` loads pkg.module)."""
    loaded = [target] if target in known else []
    loaded += [f"{target}.{name}" for name in names if f"{target}.{name}" in known]
    return loaded


def test_every_room_is_on_a_floor() -> None:
    for module in modules():
        if module != "ragas_ops":
            floor(module)


def test_no_arrow_runs_from_a_lower_floor_to_a_higher_one() -> None:
    known = modules()
    upward = [
        f"{module} (floor {floor(module)}) imports {target} (floor {floor(target)})"
        for module, tree in known.items()
        if module != "ragas_ops"
        for imported, names, _ in imports(tree)
        for target in resolve(imported, names, known)
        if target != "ragas_ops" and floor(target) > floor(module)
    ]
    assert upward == []


def test_no_import_circle() -> None:
    known = modules()
    graph = {
        module: {
            target
            for imported, names, _top in imports(tree)  # lazy imports too: a circle all the same
            for target in resolve(imported, names, known)
            if target != module
        }
        for module, tree in known.items()
    }
    circles: list[list[str]] = []
    state: dict[str, int] = {}

    def visit(node: str, path: list[str]) -> None:
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                circles.append([*path[path.index(nxt) :], nxt])
            elif nxt not in state:
                visit(nxt, [*path, nxt])
        state[node] = 2

    for start in sorted(graph):
        if start not in state:
            visit(start, [start])
    assert circles == []


def test_the_judges_rooms_are_entered_by_their_doors() -> None:
    known = modules()
    entered = [
        f"{module} imports {target}"
        for module, tree in known.items()
        if not module.startswith("ragas_ops.judge")
        for imported, names, _ in imports(tree)
        for target in resolve(imported, names, known)
        if room(target) in DOORS
        and target not in DOORS[room(target)]
        and not is_settings_module(target)
    ]
    assert entered == []


def settings_modules() -> dict[str, ast.Module]:
    return {name: tree for name, tree in modules().items() if is_settings_module(name)}


def test_the_judges_parts_have_their_settings_modules() -> None:
    assert sorted(settings_modules()) == [
        "ragas_ops.judge.cache.spec",
        "ragas_ops.judge.engine.spec",
        "ragas_ops.judge.limits.spec",
        "ragas_ops.judge.local.spec",
        "ragas_ops.judge.spec",
        "ragas_ops.labels.spec",
    ]


def every_import(tree: ast.Module) -> Iterator[str]:
    """Every module `tree` imports, ragas_ops or not, lazy ones included."""
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.module:
            yield node.module
        elif isinstance(node, ast.Import):
            yield from (alias.name for alias in node.names)


def test_a_settings_module_imports_only_the_toolkit_and_the_standard_library() -> None:
    known = modules()
    foreign = [
        f"{module} imports {imported}"
        for module, tree in {**settings_modules(), TOOLKIT: known[TOOLKIT]}.items()
        for imported in every_import(tree)
        if imported != TOOLKIT and imported.split(".")[0] not in sys.stdlib_module_names
    ]
    assert foreign == []


def test_the_packages_of_a_settings_module_import_nothing_when_imported() -> None:
    """Importing `ragas_ops.judge.cache.spec` runs `ragas_ops/judge/cache/__init__.py` first:
    an import at its top (the SQLite cache, numpy) would come with every settings import."""
    known = modules()
    packages = {
        ".".join(module.split(".")[:end])
        for module in settings_modules()
        for end in range(1, module.count(".") + 1)
    }
    eager = [
        f"{package} imports {imported} when it is imported"
        for package in sorted(packages)
        for imported, _, top in imports(known[package])
        if top
    ]
    assert eager == []


def test_config_stays_light() -> None:
    """The DAG files read settings while Airflow parses them: config and the settings modules
    it composes import no heavy library."""
    probe = "import sys, json, ragas_ops.config; print(json.dumps(sorted(sys.modules)))"
    loaded = json.loads(subprocess.check_output([sys.executable, "-c", probe], text=True))
    heavy = {"numpy", "pyarrow", "pandas", "pydantic", "openai", "redis", "sqlite3"}
    assert heavy & {name.split(".")[0] for name in loaded} == set()


def test_no_private_name_is_imported_across_modules() -> None:
    taken = [
        f"{module} takes {name} from {imported}"
        for module, tree in modules().items()
        for imported, names, _ in imports(tree)
        for name in names
        if name.startswith("_") and not name.startswith("__")
    ]
    assert taken == []


@pytest.mark.parametrize(
    ("module", "expected"),
    [
        ("ragas_ops.contract.inputs", 0),
        ("ragas_ops.judge.base", 2),
        ("ragas_ops.judge.engine.judge", 3),
        ("ragas_ops.judge.openai.wire", 4),
        ("ragas_ops.judge.factory", 5),
        ("ragas_ops.cli", 10),
    ],
)
def test_floors_are_read_from_the_room(module: str, expected: int) -> None:
    assert floor(module) == expected


def test_the_library_imports_the_test_kit_only_lazily() -> None:
    """The test kit (ragas_ops_testing) is a distribution of its own, outside these rooms: the
    library runs without it, so only a function that starts the test judge may import it."""
    eager = [
        f"{module} imports {imported} when it is imported"
        for module, tree in modules().items()
        for imported, _, top in imports(tree)
        if imported.split(".")[0] == "ragas_ops_testing" and top
    ]
    assert eager == []


# -- the judge's seam: one engine, a package per provider ------------------------------------


def provider_packages() -> set[str]:
    """The judge's provider packages: every folder of judge/ but the engine, the pacing, the
    cache (and the factory module)."""
    return {
        f"judge.{path.name}"
        for path in (PACKAGE / "judge").iterdir()
        if (path / "__init__.py").exists() and f"judge.{path.name}" not in NOT_PROVIDERS
    }


def room_arrows(source: str) -> list[str]:
    """Every `ragas_ops` import of the modules of room `source`, lazy ones included, as
    `module imports target`."""
    known = modules()
    return [
        f"{module} imports {target}"
        for module, tree in known.items()
        if room(module) == source
        for imported, names, _ in imports(tree)
        for target in resolve(imported, names, known)
    ]


def test_the_judge_has_an_engine_and_provider_packages() -> None:
    assert {"judge.openai", "judge.local"} <= provider_packages()
    assert ENGINE not in provider_packages()


def test_the_engine_imports_no_provider() -> None:
    providers = provider_packages()
    assert [arrow for arrow in room_arrows(ENGINE) if room(arrow.split()[-1]) in providers] == []


@pytest.mark.parametrize("provider", sorted(provider_packages()))
def test_no_provider_package_imports_another(provider: str) -> None:
    others = provider_packages() - {provider}
    assert [arrow for arrow in room_arrows(provider) if room(arrow.split()[-1]) in others] == []


# -- which rooms speak which SDK: the one list in pyproject.toml -----------------------------


def pyproject() -> dict[str, Any]:
    return tomllib.loads((ROOT / "pyproject.toml").read_text())


def boundaries() -> dict[str, Any]:
    table: dict[str, Any] = pyproject()["tool"]["ragas_ops"]["boundaries"]
    return table


def source_files() -> Iterator[Path]:
    """The code the boundaries hold: the library, the DAGs, the plugin and the test kit."""
    for top in ("ragas_ops", "dags", "plugins", "testkit"):
        yield from sorted((ROOT / top).rglob("*.py"))


def top_module_imports(path: Path) -> set[str]:
    """The top-level package of every module `path` imports, lazy ones included."""
    return {name.split(".")[0] for name in every_import(ast.parse(path.read_text(), str(path)))}


def in_rooms(path: Path, rooms: list[str]) -> bool:
    relative = path.relative_to(ROOT).as_posix()
    return any(relative.startswith(room.rstrip("/") + "/") for room in rooms)


def test_the_ban_list_is_one_list() -> None:
    """No ruff.toml of a room copies the ban list: pyproject.toml holds it, and names the
    rooms each banned SDK is spoken in."""
    copies = sorted(
        str(path.relative_to(ROOT))
        for path in ROOT.rglob("ruff.toml")
        if ".venv" not in path.parts and "node_modules" not in path.parts
    )
    assert copies == []
    lint = pyproject()["tool"]["ruff"]["lint"]
    banned = set(lint["flake8-tidy-imports"]["banned-api"])
    assert banned == set(boundaries()["sdk_rooms"])
    lifted = {
        pattern.removesuffix("/*")
        for pattern, codes in lint["per-file-ignores"].items()
        if "TID251" in codes and not pattern.startswith(("tests", "benchmarks"))
    }
    assert lifted == {room for rooms in boundaries()["sdk_rooms"].values() for room in rooms}


def test_each_sdk_is_spoken_only_in_its_rooms() -> None:
    sdk_rooms: dict[str, list[str]] = boundaries()["sdk_rooms"]
    strays = [
        f"{path.relative_to(ROOT)} imports {sdk}"
        for path in source_files()
        for sdk in sorted(top_module_imports(path) & set(sdk_rooms))
        if not in_rooms(path, sdk_rooms[sdk])
    ]
    assert strays == []


def test_the_bottom_rooms_speak_no_transport() -> None:
    table = boundaries()
    transports = set(table["transports"])
    strays = [
        f"{path.relative_to(ROOT)} imports {transport}"
        for path in source_files()
        if in_rooms(path, table["no_transport"])
        for transport in sorted(top_module_imports(path) & transports)
    ]
    assert strays == []
