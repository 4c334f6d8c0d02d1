"""gmmlib speaks one vocabulary: one sampler order, one generator name, one step name, one flow
type, heads as ``U, V``; and its modules are a tree: names defined where they are documented, no
private name imported across modules, no private module imported outside its package, no import
cycle.

Read from the signatures of every public function and method and from the source's imports, so that
a new function or module that breaks a convention fails here rather than in a reader's head. The
modules are walked through the subpackages (``gmmlib.lda``, ``gmmlib.denoising``,
``gmmlib.runtime``). Two kinds of module re-export names defined elsewhere, and only these: a
package's ``__init__`` and a shim at a moved module's earlier path (``tests/gmmlib/test_layout.py``
lists them); what they re-export is a documented name of a defining module.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import pkgutil
from pathlib import Path

import numpy as np
import pytest

import gmmlib
from gmmlib import softmax_attention
from gmmlib.attention import Head, PromptBatch

from .test_layout import MOVED

WALKED = [
    (m.name, m.ispkg)
    for m in pkgutil.walk_packages(gmmlib.__path__, "gmmlib.")
    if not any(part.startswith("_") for part in m.name.split("."))
]
#: the modules that define what they document
MODULES = [importlib.import_module(name) for name, ispkg in WALKED
           if not ispkg and name not in MOVED]
#: the packages' __init__ and the shims at earlier paths: they re-export, and define nothing
REEXPORTS = [importlib.import_module(name) for name, ispkg in [("gmmlib", True), *WALKED]
             if ispkg or name in MOVED]
COUNTS = {"n", "n_prompts", "length", "batch_size", "n_samples", "n_queries", "steps"}
OLD_NAMES = {
    "AttentionParams",
    "EffectiveHead",
    "GradientFlow",
    "gradient_descent",
    "check_covariance",
}


def public_callables():
    for module in MODULES:
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            if inspect.isclass(obj):
                for meth_name, meth in vars(obj).items():
                    if inspect.isfunction(meth) and not meth_name.startswith("_"):
                        yield f"{module.__name__}.{name}.{meth_name}", meth
                if "__init__" in vars(obj) and inspect.isfunction(obj.__init__):
                    yield f"{module.__name__}.{name}", obj.__init__
            elif inspect.isfunction(obj):
                yield f"{module.__name__}.{name}", obj


CALLABLES = dict(public_callables())


def test_the_old_names_are_gone():
    for module in MODULES + REEXPORTS:
        assert not OLD_NAMES & set(getattr(module, "__all__", [])), module.__name__


@pytest.mark.parametrize("qualname", sorted(CALLABLES))
def test_one_step_name_and_counts_before_the_generator(qualname):
    params = list(inspect.signature(CALLABLES[qualname]).parameters)
    assert "eta" not in params, f"{qualname}: the step is called lr"
    assert "batch" not in params, f"{qualname}: the batch size is called batch_size"
    if "rng" in params:  # an option after rng is keyword-only
        positional = [
            name
            for name, p in inspect.signature(CALLABLES[qualname]).parameters.items()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
        late = (
            [p for p in positional[positional.index("rng") + 1 :] if p in COUNTS]
            if "rng" in positional
            else []
        )
        assert not late, f"{qualname}: counts {late} come after rng (the order is (n, rng))"


def test_flows_return_one_trajectory_type_and_samplers_prompt_batches():
    flows = {q: f for q, f in CALLABLES.items() if q.endswith(".gradient_flow")}
    assert len(flows) >= 2
    for qualname, fn in flows.items():
        sig = inspect.signature(fn)
        assert sig.return_annotation == "Trajectory", qualname
        assert list(sig.parameters)[1:3] == ["theta0", "t_eval"], qualname
    samplers = {q: f for q, f in CALLABLES.items() if q.endswith(".sample_prompts")}
    assert samplers
    for qualname, fn in samplers.items():
        ann = inspect.signature(fn).return_annotation
        returned = getattr(inspect.getmodule(fn), ann, None) if isinstance(ann, str) else ann
        assert inspect.isclass(returned) and issubclass(returned, PromptBatch), qualname


GENERATOR_ALIASES = {"seed", "random_state", "generator", "gen", "random"}


@pytest.mark.parametrize("qualname", sorted(CALLABLES))
def test_the_generator_is_rng_and_comes_last(qualname):
    sig = inspect.signature(CALLABLES[qualname])
    assert not GENERATOR_ALIASES & set(sig.parameters), f"{qualname}: the generator is called rng"
    positional = [
        name
        for name, p in sig.parameters.items()
        if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
    ]
    if "rng" in positional:
        assert positional[-1] == "rng", f"{qualname}: rng is the last positional argument"


@pytest.mark.parametrize("qualname", sorted(CALLABLES))
def test_a_head_is_u_v_side_by_side(qualname):
    """A function of a head takes ``U, V`` in this order and adjacent, so ``f(..., *head)``
    works."""
    params = list(inspect.signature(CALLABLES[qualname]).parameters)
    if "U" in params and "V" in params:
        assert params.index("V") == params.index("U") + 1, f"{qualname}: U, V side by side"


def test_a_head_unpacks_into_every_function_of_u_v():
    U, V = np.eye(2), np.array([[1.0, 0.5]])
    head = Head(U, V)
    z = np.array([[0.3, -0.2], [1.0, 0.4], [-0.5, 0.1]])
    np.testing.assert_array_equal(
        softmax_attention(z, z[:1], *head), softmax_attention(z, z[:1], U, V)
    )


def test_every_public_name_is_defined_where_it_is_documented():
    for module in MODULES:
        for name in getattr(module, "__all__", []):
            obj = getattr(module, name)
            if inspect.isclass(obj) or inspect.isfunction(obj):
                assert obj.__module__ == module.__name__, (
                    f"{module.__name__}.{name} is {obj.__module__}'s"
                )


def test_a_reexport_is_a_documented_name_of_a_defining_module():
    documented = {
        id(getattr(module, name)) for module in MODULES for name in getattr(module, "__all__", [])
    }
    assert len(REEXPORTS) >= 4 + len(MOVED)  # gmmlib, lda, denoising, runtime and the shims
    for module in REEXPORTS:
        for name in module.__all__:
            assert id(getattr(module, name)) in documented, (
                f"{module.__name__}.{name} is in no defining module's __all__"
            )


ROOT = Path(gmmlib.__file__).parent
SOURCES = sorted(ROOT.rglob("*.py"))


def module_name(path: Path) -> str:
    """``gmmlib/lda/task.py`` -> ``gmmlib.lda.task``; a package's ``__init__`` is the package."""
    parts = ("gmmlib", *path.relative_to(ROOT).with_suffix("").parts)
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


