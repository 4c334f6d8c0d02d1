"""Finite-prompt attention against a naive loop, its invariances, stability and validation."""

from __future__ import annotations

import pkgutil
import subprocess
import sys

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

import gmmlib
from gmmlib import linear_attention, softmax_attention
from gmmlib.attention import Head, PromptBatch, attention_weights
from gmmlib.attention_torch import AttentionHead

from ..conftest import seeds


def naive_softmax(tokens, q, U, V):
    s = np.array([z @ U @ q for z in tokens])
    w = np.exp(s - s.max())
    w /= w.sum()
    return V @ sum(wj * z for wj, z in zip(w, tokens))


def naive_linear(tokens, q, U, V):
    return V @ sum((z @ U @ q) * z for z in tokens) / len(tokens)


def test_matches_naive_loop(rng):
    L, n, d, p = 37, 5, 3, 2
    Z, Q = rng.normal(size=(L, d)), rng.normal(size=(n, d))
    U, V = rng.normal(size=(d, d)), rng.normal(size=(p, d))
    out = softmax_attention(Z, Q, U, V)
    ref = np.stack([naive_softmax(Z, q, U, V) for q in Q])
    np.testing.assert_allclose(out, ref, rtol=1e-12)
    np.testing.assert_allclose(
        linear_attention(Z, Q, U, V), np.stack([naive_linear(Z, q, U, V) for q in Q]), rtol=1e-12
    )
    assert isinstance(out, np.ndarray) and out.dtype == np.float64 and out.shape == (n, p)


def test_streaming_equals_one_pass(rng):
    Z, Q = rng.normal(size=(1000, 3)), rng.normal(size=(4, 3))
    U, V = 3.0 * rng.normal(size=(3, 3)), rng.normal(size=(2, 3))
    np.testing.assert_allclose(
        softmax_attention(Z, Q, U, V, chunk_size=7), softmax_attention(Z, Q, U, V), rtol=1e-12
    )


def test_batched(rng):
    B, L, n, d = 4, 20, 3, 2
    Z, Q = rng.normal(size=(B, L, d)), rng.normal(size=(B, n, d))
    U, V = rng.normal(size=(d, d)), np.eye(d)
    out = softmax_attention(Z, Q, U, V)
    assert out.shape == (B, n, d)
    for b in range(B):
        np.testing.assert_allclose(out[b], softmax_attention(Z[b], Q[b], U, V), rtol=1e-13)
    shared = softmax_attention(Z, Q[0], U, V)  # same queries for every prompt
    np.testing.assert_allclose(shared[1], softmax_attention(Z[1], Q[0], U, V), rtol=1e-13)


@settings(max_examples=50, deadline=None)
@given(seed=seeds, L=st.integers(1, 30), d=st.integers(1, 4))
def test_permuting_tokens_changes_nothing(seed, L, d):
    rng = np.random.default_rng(seed)
    Z, Q, U = rng.normal(size=(L, d)), rng.normal(size=(3, d)), rng.normal(size=(d, d))
    perm = rng.permutation(L)
    np.testing.assert_allclose(
        softmax_attention(Z[perm], Q, U, np.eye(d)),
        softmax_attention(Z, Q, U, np.eye(d)),
        rtol=1e-10,
        atol=1e-12,
    )
    np.testing.assert_allclose(
        linear_attention(Z[perm], Q, U, np.eye(d)),
        linear_attention(Z, Q, U, np.eye(d)),
        rtol=1e-10,
        atol=1e-12,
    )


@settings(max_examples=50, deadline=None)
@given(seed=seeds, shift=st.floats(-50.0, 50.0))
def test_adding_a_constant_to_every_score_changes_nothing(seed, shift):
    # Augment the tokens with a constant coordinate 1 and the query with 1:
    # U' = [[U, 0], [0, c]] adds c to every score z_j^T U z.
    rng = np.random.default_rng(seed)
    d = 3
    Z, Q, U = rng.normal(size=(15, d)), rng.normal(size=(2, d)), rng.normal(size=(d, d))
    Z1, Q1 = np.column_stack([Z, np.ones(15)]), np.column_stack([Q, np.ones(2)])
    U1 = np.zeros((d + 1, d + 1))
    U1[:d, :d] = U
    U1[d, d] = shift
    V1 = np.eye(d + 1)[:d]
    np.testing.assert_allclose(
        softmax_attention(Z1, Q1, U1, V1),
        softmax_attention(Z, Q, U, np.eye(d)),
        rtol=1e-9,
        atol=1e-12,
    )


