r"""Query-dependent selection on mixtures: the alignment decomposition, and the label-readout tasks.

Chapter 3 (softmax-gated affine experts) and Chapter 7 (selection beyond linear rules)
use this module; the closed-form accuracies of classification rules that Chapter 7 compares
the readout with are in :mod:`gmmlib.classification`.

**Gated experts.** For :math:`\mu = \sum_k\pi_k\mu_k` and any positive alignment
:math:`a(z, z') = e^{\ell(z, z')}`, the generalised attention

.. math::

    T_a[\mu](z) = \frac{\int a(z,z')\,Vz'\,d\mu(z')}{\int a(z,z')\,d\mu(z')}
    = \sum_k r_k(z)\,T_a[\mu_k](z), \qquad
    r_k(z) = \frac{\pi_k\int a(z,\cdot)\,d\mu_k}{\sum_j\pi_j\int a(z,\cdot)\,d\mu_j},

is a query-dependent convex combination of the per-component attentions
(:prf:ref:`prop-03-alignment` of Chapter 3, which is Proposition A.1 of Gabet, Boursier and Boyer
2026; :func:`alignment_attention_limit`). Softmax attention is :math:`\ell(z,z') = z'^\top Uz`; with
a shared covariance its limit is :math:`V\Gamma Uz + V\sum_k\alpha_k(z)m_k`
(:func:`gmmlib.limits.shared_covariance_limit`). Linear attention mixes with the fixed :math:`\pi_k`
(:func:`gmmlib.limits.component_linear_limits`).

**Classification tasks** (Chapter 7). A class-conditional mixture
:math:`x\mid k\sim\mathcal N(m_k,\Gamma_k)`, :math:`P(k) = \pi_k`, and a label vector
:math:`y_k\in\mathbb R^q` per component give tokens :math:`(x, y_k)\in\mathbb R^{d+q}` whose law
is the degenerate mixture :func:`token_mixture`. One-hot labels (:math:`y_k = e_k`) give the
multi-class task; four components at :math:`(\pm\ell, \pm\ell)` with
:math:`y_k = \operatorname{sign}(m_{k,1}m_{k,2})` give XOR (:func:`xor_task`). Queries are
:math:`(x, 0)`; the prediction is the label block of the output (:func:`decide`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

import numpy as np
from scipy.special import logsumexp, ndtr, softmax

from ._validation import (
    as_float_array,
    check_covariances,
    check_positive,
    check_queries,
    check_rng,
    check_V,
)
from .attention import Head, PromptBatch
from .mixtures import GaussianMixture, check_mixture
from .quadrature import gauss_hermite

__all__ = [
    "LogAlignment",
    "AlignmentDecomposition",
    "LabelledPromptBatch",
    "softmax_log_alignment",
    "gaussian_kernel_log_alignment",
    "alignment_attention",
    "alignment_attention_limit",
    "token_mixture",
    "onehot_task",
    "XOR_OFFSET",
    "XOR_GAMMA",
    "xor_task",
    "xor_posterior_mean",
    "xor_bayes_accuracy",
    "readout_construction",
    "sample_prompts",
    "decide",
    "TIE",
]

#: A log-alignment :math:`\ell(z, z')`: maps queries (n, d) and keys (N, d) to an (n, N) array.
LogAlignment = Callable[[np.ndarray, np.ndarray], np.ndarray]


# --------------------------------------------------------------------------- alignments
def softmax_log_alignment(U: Any) -> LogAlignment:
    r"""The softmax alignment :math:`\ell(z, z') = z'^\top U z` (``U`` of shape (d, d)).

    With it, :prf:ref:`prop-03-alignment` (Chapter 3) reduces to :prf:ref:`thm-03-gated-experts`:
    the responsibilities are the gates :math:`\alpha_k(z)`.
    """
    U = as_float_array(U, "U", ndim=2)
    if U.shape[0] != U.shape[1]:
        raise ValueError(f"U must be square, got shape {U.shape}")

    def ell(Q: np.ndarray, K: np.ndarray) -> np.ndarray:
        return (Q @ U.T) @ K.T

    return ell


def gaussian_kernel_log_alignment(noise_std: float) -> LogAlignment:
    r"""The Gaussian-kernel alignment :math:`\ell(z, z') = -\|z - z'\|^2/(2\xi^2)` (``noise_std`` =
    :math:`\xi > 0`).

    Attention with this alignment is the Nadaraya–Watson kernel smoother of bandwidth :math:`\xi`.
    Since :math:`e^{\ell(z,z')}\propto\mathcal N(z; z', \xi^2 I)`, its limit on a prompt law
    :math:`\mu` is :math:`\mathbb E[X\mid X + \xi\varepsilon = z]`, the Bayes denoiser at noise
    standard deviation :math:`\xi` (Chapter 3, after :prf:ref:`prop-03-alignment`; Chapter 8): the
    kernel's bandwidth *is* the noise level :math:`\xi` of the denoising chapters.
    """
    check_positive(noise_std, "noise_std")
    xi2 = float(noise_std) ** 2

    def ell(Q: np.ndarray, K: np.ndarray) -> np.ndarray:
        sq = np.sum(Q**2, axis=1)[:, None] + np.sum(K**2, axis=1)[None, :] - 2.0 * Q @ K.T
        return -np.maximum(sq, 0.0) / (2.0 * xi2)

    return ell


def _check_alignment(log_alignment: Any) -> LogAlignment:
    if not callable(log_alignment):
        raise TypeError(
            "log_alignment must be callable (queries, keys) -> (n, N), "
            f"got {type(log_alignment).__name__}"
        )
    return log_alignment


def _eval_alignment(log_alignment: LogAlignment, Q: np.ndarray, K: np.ndarray) -> np.ndarray:
    out = np.asarray(log_alignment(Q, K), dtype=np.float64)
    if out.shape != (Q.shape[0], K.shape[0]):
        raise ValueError(
            f"log_alignment must return shape (n, N) = {(Q.shape[0], K.shape[0])}, got {out.shape}"
        )
    if np.any(np.isnan(out)) or np.any(out == np.inf):
        raise ValueError("log_alignment returned NaN or +inf")
    return out


def alignment_attention(
    tokens: Any, queries: Any, log_alignment: LogAlignment, V: Any
) -> np.ndarray:
    r"""Finite-prompt attention with a positive alignment :math:`a = e^{\ell}`: eq.
    :eq:`eq-03-alignment-attention` on :math:`\hat\mu_L`.

    .. math::

        T_a[\hat\mu_L](z) = \frac{\sum_{j} e^{\ell(z, z_j)}\,Vz_j}{\sum_j e^{\ell(z, z_j)}},

    with the weights normalised by log-sum-exp (finite for any scale of :math:`\ell`).

    Parameters
    ----------
    tokens : array_like, shape (L, d)
    queries : array_like, shape (n, d) or (d,)
    log_alignment : callable
        :math:`\ell`, mapping (n, d) queries and (N, d) keys to an (n, N) array.
    V : array_like, shape (p, d)

    Returns
    -------
    ndarray, shape (n, p) (or (p,) for one query)
    """
    Z = as_float_array(tokens, "tokens", ndim=2)
    if Z.shape[0] == 0:
        raise ValueError("tokens must hold at least one token (L >= 1)")
    Q, single = check_queries(queries, Z.shape[1])
    V = check_V(V, Z.shape[1])
    log_alignment = _check_alignment(log_alignment)
    S = _eval_alignment(log_alignment, Q, Z)
    W = np.exp(S - logsumexp(S, axis=1, keepdims=True))
    out = (W @ Z) @ V.T
    return out[0] if single else out


class AlignmentDecomposition(NamedTuple):
    r"""The mixture decomposition :math:`T_a[\mu](z) = \sum_k r_k(z)\,T_a[\mu_k](z)` (eq.
    :eq:`eq-03-alignment-decomposition`).

    Fields: ``output`` (n, p), the attention :math:`T_a[\mu](z)`; ``responsibilities`` (n, K),
    the query-dependent weights :math:`r_k(z)\propto\pi_k\int a(z,\cdot)\,d\mu_k`; and
    ``component_outputs`` (n, K, p), the per-component attentions :math:`T_a[\mu_k](z)`.
    """

    output: np.ndarray
    responsibilities: np.ndarray
    component_outputs: np.ndarray


def alignment_attention_limit(
    mixture: GaussianMixture,
    queries: Any,
    log_alignment: LogAlignment,
    V: Any,
    *,
    n_points: int = 40,
) -> AlignmentDecomposition:
    r"""Infinite-prompt attention with alignment :math:`a = e^{\ell}`, decomposed over the
    components.

    Implements :prf:ref:`prop-03-alignment` (Chapter 3), eq. :eq:`eq-03-alignment-decomposition`,
    for Gaussian components. For each :math:`\mu_k = \mathcal N(m_k, \Gamma_k)`, Gauss–Hermite
    quadrature (``n_points`` per direction, nodes :math:`x_{k,i}`, weights :math:`w_i`) gives

    .. math::

        \log A_k(z) = \log\sum_i w_i e^{\ell(z, x_{k,i})} \approx \log\int a(z,\cdot)\,d\mu_k,\qquad
        T_a[\mu_k](z) = V\frac{\sum_i w_i e^{\ell(z,x_{k,i})}x_{k,i}}{\sum_i w_i
        e^{\ell(z,x_{k,i})}},

    then :math:`r_k(z) = \operatorname{softmax}_k(\log\pi_k + \log A_k(z))` and
    :math:`T_a[\mu](z) = \sum_k r_k(z)\,T_a[\mu_k](z)`. The rule is accurate when
    :math:`a(z,\cdot)` is smooth on the scale of each component (moderate alignments);
    the cost is :math:`K\cdot n\cdot\text{n\_points}^d`, so keep :math:`d` small.

    Returns
    -------
    AlignmentDecomposition
        ``output`` (n, p), ``responsibilities`` (n, K), ``component_outputs`` (n, K, p).
    """
    mixture = check_mixture(mixture)
    Q, _ = check_queries(queries, mixture.dim)
    V = check_V(V, mixture.dim)
    log_alignment = _check_alignment(log_alignment)
    nodes01, w = gauss_hermite(n_points, mixture.dim)
    logw = np.log(w)
    with np.errstate(divide="ignore"):
        logpi = np.log(mixture.weights)
    log_A, comp = [], []
    for m, c in zip(mixture.means, mixture.covs):
        eig, vec = np.linalg.eigh(c)
        nodes = m + nodes01 @ (vec * np.sqrt(np.clip(eig, 0.0, None))).T
        S = _eval_alignment(log_alignment, Q, nodes) + logw[None, :]
        lse = logsumexp(S, axis=1, keepdims=True)
        log_A.append(lse[:, 0])
        comp.append((np.exp(S - lse) @ nodes) @ V.T)
    log_A = np.stack(log_A, axis=1)  # (n, K)
    comp = np.stack(comp, axis=1)  # (n, K, p)
    r = softmax(logpi[None, :] + log_A, axis=1)
    return AlignmentDecomposition(np.einsum("nk,nkp->np", r, comp), r, comp)


# --------------------------------------------------------------------------- tasks
def token_mixture(x_mixture: GaussianMixture, label_vectors: Any) -> GaussianMixture:
    r"""The law of the tokens :math:`(x, y_k)`: eq. :eq:`eq-07-token-mixture` of Chapter 7.

    Components :math:`\mathcal N\big((m_k, y_k), \operatorname{diag}(\Gamma_k, 0)\big)`.

    Parameters
    ----------
    x_mixture : GaussianMixture
        The law of :math:`x`, one component per label value.
    label_vectors : array_like, shape (K, q)
        The label block :math:`y_k` carried by the tokens of component :math:`k`.

    Returns
    -------
    GaussianMixture
        On :math:`\mathbb R^{d+q}`, with degenerate (PSD) covariances.
    """
    x_mixture = check_mixture(x_mixture, "x_mixture")
    C = as_float_array(label_vectors, "label_vectors", ndim=2)
    K, d = x_mixture.n_components, x_mixture.dim
    if C.shape[0] != K:
        raise ValueError(
            f"label_vectors must have shape ({K}, q), one row per component, got {C.shape}"
        )
    q = C.shape[1]
    covs = np.zeros((K, d + q, d + q))
    covs[:, :d, :d] = x_mixture.covs
    return GaussianMixture(x_mixture.weights.copy(), np.hstack([x_mixture.means, C]), covs)


def onehot_task(weights: Any, means: Any, cov: Any) -> tuple[GaussianMixture, np.ndarray]:
    r"""The multi-class task of Chapter 7: :math:`x\mid k\sim\mathcal N(m_k,\Gamma)`, :math:`P(k) =
    \pi_k`, labels :math:`y_k = e_k`.

    Returns
    -------
    x_mixture : GaussianMixture
    label_vectors : ndarray, shape (K, K)
        The identity (one-hot labels).
    """
    m = as_float_array(means, "means", ndim=2)
    G = as_float_array(cov, "cov", ndim=2)
    if G.shape != (m.shape[1], m.shape[1]):
        raise ValueError(f"cov must have shape ({m.shape[1]}, {m.shape[1]}), got {G.shape}")
    K = m.shape[0]
    gm = GaussianMixture(weights, m, np.broadcast_to(G, (K, *G.shape)).copy())
    return gm, np.eye(K)


#: XOR's default offset :math:`\ell` and component standard deviation :math:`\gamma` (Chapter 7).
XOR_OFFSET, XOR_GAMMA = 2.0, 0.5**0.5


def xor_task(
    offset: float = XOR_OFFSET, gamma: float = XOR_GAMMA
) -> tuple[GaussianMixture, np.ndarray]:
    r"""XOR (Chapter 7): four equally likely components
    :math:`\mathcal N((\pm\ell, \pm\ell), \gamma^2 I)`,
    label :math:`\operatorname{sign}(m_{k,1}m_{k,2})`.

    ``offset`` is :math:`\ell` and ``gamma`` the components' standard deviation :math:`\gamma`
    (default :math:`\gamma^2 = 1/2`). Components are ordered :math:`(\ell,\ell), (-\ell,\ell),
    (-\ell,-\ell), (\ell,-\ell)` with labels :math:`+1, -1, +1, -1`.

    Returns
    -------
    x_mixture : GaussianMixture
    label_vectors : ndarray, shape (4, 1)
    """
    check_positive(offset, "offset")
    check_positive(gamma, "gamma")
    s = float(offset)
    means = np.array([[s, s], [-s, s], [-s, -s], [s, -s]])
    gm = GaussianMixture.isotropic(np.full(4, 0.25), means, float(gamma) ** 2)
    return gm, np.array([[1.0], [-1.0], [1.0], [-1.0]])


def xor_posterior_mean(X: Any, offset: float = XOR_OFFSET, gamma: float = XOR_GAMMA) -> np.ndarray:
    r"""The Bayes score of XOR, eq. :eq:`eq-07-xor-bayes` of Chapter 7: :math:`\mathbb E[Y\mid x] =
    \tanh(\ell x_1/\gamma^2)\,\tanh(\ell x_2/\gamma^2)`.

    (The coordinates are independent given the component, and :math:`P(m_{k,i} = \ell\mid x_i) =
    \sigma(2\ell x_i/\gamma^2)`, so
    :math:`\mathbb E[\operatorname{sign} m_{k,i}\mid x_i] = \tanh(\ell x_i/\gamma^2)`;
    :prf:ref:`prop-07-xor-bayes`.)

    Parameters
    ----------
    X : array_like, shape (n, 2)
    offset, gamma : float
        :math:`\ell` and :math:`\gamma` of :func:`xor_task`.
    """
    check_positive(offset, "offset")
    check_positive(gamma, "gamma")
    X = as_float_array(X, "X", ndim=2)
    if X.shape[1] != 2:
        raise ValueError(f"X must have shape (n, 2), got {X.shape}")
    c = float(offset) / float(gamma) ** 2
    return np.tanh(c * X[:, 0]) * np.tanh(c * X[:, 1])


def xor_bayes_accuracy(offset: float = XOR_OFFSET, gamma: float = XOR_GAMMA) -> float:
    r"""The Bayes accuracy of XOR, eq. :eq:`eq-07-xor-bayes`: :math:`\Phi(\ell/\gamma)^2 +
    \Phi(-\ell/\gamma)^2 = 1 - 2\Phi(\ell/\gamma)\Phi(-\ell/\gamma)`.

    The Bayes rule is :math:`\operatorname{sign}(x_1x_2)`; it is right when both coordinates fall on
    the side of their component's mean, or both on the wrong side (:prf:ref:`prop-07-xor-bayes`,
    Chapter 7).
    """
    check_positive(offset, "offset")
    check_positive(gamma, "gamma")
    t = float(offset) / float(gamma)
    return float(ndtr(t) ** 2 + ndtr(-t) ** 2)


def readout_construction(cov: Any, label_dim: int, omega: float = 1.0) -> Head:
    r"""The label-readout head of :prf:ref:`thm-07-label-readout` (Chapter 7), eq.
    :eq:`eq-07-construction`.

    :math:`U = \operatorname{diag}(\omega\,\Gamma^{-1}, 0)`, :math:`V = [0\;|\;I_q]`; with
    :math:`\omega = 1` the readout is the Bayes posterior mean of the label when the means have
    equal Mahalanobis norms.

    Parameters
    ----------
    cov : array_like, shape (d, d)
        The shared covariance :math:`\Gamma` (positive definite).
    label_dim : int
        :math:`q`, the size of the label block.
    omega : float
        The scale :math:`\omega > 0` of :math:`U` (:ref:`ex-07-scale`).

    Returns
    -------
    Head
        ``U`` of shape (d + q, d + q) and ``V`` of shape (q, d + q).
    """
    G = check_covariances(cov, "cov", definite=True)
    if G.ndim != 2:
        raise ValueError(f"cov must be one (d, d) matrix, got shape {G.shape}")
    check_positive(label_dim, "label_dim", integer=True)
    check_positive(omega, "omega")
    Gi = np.linalg.inv(np.linalg.cholesky(G))
    d, q = G.shape[0], int(label_dim)
    U = np.zeros((d + q, d + q))
    U[:d, :d] = float(omega) * (Gi.T @ Gi)
    V = np.hstack([np.zeros((q, d)), np.eye(q)])
    return Head(U, V)


@dataclass(frozen=True)
class LabelledPromptBatch(PromptBatch):
    r"""Labelled classification prompts (Chapter 7): a :class:`~gmmlib.attention.PromptBatch` with
    the queries' components.

    Attributes
    ----------
    tokens : shape (n_prompts, length, d + q)
        Rows :math:`(x_j, y_{k_j})`.
    queries : shape (n_prompts, n_queries, d + q)
        Rows :math:`(x, 0)`.
    targets : shape (n_prompts, n_queries, q)
        The label vector :math:`y_k` of each query's component (what the readout should return).
    components : ndarray of int, shape (n_prompts, n_queries)
        The component (class) :math:`k` of each query.
    """

    components: np.ndarray


def sample_prompts(
    x_mixture: GaussianMixture,
    label_vectors: Any,
    *,
    n_prompts: int,
    length: int,
    n_queries: int,
    rng: Any,
    as_torch: bool = False,
) -> LabelledPromptBatch:
    r"""Draw ``n_prompts`` prompts of ``length`` labelled tokens and ``n_queries`` fresh queries
    each.

    Tokens are :math:`(x_j, y_{k_j})` with :math:`k_j\sim\pi` and :math:`x_j\sim\mathcal
    N(m_{k_j},\Gamma_{k_j})` i.i.d., i.e. draws from :func:`token_mixture` (eq.
    :eq:`eq-07-token-mixture`, Chapter 7); queries are :math:`(x, 0)` with :math:`x` drawn from the
    same mixture, independently of the prompt.

    Parameters
    ----------
    x_mixture : GaussianMixture
    label_vectors : array_like, shape (K, q)
    n_prompts, length, n_queries : int
    rng : numpy Generator or int seed
    as_torch : bool
        Return ``tokens``, ``queries`` and ``targets`` as float64 torch tensors (for training).

    Returns
    -------
    LabelledPromptBatch
    """
    x_mixture = check_mixture(x_mixture, "x_mixture")
    C = as_float_array(label_vectors, "label_vectors", ndim=2)
    if C.shape[0] != x_mixture.n_components:
        raise ValueError(f"label_vectors must have {x_mixture.n_components} rows, got {C.shape}")
    for v, name in ((n_prompts, "n_prompts"), (length, "length"), (n_queries, "n_queries")):
        check_positive(v, name, integer=True)
    rng = check_rng(rng)
    B, L, n = int(n_prompts), int(length), int(n_queries)
    X, k = x_mixture.sample(B * L, rng)
    tokens = np.concatenate([X, C[k]], axis=1).reshape(B, L, -1)
    Xq, kq = x_mixture.sample(B * n, rng)
    queries = np.concatenate([Xq, np.zeros((B * n, C.shape[1]))], axis=1).reshape(B, n, -1)
    kq = kq.reshape(B, n)
    targets = C[kq]
    if as_torch:
        import torch  # only the training side needs it

        tokens, queries, targets = (
            torch.from_numpy(np.ascontiguousarray(a)) for a in (tokens, queries, targets)
        )
    return LabelledPromptBatch(tokens, queries, targets, kq)


#: The decision :func:`decide` returns on a tie: no class (it never equals a true class).
TIE = -1


def decide(readout: Any) -> np.ndarray:
    r"""The decision read off a label readout (Chapter 7): :math:`\operatorname{sign}` for a scalar
    label, :math:`\arg\max_k` otherwise.

    **Ties count as errors.** A scalar readout of exactly 0 gives the decision 0, which is no label;
    a vector readout whose largest entry is attained more than once gives :data:`TIE` (``-1``),
    which is no class. So a head whose readout is constant across the classes (``W = 0``, or equal
    rows) decides nothing and scores 0, in agreement with
    :func:`gmmlib.classification.linear_rule_accuracy` and :prf:ref:`prop-07-linear-ceiling`,
    instead of answering class 0 everywhere.

    Parameters
    ----------
    readout : array_like, shape (..., q)
        Label readouts (or the label vectors themselves, which gives the true classes).

    Returns
    -------
    ndarray, shape (...)
        :math:`\operatorname{sign}(\text{readout})\in\{-1, 0, 1\}` when :math:`q = 1`, else the
        index of the largest entry, or :data:`TIE` where it is not unique.
    """
    R = (
        readout.detach().cpu().numpy()
        if hasattr(readout, "detach")
        else np.asarray(readout, dtype=float)
    )
    if R.ndim < 1 or R.shape[-1] < 1:
        raise ValueError(f"readout must have a last axis of size q >= 1, got shape {R.shape}")
    if R.shape[-1] == 1:
        return np.sign(R[..., 0])
    top = np.max(R, axis=-1, keepdims=True)
    tied = np.sum(R == top, axis=-1) > 1
    return np.where(tied, TIE, np.argmax(R, axis=-1))
