"""The boundaries (DESIGN section 3): pools imports neither planner nor spark_jobs; only spark_jobs imports
pyspark; only the pool model and the exact placement reference import pulp; no import circles; and one home
for each rule: the Java semantics in pools/java_semantics.py, the pool rules in pools/pool_rules.py."""

from __future__ import annotations

import ast
import re
import sys
from pathlib import Path

import networkx as nx

ROOT = Path(__file__).resolve().parent.parent


def _imports(package: str) -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        names: set[str] = set()
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                names |= {a.name.split(".")[0] for a in node.names}
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                names.add(node.module.split(".")[0])
        found[str(path.relative_to(ROOT))] = names
    return found


def test_pools_imports_neither_planner_nor_spark_jobs() -> None:
    offenders = {f: n & {"planner", "spark_jobs", "pyspark", "pulp"} for f, n in _imports("pools").items()}
    assert {f: n for f, n in offenders.items() if n} == {}


def test_only_spark_jobs_imports_pyspark() -> None:
    offenders = {f for pkg in ("pools", "planner") for f, n in _imports(pkg).items() if "pyspark" in n}
    assert offenders == set()


def test_planner_does_not_import_spark_jobs_at_module_level() -> None:
    offenders = set()
    for path in sorted((ROOT / "planner").rglob("*.py")):
        tree = ast.parse(path.read_text(encoding="utf-8"))
        for node in tree.body:
            if isinstance(node, ast.ImportFrom) and (node.module or "").startswith("spark_jobs"):
                offenders.add(str(path))
            if isinstance(node, ast.Import) and any(a.name.startswith("spark_jobs") for a in node.names):
                offenders.add(str(path))
    assert offenders == set()


def test_pulp_is_confined_to_the_milp_modules() -> None:
    users = {f for f, n in _imports("planner").items() if "pulp" in n}
    assert users <= {"planner/pool_milp.py", "planner/placement/exact.py"}


def _modules() -> dict[str, Path]:
    out = {}
    for package in ("pools", "planner", "spark_jobs"):
        for path in sorted((ROOT / package).rglob("*.py")):
            name = ".".join(path.relative_to(ROOT).with_suffix("").parts)
            out[name.removesuffix(".__init__")] = path
    return out


def _definitions(names: set[str]) -> dict[str, set[str]]:
    """Which modules define (def or class, at any depth) each of ``names``."""
    found: dict[str, set[str]] = {}
    for module, path in _modules().items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name.lstrip("_") in names:
                found.setdefault(node.name.lstrip("_"), set()).add(module)
    return found


def _ancestors(module: str) -> list[str]:
    """The packages above ``module``, outermost first: ``a.b.c`` → ``a``, ``a.b``."""
    parts = module.split(".")
    return [".".join(parts[:i]) for i in range(1, len(parts))]


def _import_graph(*, types: bool) -> nx.DiGraph:
    """Module → module imports (and the packages each import sets up first); ``types``: those under
    ``if TYPE_CHECKING:`` too."""
    modules = _modules()
    graph = nx.DiGraph()
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        typing_only = {id(n) for node in ast.walk(tree) if isinstance(node, ast.If) and "TYPE_CHECKING" in
                       ast.unparse(node.test) for n in ast.walk(node)}
        for node in ast.walk(tree):
            if id(node) in typing_only and not types:
                continue
            targets: list[str] = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
                # `from package import submodule` imports the submodule, anything else the module itself
                targets = [f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module
                           for a in node.names]
            own = set(_ancestors(module)) | {module}
            for t in targets:
                graph.add_edges_from((module, p) for p in [*_ancestors(t), t]
                                     if p in modules and p not in own)
    return graph


def test_no_import_circles() -> None:
    """Every import, lazy ones included (a function-level import still closes a circle), the CLI layer too:
    `poolplan run` calls the stages' library functions (`planner.stages`), never the command group.

    Package level too: importing ``a.b.c`` runs ``a/b/__init__.py`` first, so it is an edge to the package ``a.b``
    as well, unless ``a.b`` contains the importer (a package is always set up before its own modules)."""
    assert sorted(nx.simple_cycles(_import_graph(types=False))) == []


def test_no_circles_even_through_type_only_imports() -> None:
    """A module that needs another's type only (``if TYPE_CHECKING:``) names it without importing it back: the
    pool rules read a policy through a protocol (`pools.pool_rules.LimitsPolicy`), not `pools.policy`'s class."""
    assert sorted(nx.simple_cycles(_import_graph(types=True))) == []