NAMES = {module_name(p) for p in SOURCES}


def gmmlib_imports(path: Path):
    """(module, imported names) for every import of a gmmlib module in ``path``, at any depth;
    relative imports resolved, a name imported from a package that is a module counted as it."""
    here = module_name(path)
    package = here if path.name == "__init__.py" else here.rpartition(".")[0]
    for node in ast.walk(ast.parse(path.read_text())):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = ".".join(package.split(".")[: len(package.split(".")) - node.level + 1])
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            if not target.startswith("gmmlib"):
                continue
            names = [a.name for a in node.names]
            submodules = [f"{target}.{n}" for n in names if f"{target}.{n}" in NAMES]
            yield from ((m, []) for m in submodules)
            yield target, [n for n in names if f"{target}.{n}" not in NAMES]
        elif isinstance(node, ast.Import):
            for a in node.names:
                if a.name.startswith("gmmlib."):
                    yield a.name, []


IMPORTS = {module_name(p): list(gmmlib_imports(p)) for p in SOURCES}


def test_the_imports_are_read():
    """The reader resolves what the package imports (else the rules below test nothing)."""
    assert ("gmmlib.lda._rules", ["effective_map"]) in IMPORTS["gmmlib.lda.autograd"]
    assert ("gmmlib._validation", ["check_positive", "check_type"]) in IMPORTS[
        "gmmlib.lda.autograd"]
    assert any(m == "gmmlib.runtime.glued" for m, _ in IMPORTS["gmmlib.runtime.checks"])
    assert any(m == "gmmlib.lda.dynamics" for m, _ in IMPORTS["gmmlib.lda_dynamics"])
    assert set(IMPORTS) == NAMES and all(m in NAMES for v in IMPORTS.values() for m, _ in v)


def _private(name: str) -> bool:
    """``_name`` is private; a dunder (``__all__``, which a shim takes from its module) is not."""
    return name.startswith("_") and not (name.startswith("__") and name.endswith("__"))


def test_no_private_name_is_imported_across_modules():
    found = {
        (here, name, module)
        for here, imports in IMPORTS.items()
        for module, names in imports
        for name in names
        if _private(name)
    }
    assert not found, sorted(found)


def test_a_private_module_is_imported_only_inside_its_package():
    """``gmmlib._validation`` serves all of gmmlib, ``gmmlib.lda._rules`` gmmlib.lda alone."""
    found = set()
    for here, imports in IMPORTS.items():
        for module, _ in imports:
            parts = module.split(".")
            private = [i for i, part in enumerate(parts) if part.startswith("_")]
            if private and not (here + ".").startswith(".".join(parts[: private[0]]) + "."):
                found.add((here, module))
    assert not found, sorted(found)


def test_the_modules_import_no_cycle():
    graph = {here: {m for m, _ in imports} for here, imports in IMPORTS.items()}
    state: dict[str, int] = {}

    def visit(node, stack):
        state[node] = 1
        for nxt in sorted(graph.get(node, ())):
            assert state.get(nxt) != 1, "import cycle: " + " -> ".join([*stack, node, nxt])
            if nxt not in state:
                visit(nxt, [*stack, node])
        state[node] = 2

    for node in sorted(graph):
        if node not in state:
            visit(node, [])


@pytest.mark.parametrize("path", SOURCES, ids=lambda p: str(p.relative_to(ROOT)))
def test_every_module_is_under_600_lines(path):
    """A module longer than this holds more than one idea: split it by idea."""
    assert len(path.read_text().splitlines()) < 600, path.name