@settings(max_examples=30, deadline=None)
@given(seed=seeds)
def test_huge_U_selects_the_argmax(seed):
    rng = np.random.default_rng(seed)
    Z, q = rng.normal(size=(25, 3)), rng.normal(size=3)
    U = 1e6 * np.eye(3)
    out = softmax_attention(Z, q[None], U, np.eye(3))[0]
    assert np.all(np.isfinite(out))
    scores = Z @ q
    if np.sort(scores)[-1] - np.sort(scores)[-2] > 1e-4:  # a unique maximiser
        np.testing.assert_allclose(out, Z[np.argmax(scores)], rtol=1e-9, atol=1e-12)
    w = attention_weights(Z, q, U)
    assert np.isfinite(w).all() and np.isclose(w.sum(), 1.0)


def test_huge_scores_streaming_finite(rng):
    Z, Q = rng.normal(size=(5000, 2)), rng.normal(size=(3, 2))
    out = softmax_attention(Z, Q, 1e6 * np.eye(2), np.eye(2), chunk_size=64)
    assert np.all(np.isfinite(out))
    np.testing.assert_allclose(out, Z[np.argmax(Z @ Q.T, axis=0)], rtol=1e-6)


def test_torch_in_torch_out_with_gradients(rng):
    Z = torch.tensor(rng.normal(size=(10, 3)))
    Q = torch.tensor(rng.normal(size=(2, 3)))
    U = torch.tensor(rng.normal(size=(3, 3)), requires_grad=True)
    V = torch.eye(3, dtype=torch.float64)
    out = softmax_attention(Z, Q, U, V)
    assert isinstance(out, torch.Tensor)
    out.sum().backward()
    assert U.grad is not None and torch.isfinite(U.grad).all()
    torch.autograd.gradcheck(lambda u: softmax_attention(Z, Q, u, V, chunk_size=3), (U,))


def test_heads(rng):
    Z = torch.tensor(rng.normal(size=(4, 10, 2)))
    Q = torch.tensor(rng.normal(size=(4, 3, 2)))
    h1 = AttentionHead(2, kind="softmax", rng=1)
    h2 = AttentionHead(2, kind="linear", rng=2)
    torch.testing.assert_close(h1(Z, Q), softmax_attention(Z, Q, h1.U, h1.V))
    torch.testing.assert_close(h2(Z, Q), linear_attention(Z, Q, h2.U, h2.V))
    # same seed, same initialisation, and no global RNG touched
    state = torch.random.get_rng_state()
    torch.testing.assert_close(AttentionHead(2, rng=1).U, h1.U)
    assert torch.equal(state, torch.random.get_rng_state())


@pytest.mark.parametrize(
    "args, name",
    [
        ((np.zeros((5, 2)), np.zeros((3, 3)), np.eye(2), np.eye(2)), "queries"),
        ((np.zeros(5), np.zeros((3, 2)), np.eye(2), np.eye(2)), "tokens"),
        ((np.zeros((5, 2)), np.zeros((3, 2)), np.eye(3), np.eye(2)), "U"),
        ((np.zeros((5, 2)), np.zeros((3, 2)), np.eye(2), np.eye(3)), "V"),
        ((np.full((5, 2), np.nan), np.zeros((3, 2)), np.eye(2), np.eye(2)), "tokens"),
        ((np.zeros((5, 2)), np.zeros((3, 2)), np.full((2, 2), np.inf), np.eye(2)), "U"),
        ((np.zeros((2, 5, 2)), np.zeros((3, 3, 2)), np.eye(2), np.eye(2)), "batch"),
        ((np.zeros((0, 2)), np.zeros((3, 2)), np.eye(2), np.eye(2)), "tokens"),
    ],
)
@pytest.mark.parametrize("fn", [softmax_attention, linear_attention])
def test_bad_input_names_the_argument(fn, args, name):
    with pytest.raises(ValueError, match=name):
        fn(*args)


def test_bad_types():
    with pytest.raises(TypeError, match="tokens"):
        softmax_attention("abc", np.zeros((1, 2)), np.eye(2), np.eye(2))
    with pytest.raises(ValueError, match="chunk_size"):
        softmax_attention(np.zeros((3, 2)), np.zeros((1, 2)), np.eye(2), np.eye(2), chunk_size=0)
    with pytest.raises(ValueError, match="kind"):
        AttentionHead(2, kind="cosine")


def test_path_matches_prefixes(rng):
    from gmmlib.attention import softmax_attention_path

    Z, Q = rng.normal(size=(500, 2)), rng.normal(size=(3, 2))
    U, V = 2.0 * rng.normal(size=(2, 2)), rng.normal(size=(1, 2))
    lengths = np.array([1, 7, 100, 500])
    path = softmax_attention_path(Z, Q, U, V, lengths)
    for i, L in enumerate(lengths):
        np.testing.assert_allclose(path[i], softmax_attention(Z[:L], Q, U, V), rtol=1e-10)
    with pytest.raises(ValueError, match="lengths"):
        softmax_attention_path(Z, Q, U, V, np.array([0, 3]))