def test_a_package_level_circle_is_seen(tmp_path, monkeypatch) -> None:
    """``pkg.low`` imports ``pkg.sub.x``, whose package ``pkg/sub/__init__.py`` imports ``pkg.low``: no module
    imports another that imports it back, yet importing ``pkg.low`` first fails half-initialised."""
    for path, text in {"pkg/__init__.py": "", "pkg/low.py": "from pkg.sub.x import X\n",
                       "pkg/sub/__init__.py": "from pkg.sub.y import Y\n", "pkg/sub/x.py": "X = 1\n",
                       "pkg/sub/y.py": "from pkg.low import X\nY = 2\n"}.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    monkeypatch.setattr(sys.modules[__name__], "_modules",
                        lambda: {".".join(p.relative_to(tmp_path).with_suffix("").parts).removesuffix(".__init__"): p
                                 for p in sorted((tmp_path / "pkg").rglob("*.py"))})
    try:
        test_no_import_circles()
    except AssertionError as exc:
        assert "pkg.low" in str(exc) and "'pkg.sub'" in str(exc)
    else:
        raise AssertionError("the package-level circle pkg.low -> pkg.sub -> pkg.sub.y -> pkg.low was not seen")


def test_java_semantics_live_in_one_module() -> None:
    names = {"string_hash", "utf16_key", "topic_partition_hash", "uuid_hash", "int32", "wrap32", "hash_order",
             "hashmap_order", "hashmap_capacity", "table_size_for", "hashset_copy_capacity", "copy_capacity",
             "JavaRandom", "java_shuffle", "parse_java_int", "next_int", "next_ints", "next_bits",
             "scramble"}
    assert {n: m for n, m in _definitions(names).items() if m != {"pools.java_semantics"}} == {}


def test_pool_rules_live_in_one_module() -> None:
    names = {"PoolLimits", "PoolRules", "usable_capacity", "failure_loss", "failing_brokers", "brokers_to_fit",
             "over_limit", "brokers_required", "racks_required", "pool_racks_required", "spans_every_rack",
             "misplaced_pins", "shared_tenant_pools", "headroom", "min_brokers"}
    found = _definitions(names)
    # PoolLimits.headroom_of is the one accessor; PoolPolicy no longer answers headroom or min_brokers itself
    assert {n: m for n, m in found.items() if m != {"pools.pool_rules"}} == {}


def test_user_files_are_read_through_pools_files() -> None:
    """One way to read a user's file (pools.files: OS, decoding and syntax errors name the file); the profile's
    Parquet is read by pools.profile, which checks every row."""
    readers = (".read_text(", ".read_bytes(", "json.load(", "tomllib.load(", "pq.read_table(")
    offenders = set()
    for pkg in ("pools", "planner"):
        for path in sorted((ROOT / pkg).rglob("*.py")):
            rel = str(path.relative_to(ROOT))
            if rel in ("pools/files.py", "pools/profile.py"):
                continue
            text = path.read_text(encoding="utf-8")
            if any(r in text for r in readers):
                offenders.add(rel)
    assert offenders == set()


def test_click_and_rich_stay_in_the_cli() -> None:
    users = {f for pkg in ("pools", "planner") for f, n in _imports(pkg).items() if n & {"click", "rich"}}
    assert {f for f in users if not f.startswith("planner/cli/")} == set()


_CONTRACT = "spark_jobs.history_contract"
#: What the history's contract defines: every writer and reader of the per-minute table asks it.
_CONTRACT_FUNCTIONS = {"partition_dir", "partition_value", "partition_key", "day_dirs", "day_names", "day_column",
                       "day_order", "bucket_of", "bucket_count", "steps_file", "steps_bucket", "steps_files",
                       "spark_type"}
_CONTRACT_CONSTANTS = {"DELTA_FIELDS", "STEPS_SCHEMA", "THROUGHPUT_ARROW", "THROUGHPUT_SCHEMA", "OPTIONAL_COLUMNS",
                       "HISTORY_KEY", "FLAG_RESET", "FLAG_GAP", "FLAG_PARTIAL", "GAP_MS", "PARTIAL_MS", "ALL_BROKERS",
                       "DAY_FILE", "DAY_ORDER", "STEPS_DIR", "BUCKET_BYTES"}
#: Literals that spell the contract out: a partition directory, a steps file's name.
_CONTRACT_LITERAL = re.compile(r"^(cluster|dt)=|-steps-b")
#: A column only the normalized row has: a schema naming it re-declares the history's.
_HISTORY_ONLY_COLUMN = "bytes_out_interval_s"


