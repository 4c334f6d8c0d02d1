"""gmmlib speaks one vocabulary (issue 23): one sampler order, one step name, one flow type.

Read from the signatures of every public function and method, so that a new function that
breaks a convention fails here rather than in a reader's head.
"""

from __future__ import annotations

import importlib
import inspect
import pkgutil

import pytest

import gmmlib
from gmmlib.attention import PromptBatch

MODULES = [importlib.import_module(f"gmmlib.{m.name}") for m in pkgutil.iter_modules(gmmlib.__path__)
           if not m.name.startswith("_")]
COUNTS = {"n", "n_prompts", "length", "batch_size", "n_samples", "n_queries", "steps"}
OLD_NAMES = {"AttentionParams", "EffectiveHead", "GradientFlow", "gradient_descent", "check_covariance"}


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
    for module in MODULES:
        assert not OLD_NAMES & set(getattr(module, "__all__", [])), module.__name__


@pytest.mark.parametrize("qualname", sorted(CALLABLES))
def test_one_step_name_and_counts_before_the_generator(qualname):
    params = list(inspect.signature(CALLABLES[qualname]).parameters)
    assert "eta" not in params, f"{qualname}: the step is called lr"
    assert "batch" not in params, f"{qualname}: the batch size is called batch_size"
    if "rng" in params:   # an option after rng is keyword-only
        positional = [name for name, p in inspect.signature(CALLABLES[qualname]).parameters.items()
                      if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)]
        late = [p for p in positional[positional.index("rng") + 1:] if p in COUNTS] if "rng" in positional else []
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