def test_prompt_batch_is_the_samplers_return_type():
    from gmmlib.regression import RegressionBatch, sample_prompts

    batch = sample_prompts(np.eye(2), n_prompts=3, length=4, rng=0)
    assert isinstance(batch, PromptBatch) and isinstance(batch, RegressionBatch)
    assert (
        batch.tokens.shape == (3, 4, 3)
        and batch.queries.shape == (3, 1, 3)
        and batch.w.shape == (3, 2)
    )


def test_attention_head_is_the_trainable_twin_of_head():
    rng = np.random.default_rng(4)
    head = Head(rng.normal(size=(3, 3)), rng.normal(size=(2, 3)))
    twin = AttentionHead.from_head(head, kind="linear")
    assert twin.kind == "linear" and isinstance(twin.head(), Head)
    np.testing.assert_array_equal(twin.head().U, head.U)
    np.testing.assert_array_equal(twin.head().V, head.V)
    Z, Q = rng.normal(size=(5, 3)), rng.normal(size=(2, 3))
    out = twin(torch.tensor(Z), torch.tensor(Q)).detach().numpy()
    np.testing.assert_allclose(out, linear_attention(Z, Q, *head), rtol=1e-12)
    with pytest.raises(TypeError, match="head"):
        AttentionHead.from_head((head.U, head.V))


def test_numpy_modules_do_not_import_torch():
    """Only the training side imports torch (1.5 s of every chapter that does): the rest of gmmlib,
    finite-prompt attention on numpy inputs included, runs without it."""
    torch_side = {"gmmlib.training", "gmmlib.lda.autograd", "gmmlib.lda_torch",
                  "gmmlib.attention_torch"}
    modules = sorted(
        m.name for m in pkgutil.walk_packages(gmmlib.__path__, "gmmlib.")
        if m.name not in torch_side
    )
    assert {"gmmlib.lda.task", "gmmlib.denoising.heads", "gmmlib.runtime.checks"} <= set(modules)
    code = (
        "import sys, numpy as np\n"
        + "".join(f"import {m}\n" for m in modules)
        + "from gmmlib import softmax_attention, linear_attention\n"
        + "z = np.ones((3, 2)); softmax_attention(z, z, np.eye(2), np.eye(2))\n"
        + "linear_attention(z, z, np.eye(2), np.eye(2))\n"
        + "print('torch' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False", f"a numpy-side module of gmmlib imports torch: {modules}"
    assert AttentionHead.__module__ == "gmmlib.attention_torch"  # defined where documented
    assert not hasattr(gmmlib.attention, "AttentionHead")


@settings(max_examples=30, deadline=None)
@given(
    seed=seeds,
    batched=st.booleans(),
    chunk=st.integers(1, 12),
    scale=st.sampled_from([1.0, 30.0, 1e200]),
)
def test_numpy_and_torch_are_one_formula(seed, batched, chunk, scale):
    """The same inputs as numpy arrays and as tensors give the same attention (streamed in chunks,
    queries shared across a batch, and tilts beyond the float range)."""
    rng = np.random.default_rng(seed)
    Z = rng.normal(size=(3, 11, 2) if batched else (11, 2))
    Q, U, V = rng.normal(size=(4, 2)), scale * rng.normal(size=(2, 2)), rng.normal(size=(3, 2))
    for fn in (softmax_attention, linear_attention):
        kw = {"chunk_size": chunk} if fn is softmax_attention else {}
        if fn is linear_attention and scale > 1e100:
            # its output overflows: refused (numpy) or inf (torch), as test_extremes checks
            continue
        ours = fn(Z, Q, U, V, **kw)
        theirs = fn(*(torch.from_numpy(np.array(x)) for x in (Z, Q, U, V)), **kw)
        np.testing.assert_allclose(
            theirs.numpy(), ours, rtol=1e-12, atol=1e-12 * (1 + np.abs(ours).max())
        )


def test_attention_head_draws_its_start_from_rng():
    """``rng`` is an int seed (torch's generator, as before) or a numpy Generator that draws it."""
    a = AttentionHead(3, rng=np.random.default_rng(11))
    b = AttentionHead(3, rng=np.random.default_rng(11))
    torch.testing.assert_close(a.U, b.U)
    assert not torch.equal(a.U, AttentionHead(3, rng=np.random.default_rng(12)).U)
    torch.testing.assert_close(AttentionHead(3, rng=5).V, AttentionHead(3, rng=np.int64(5)).V)
    with pytest.raises(ValueError, match="rng"):
        AttentionHead(3, rng=-1)
    with pytest.raises(TypeError, match="rng"):
        AttentionHead(3, rng="seed")