def _contract_offenders(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Per module other than the contract: the contract's names it defines or assigns again, the schemas of the
    history's columns it declares (``pa.schema``, ``pa.field``, ``StructType``, ``StructField``) and the partition
    or steps-file literals it spells (docstrings aside)."""
    found: dict[str, set[str]] = {}
    for module, path in modules.items():
        if module == _CONTRACT:
            continue
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {id(n.value) for n in ast.walk(tree)
                      if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
        hits: set[str] = set()
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.ClassDef)) and node.name.lstrip("_") in _CONTRACT_FUNCTIONS:
                hits.add(f"defines {node.name}")
            elif isinstance(node, (ast.Assign, ast.AnnAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                names = {t.id for t in targets if isinstance(t, ast.Name)}
                names |= {e.id for t in targets if isinstance(t, ast.Tuple) for e in t.elts if isinstance(e, ast.Name)}
                hits |= {f"assigns {n}" for n in names if n.lstrip("_") in _CONTRACT_CONSTANTS}
            elif isinstance(node, ast.Call) and ast.unparse(node.func).split(".")[-1] in (
                    "schema", "field", "StructType", "StructField"):
                if any(isinstance(c, ast.Constant) and c.value == _HISTORY_ONLY_COLUMN for c in ast.walk(node)):
                    hits.add(f"declares the history's schema ({ast.unparse(node.func)})")
            elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
                if _CONTRACT_LITERAL.search(node.value):
                    hits.add(f"spells {node.value!r}")
        if hits:
            found[module] = hits
    return found


def test_the_history_contract_lives_in_one_module() -> None:
    """Schemas, flags, limits, partition directories, row order and steps files: `spark_jobs.history_contract`."""
    assert _contract_offenders(_modules()) == {}


def test_a_re_implemented_history_contract_is_seen(tmp_path) -> None:
    copy = tmp_path / "copy.py"
    copy.write_text('import pyarrow as pa\n'
                    'ROWS = pa.schema([("bytes_in", pa.int64()), ("bytes_out_interval_s", pa.int32())])\n'
                    'def where(c, d):\n    """``cluster=<c>``"""\n    return f"cluster={c}/dt={d}"\n'
                    'def bucket_file(p, b):\n    return p + "-steps-b%04d.parquet" % b\n'
                    'GAP_MS = 90_000\n', encoding="utf-8")
    hits = _contract_offenders({"spark_jobs.copy": copy})["spark_jobs.copy"]
    assert hits == {"declares the history's schema (pa.schema)", "spells 'cluster='",
                    "spells '-steps-b%04d.parquet'", "assigns GAP_MS"}, hits


#: Public class names two modules still share (each to be renamed; the list only shrinks).
_SHARED_CLASS_NAMES = {"PartitionMove", "GroupSpec", "Series"}


def test_a_class_name_means_one_thing() -> None:
    """One name, one type: ``Progress`` is a reassignment's state (`planner.emit.progress`), the console callback
    is `pools.progress.ProgressReporter`."""
    found = _definitions_at_top_level()
    shared = {name for name, modules in found.items() if len(modules) > 1 and not name.startswith("_")}
    assert shared <= _SHARED_CLASS_NAMES, shared - _SHARED_CLASS_NAMES
    assert found["Progress"] == {"planner.emit.progress"}


def _definitions_at_top_level() -> dict[str, set[str]]:
    found: dict[str, set[str]] = {}
    for module, path in _modules().items():
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.ClassDef):
                found.setdefault(node.name, set()).add(module)
    return found


# --- each rule once: headroom comparisons, the reason vocabulary, rack spread --------------------------------

_RULES = "pools.pool_rules"
_REASONS = "pools.plan_file"
#: The engine's array form of rack spread (`planner.placement.engine.spread_kept`), which asks pool_rules for
#: the racks required.
_SPREAD_ARRAYS = "planner.placement.engine"
_ORDER = (ast.Lt, ast.LtE, ast.Gt, ast.GtE)
#: Functions whose name says "spread" for something other than a partition's rack spread.
_OTHER_SPREADS = {("pools.new_brokers", "spread_over_racks"),  # how many brokers to buy per rack
                  ("planner.assignors.sizing", "spread_topic_rates"),  # a topic's rate over its partitions
                  ("planner.assignors.sizing", "bytes_spread"),  # max over mean of consumers' bytes
                  ("planner.operations.balance", "spread"),  # max and min over the mean utilisation
                  ("planner.sample.kafka4", "_spread")}  # the sample's cordoned dirs over a broker's replicas
_SPREAD_NAME = re.compile(r"spread|spans?_racks|racks_required", re.IGNORECASE)


def _named(node: ast.AST) -> str:
    """The identifier a name, attribute or string key spells ('' for anything else)."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    return node.value if isinstance(node, ast.Constant) and isinstance(node.value, str) else ""


def _mentions_headroom(operand: ast.AST) -> bool:
    """Whether ``operand`` uses a headroom directly (a call such as ``headroom_limit(...)`` asks the rule)."""
    todo = [operand]
    while todo:
        node = todo.pop()
        if isinstance(node, ast.Call):
            continue
        if "headroom" in _named(node).lower():
            return True
        todo.extend(ast.iter_child_nodes(node))
    return False


def _reason_in_context(node: ast.Constant, parents: dict[int, ast.AST], names: set[str]) -> bool:
    """Whether a string spelling a reason name stands for a reason: compared with a ``.rule``, given to
    ``Reason``/``ReasonRule``, a key of a dict or an item of a collection beside another reason name."""
    parent = parents.get(id(node))
    if isinstance(parent, (ast.Tuple, ast.List, ast.Set, ast.Dict)):
        items = parent.keys if isinstance(parent, ast.Dict) else parent.elts
        if sum(isinstance(k, ast.Constant) and k.value in names for k in items) >= 2:
            return True
        parent = parents.get(id(parent))
    if isinstance(parent, ast.Compare):
        return any(isinstance(o, ast.Attribute) and o.attr == "rule" for o in (parent.left, *parent.comparators))
    return isinstance(parent, ast.Call) and _named(parent.func) in ("Reason", "ReasonRule")


def _rule_offenders(modules: dict[str, Path]) -> dict[str, set[str]]:
    """Per module: comparisons against a headroom outside `pools.pool_rules` (``over_limit`` is the one; bounds
    checks of a headroom against constants aside), reason names spelled outside `pools.plan_file` (the distinct
    ones anywhere, the ones that also name a command or option where they stand for a reason; docstrings aside),
    and rack-spread rules defined outside `pools.pool_rules` and the engine's array form."""
    from pools.plan_file import ReasonRule

    names = {r.value for r in ReasonRule}
    distinct = names - {"replication_factor", "demote", "balance", "fill"}  # also a config, command or option
    found: dict[str, set[str]] = {}
    for module, path in modules.items():
        tree = ast.parse(path.read_text(encoding="utf-8"))
        docstrings = {id(n.value) for n in ast.walk(tree)
                      if isinstance(n, ast.Expr) and isinstance(n.value, ast.Constant)}
        parents = {id(c): n for n in ast.walk(tree) for c in ast.iter_child_nodes(n)}
        hits: set[str] = set()
        for node in ast.walk(tree):
            if module != _RULES and isinstance(node, ast.Compare) and any(isinstance(o, _ORDER) for o in node.ops):
                operands = (node.left, *node.comparators)
                if any(map(_mentions_headroom, operands)) and not all(
                        isinstance(o, ast.Constant) or _mentions_headroom(o) for o in operands):
                    hits.add(f"compares a headroom: {ast.unparse(node)}")
            elif module != _REASONS and isinstance(node, ast.Constant) and node.value in names and \
                    id(node) not in docstrings and (node.value in distinct or _reason_in_context(node, parents, names)):
                hits.add(f"spells the reason {node.value!r}")
            elif isinstance(node, (ast.FunctionDef, ast.ClassDef)) and _SPREAD_NAME.search(node.name) and \
                    module not in (_RULES, _SPREAD_ARRAYS) and (module, node.name) not in _OTHER_SPREADS:
                hits.add(f"defines {node.name}")
        if hits:
            found[module] = hits
    return found


def test_each_rule_lives_in_its_one_home() -> None:
    """No headroom comparison, reason literal or rack-spread rule outside its home (issue 37)."""
    assert _rule_offenders(_modules()) == {}


def test_a_re_implemented_rule_is_seen(tmp_path) -> None:
    copy = tmp_path / "copy.py"
    copy.write_text('def over(cell, pools, pool, d):\n'
                    '    return cell["before"] > pools[pool][d]["headroom"] * cell["capacity"]\n'
                    'def limit_ok(load, limits, d, cap):\n    return load <= limits.headroom[d] * cap\n'
                    'def valid(headroom):\n    return 0 < headroom <= 1\n'
                    'def why(r):\n    """Says ``relieve``."""\n'
                    '    if r.rule == "fill" or r.rule in ("demote", "x"):\n        return "keep"\n'
                    '    return {"replication_factor": "a", "evacuate": "b"}[r.rule]\n'
                    'def make(Reason):\n    return Reason("balance"), {"--log-dirs": "balance"}\n'
                    'def _spans_racks_ok(replicas, racks):\n'
                    '    return len(set(replicas)) >= min(len(replicas), racks)\n'
                    'def keeps_spread(a, b):\n    return a <= b\n', encoding="utf-8")
    hits = _rule_offenders({"planner.copy": copy})["planner.copy"]
    assert hits == {'compares a headroom: cell[\'before\'] > pools[pool][d][\'headroom\'] * cell[\'capacity\']',
                    "compares a headroom: load <= limits.headroom[d] * cap",
                    "spells the reason 'fill'", "spells the reason 'demote'", "spells the reason 'replication_factor'",
                    "spells the reason 'evacuate'", "spells the reason 'balance'",
                    "defines _spans_racks_ok", "defines keeps_spread"}, hits
