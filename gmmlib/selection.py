r"""Query-dependent selection on mixtures: gated experts, alignment decompositions, and two tasks.

Chapter 3 (softmax-gated affine experts) and Chapter 7 (selection beyond linear rules)
use this module.

**Gated experts.** For :math:`\mu = \sum_k\pi_k\mu_k` and any positive alignment
:math:`a(z, z') = e^{\ell(z, z')}`, the generalised attention

.. math::

    T_a[\mu](z) = \frac{\int a(z,z')\,Vz'\,d\mu(z')}{\int a(z,z')\,d\mu(z')}
    = \sum_k r_k(z)\,T_a[\mu_k](z), \qquad
    r_k(z) = \frac{\pi_k\int a(z,\cdot)\,d\mu_k}{\sum_j\pi_j\int a(z,\cdot)\,d\mu_j},

is a query-dependent convex combination of the per-component attentions
(Proposition prop-03-alignment of Chapter 3, which is Proposition A.1 of Gabet, Boursier
and Boyer 2026; :func:`alignment_attention_limit`). Softmax attention is
:math:`\ell(z,z') = z'^\top Uz`; with a shared covariance its limit is
:math:`V\Gamma Uz + V\sum_k\alpha_k(z)m_k` (:func:`gmmlib.limits.shared_covariance_limit`).
Linear attention mixes with the fixed :math:`\pi_k` (:func:`gmmlib.limits.component_linear_limits`).

**Classification tasks** (Chapter 7). A class-conditional mixture
:math:`x\mid k\sim\mathcal N(m_k,\Gamma_k)`, :math:`P(k) = \pi_k`, and a label vector
:math:`y_k\in\mathbb R^q` per component give tokens :math:`(x, y_k)\in\mathbb R^{d+q}` whose law
is the degenerate mixture :func:`token_mixture`. One-hot labels (:math:`y_k = e_k`) give the
multi-class task; four components at :math:`(\pm\nu, \pm\nu)` with
:math:`y_k = \operatorname{sign}(m_{k,1}m_{k,2})` give XOR (:func:`xor_task`). Queries are
:math:`(x, 0)`; the prediction is the label block of the output (:func:`decide`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, NamedTuple

import numpy as np
import torch
from scipy.special import logsumexp, softmax
from scipy.stats import multivariate_normal, norm

from .mixtures import check_mixture
from ._validation import as_float_array, check_positive, check_queries, check_rng, check_V
from .attention import Head, PromptBatch
from .mixtures import GaussianMixture
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
    "xor_task",
    "readout_construction",
    "sample_prompts",
    "decide",
    "TIE",
    "sector_probability",
    "ConeRule",
    "best_cone_rule",
    "bayes_scores",
    "linear_rule_accuracy",
    "sign_rule_accuracy",
    "xor_posterior_mean",
    "xor_bayes_accuracy",
]

#: A log-alignment :math:`\ell(z, z')`: maps queries (n, d) and keys (N, d) to an (n, N) array.
LogAlignment = Callable[[np.ndarray, np.ndarray], np.ndarray]


# --------------------------------------------------------------------------- alignments
def softmax_log_alignment(U: Any) -> LogAlignment:
    r"""The softmax alignment :math:`\ell(z, z') = z'^\top U z` (``U`` of shape (d, d)).

    With it, Proposition prop-03-alignment (Chapter 3) reduces to Theorem
    thm-03-gated-experts: the responsibilities are the gates :math:`\alpha_k(z)`.
    """
    U = as_float_array(U, "U", ndim=2)
    if U.shape[0] != U.shape[1]:
        raise ValueError(f"U must be square, got shape {U.shape}")

    def ell(Q: np.ndarray, K: np.ndarray) -> np.ndarray:
        return (Q @ U.T) @ K.T

    return ell


def gaussian_kernel_log_alignment(noise_std: float) -> LogAlignment:
    r"""The Gaussian-kernel alignment :math:`\ell(z, z') = -\|z - z'\|^2/(2\xi^2)` (``noise_std`` = :math:`\xi > 0`).

    Attention with this alignment is the Nadaraya–Watson kernel smoother of bandwidth
    :math:`\xi`. Since :math:`e^{\ell(z,z')}\propto\mathcal N(z; z', \xi^2 I)`, its limit on a prompt
    law :math:`\mu` is :math:`\mathbb E[X\mid X + \xi\varepsilon = z]`, the Bayes denoiser at noise
    standard deviation :math:`\xi` (Chapter 3, after Proposition prop-03-alignment; Chapter 8):
    the kernel's bandwidth *is* the noise level :math:`\xi` of the denoising chapters.
    """
    check_positive(noise_std, "noise_std")
    xi2 = float(noise_std) ** 2

    def ell(Q: np.ndarray, K: np.ndarray) -> np.ndarray:
        sq = np.sum(Q**2, axis=1)[:, None] + np.sum(K**2, axis=1)[None, :] - 2.0 * Q @ K.T
        return -np.maximum(sq, 0.0) / (2.0 * xi2)

    return ell


def _check_alignment(log_alignment: Any) -> LogAlignment:
    if not callable(log_alignment):
        raise TypeError(f"log_alignment must be callable (queries, keys) -> (n, N), got {type(log_alignment).__name__}")
    return log_alignment


def _eval_alignment(log_alignment: LogAlignment, Q: np.ndarray, K: np.ndarray) -> np.ndarray:
    out = np.asarray(log_alignment(Q, K), dtype=np.float64)
    if out.shape != (Q.shape[0], K.shape[0]):
        raise ValueError(f"log_alignment must return shape (n, N) = {(Q.shape[0], K.shape[0])}, got {out.shape}")
    if np.any(np.isnan(out)) or np.any(out == np.inf):
        raise ValueError("log_alignment returned NaN or +inf")
    return out


def alignment_attention(tokens: Any, queries: Any, log_alignment: LogAlignment, V: Any) -> np.ndarray:
    r"""Finite-prompt attention with a positive alignment :math:`a = e^{\ell}`: eq. (eq-03-alignment-attention) on :math:`\hat\mu_L`.

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
    r"""The mixture decomposition :math:`T_a[\mu](z) = \sum_k r_k(z)\,T_a[\mu_k](z)` (eq. eq-03-alignment-decomposition).

    Fields: ``output`` (n, p), the attention :math:`T_a[\mu](z)`; ``responsibilities`` (n, K),
    the query-dependent weights :math:`r_k(z)\propto\pi_k\int a(z,\cdot)\,d\mu_k`; and
    ``component_outputs`` (n, K, p), the per-component attentions :math:`T_a[\mu_k](z)`.
    """

    output: np.ndarray
    responsibilities: np.ndarray
    component_outputs: np.ndarray


def alignment_attention_limit(
    mixture: GaussianMixture, queries: Any, log_alignment: LogAlignment, V: Any, *, n_points: int = 40
) -> AlignmentDecomposition:
    r"""Infinite-prompt attention with alignment :math:`a = e^{\ell}`, decomposed over the components.

    Implements Proposition prop-03-alignment (Chapter 3), eq. (eq-03-alignment-decomposition),
    for Gaussian components. For each :math:`\mu_k = \mathcal N(m_k, \Gamma_k)`, Gauss–Hermite
    quadrature (``n_points`` per direction, nodes :math:`x_{k,i}`, weights :math:`w_i`) gives

    .. math::

        \log A_k(z) = \log\sum_i w_i e^{\ell(z, x_{k,i})} \approx \log\int a(z,\cdot)\,d\mu_k,\qquad
        T_a[\mu_k](z) = V\frac{\sum_i w_i e^{\ell(z,x_{k,i})}x_{k,i}}{\sum_i w_i e^{\ell(z,x_{k,i})}},

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
    r"""The law of the tokens :math:`(x, y_k)`: eq. (eq-07-token-mixture) of Chapter 7.

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
        raise ValueError(f"label_vectors must have shape ({K}, q), one row per component, got {C.shape}")
    q = C.shape[1]
    covs = np.zeros((K, d + q, d + q))
    covs[:, :d, :d] = x_mixture.covs
    return GaussianMixture(x_mixture.weights.copy(), np.hstack([x_mixture.means, C]), covs)


def onehot_task(weights: Any, means: Any, cov: Any) -> tuple[GaussianMixture, np.ndarray]:
    r"""The multi-class task of Chapter 7: :math:`x\mid k\sim\mathcal N(m_k,\Gamma)`, :math:`P(k) = \pi_k`, labels :math:`y_k = e_k`.

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


def xor_task(offset: float = 2.0, gamma: float = 0.5**0.5) -> tuple[GaussianMixture, np.ndarray]:
    r"""XOR (Chapter 7): four equally likely components :math:`\mathcal N((\pm\nu, \pm\nu), \gamma^2 I)`, label :math:`\operatorname{sign}(m_{k,1}m_{k,2})`.

    ``offset`` is :math:`\nu` and ``gamma`` the components' standard deviation :math:`\gamma`
    (default :math:`\gamma^2 = 1/2`). Components are ordered :math:`(\nu,\nu), (-\nu,\nu),
    (-\nu,-\nu), (\nu,-\nu)` with labels :math:`+1, -1, +1, -1`.

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


def readout_construction(cov: Any, label_dim: int, omega: float = 1.0) -> Head:
    r"""The label-readout head of Theorem thm-07-label-readout (Chapter 7), eq. (eq-07-construction).

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
        The scale :math:`\omega > 0` of :math:`U` (exercise ex-07-scale).

    Returns
    -------
    Head
        ``U`` of shape (d + q, d + q) and ``V`` of shape (q, d + q).
    """
    G = as_float_array(cov, "cov", ndim=2)
    if G.shape[0] != G.shape[1]:
        raise ValueError(f"cov must be square, got {G.shape}")
    check_positive(label_dim, "label_dim", integer=True)
    check_positive(omega, "omega")
    try:
        Gi = np.linalg.inv(np.linalg.cholesky(G))
    except np.linalg.LinAlgError:
        raise ValueError("cov must be positive definite") from None
    d, q = G.shape[0], int(label_dim)
    U = np.zeros((d + q, d + q))
    U[:d, :d] = float(omega) * (Gi.T @ Gi)
    V = np.hstack([np.zeros((q, d)), np.eye(q)])
    return Head(U, V)


@dataclass(frozen=True)
class LabelledPromptBatch(PromptBatch):
    r"""Labelled classification prompts (Chapter 7): a :class:`~gmmlib.attention.PromptBatch` with the queries' components.

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
    x_mixture: GaussianMixture, label_vectors: Any, *, n_prompts: int, length: int, n_queries: int, rng: Any,
    as_torch: bool = False,
) -> LabelledPromptBatch:
    r"""Draw ``n_prompts`` prompts of ``length`` labelled tokens and ``n_queries`` fresh queries each.

    Tokens are :math:`(x_j, y_{k_j})` with :math:`k_j\sim\pi` and
    :math:`x_j\sim\mathcal N(m_{k_j},\Gamma_{k_j})` i.i.d., i.e. draws from
    :func:`token_mixture` (eq. eq-07-token-mixture, Chapter 7); queries are :math:`(x, 0)` with
    :math:`x` drawn from the same mixture, independently of the prompt.

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
        tokens, queries, targets = (torch.from_numpy(np.ascontiguousarray(a)) for a in (tokens, queries, targets))
    return LabelledPromptBatch(tokens, queries, targets, kq)


#: The decision :func:`decide` returns on a tie: no class (it never equals a true class).
TIE = -1


def decide(readout: Any) -> np.ndarray:
    r"""The decision read off a label readout (Chapter 7): :math:`\operatorname{sign}` for a scalar label, :math:`\arg\max_k` otherwise.

    **Ties count as errors.** A scalar readout of exactly 0 gives the decision 0, which is no
    label; a vector readout whose largest entry is attained more than once gives
    :data:`TIE` (``-1``), which is no class. So a head whose readout is constant across the
    classes (``W = 0``, or equal rows) decides nothing and scores 0, in agreement with
    :func:`linear_rule_accuracy` and Proposition prop-07-linear-ceiling, instead of
    answering class 0 everywhere.

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
    R = readout.detach().cpu().numpy() if isinstance(readout, torch.Tensor) else np.asarray(readout, dtype=float)
    if R.ndim < 1 or R.shape[-1] < 1:
        raise ValueError(f"readout must have a last axis of size q >= 1, got shape {R.shape}")
    if R.shape[-1] == 1:
        return np.sign(R[..., 0])
    top = np.max(R, axis=-1, keepdims=True)
    tied = np.sum(R == top, axis=-1) > 1
    return np.where(tied, TIE, np.argmax(R, axis=-1))


# --------------------------------------------------------------------------- Bayes rules and accuracies
def bayes_scores(x_mixture: GaussianMixture) -> tuple[np.ndarray, np.ndarray]:
    r"""The Bayes (LDA) scores of Chapter 7 (before Proposition prop-07-linear-accuracy): :math:`w_k^\top x + b_k` with

    .. math::

        w_k = \Gamma^{-1}m_k,\qquad b_k = -\tfrac12 m_k^\top\Gamma^{-1}m_k + \log\pi_k,

    so that :math:`p(k\mid x) = \operatorname{softmax}_k (w_k^\top x + b_k)` for a shared covariance.

    Returns
    -------
    W : ndarray, shape (K, d)
    b : ndarray, shape (K,)
    """
    x_mixture = check_mixture(x_mixture, "x_mixture")
    G = x_mixture.covs[0]
    scale = max(1.0, float(np.max(np.abs(x_mixture.covs))))
    if np.max(np.abs(x_mixture.covs - G[None])) > 1e-12 * scale:
        raise ValueError("x_mixture must have one shared covariance for the linear Bayes scores")
    W = np.linalg.solve(G, x_mixture.means.T).T
    with np.errstate(divide="ignore"):
        b = -0.5 * np.sum(W * x_mixture.means, axis=1) + np.log(x_mixture.weights)
    return W, b


def linear_rule_accuracy(x_mixture: GaussianMixture, W: Any, b: Any | None = None, *,
                         abseps: float = 1e-9) -> float:
    r"""Accuracy of the rule :math:`\hat k(x) = \arg\max_k (w_k^\top x + b_k)`: Proposition prop-07-linear-accuracy (Chapter 7).

    Class :math:`k` is the component :math:`\mathcal N(m_k,\Gamma_k)`.

    Given class :math:`k`, the margins :math:`D_j = (w_k - w_j)^\top X + b_k - b_j`, :math:`j\ne k`,
    are jointly Gaussian with means :math:`(w_k - w_j)^\top m_k + b_k - b_j` and covariances
    :math:`(w_k - w_i)^\top\Gamma_k(w_k - w_j)`, so

    .. math::

        \mathrm{acc} = \sum_k \pi_k\,P(D_j > 0\ \forall j\ne k)

    is a sum of :math:`(K-1)`-variate normal orthant probabilities (the normal CDF for
    :math:`K = 2`; scipy's Genz algorithm with absolute error ``abseps`` for :math:`K > 2`).
    Degenerate margins (zero variance) count as correct when their mean is positive.
    """
    x_mixture = check_mixture(x_mixture, "x_mixture")
    K, d = x_mixture.n_components, x_mixture.dim
    W = as_float_array(W, "W", ndim=2)
    if W.shape != (K, d):
        raise ValueError(f"W must have shape ({K}, {d}), got {W.shape}")
    b = np.zeros(K) if b is None else as_float_array(b, "b", ndim=1)
    if b.shape != (K,):
        raise ValueError(f"b must have shape ({K},), got {b.shape}")
    if K == 1:
        return 1.0
    acc = 0.0
    for k in range(K):
        others = [j for j in range(K) if j != k]
        A = W[k][None, :] - W[others]  # (K-1, d)
        mean = A @ x_mixture.means[k] + b[k] - b[others]
        cov = A @ x_mixture.covs[k] @ A.T
        sd = np.sqrt(np.clip(np.diag(cov), 0.0, None))
        if np.any(sd <= 1e-14 * max(1.0, float(np.max(np.abs(mean))))):
            deg = sd <= 1e-14 * max(1.0, float(np.max(np.abs(mean))))
            if np.any(mean[deg] <= 0):
                continue  # some margin is never positive: class k is never chosen
            keep = ~deg
            if not np.any(keep):
                acc += x_mixture.weights[k]
                continue
            mean, cov, sd = mean[keep], cov[np.ix_(keep, keep)], sd[keep]
        z = mean / sd
        corr = cov / np.outer(sd, sd)
        if z.size == 1:
            p = float(norm.cdf(z[0]))
        else:
            # P(D > 0) = P(-D/sd < z) = CDF of N(0, corr) at z.
            # Genz's algorithm is randomised quasi-Monte Carlo: a fixed rng keeps it reproducible.
            p = float(multivariate_normal.cdf(z, mean=np.zeros(z.size), cov=corr, allow_singular=True,
                                              maxpts=200_000 * z.size, abseps=abseps, releps=0.0,
                                              rng=np.random.default_rng(0)))
        acc += x_mixture.weights[k] * p
    return float(acc)


def sign_rule_accuracy(x_mixture: GaussianMixture, labels: Any, w: Any, b: float = 0.0) -> float:
    r"""Accuracy of the rule :math:`\hat y(x) = \operatorname{sign}(w^\top x + b)`: Corollary cor-07-xor, item 2 (Chapter 7).

    Component :math:`k` carries the label :math:`y_k\in\{-1, 1\}`.

    Given component :math:`k`, the score :math:`w^\top X + b` is
    :math:`\mathcal N(w^\top m_k + b,\ w^\top\Gamma_k w)`, so

    .. math::

        \mathrm{acc} = \sum_k \pi_k\,\Phi\Big(\frac{y_k\,(w^\top m_k + b)}{\sqrt{w^\top\Gamma_k w}}\Big).

    A component whose score has zero variance counts as correct iff
    :math:`y_k(w^\top m_k + b) > 0` (the sign of a zero score is no label).

    Parameters
    ----------
    x_mixture : GaussianMixture
        The law of :math:`x`, one component per labelled cluster.
    labels : array_like, shape (K,) or (K, 1)
        The labels :math:`y_k`, each :math:`-1` or :math:`1`.
    w : array_like, shape (d,)
    b : float
    """
    x_mixture = check_mixture(x_mixture, "x_mixture")
    y = as_float_array(labels, "labels").reshape(-1)
    if y.shape != (x_mixture.n_components,) or not np.all(np.abs(y) == 1.0):
        raise ValueError(f"labels must hold {x_mixture.n_components} values in {{-1, 1}}, got {np.asarray(labels)!r}")
    w = as_float_array(w, "w", ndim=1)
    if w.shape != (x_mixture.dim,):
        raise ValueError(f"w must have shape ({x_mixture.dim},), got {w.shape}")
    margin = y * (x_mixture.means @ w + float(b))
    sd = np.sqrt(np.clip(np.einsum("i,kij,j->k", w, x_mixture.covs, w), 0.0, None))
    deg = sd <= 1e-14 * max(1.0, float(np.max(np.abs(margin))))
    p = np.where(deg, (margin > 0).astype(float), norm.cdf(margin / np.where(deg, 1.0, sd)))
    return float(x_mixture.weights @ p)


def xor_posterior_mean(X: Any, offset: float = 2.0, gamma: float = 0.5**0.5) -> np.ndarray:
    r"""The Bayes score of XOR, eq. (eq-07-xor-bayes) of Chapter 7: :math:`\mathbb E[Y\mid x] = \tanh(\nu x_1/\gamma^2)\,\tanh(\nu x_2/\gamma^2)`.

    (The coordinates are independent given the component, and
    :math:`P(m_{k,i} = \nu\mid x_i) = \sigma(2\nu x_i/\gamma^2)`, so
    :math:`\mathbb E[\operatorname{sign} m_{k,i}\mid x_i] = \tanh(\nu x_i/\gamma^2)`; Proposition prop-07-xor-bayes.)

    Parameters
    ----------
    X : array_like, shape (n, 2)
    offset, gamma : float
        :math:`\nu` and :math:`\gamma` of :func:`xor_task`.
    """
    check_positive(offset, "offset")
    check_positive(gamma, "gamma")
    X = as_float_array(X, "X", ndim=2)
    if X.shape[1] != 2:
        raise ValueError(f"X must have shape (n, 2), got {X.shape}")
    c = float(offset) / float(gamma) ** 2
    return np.tanh(c * X[:, 0]) * np.tanh(c * X[:, 1])


def xor_bayes_accuracy(offset: float = 2.0, gamma: float = 0.5**0.5) -> float:
    r"""The Bayes accuracy of XOR, eq. (eq-07-xor-bayes): :math:`\Phi(\nu/\gamma)^2 + \Phi(-\nu/\gamma)^2 = 1 - 2\Phi(\nu/\gamma)\Phi(-\nu/\gamma)`.

    The Bayes rule is :math:`\operatorname{sign}(x_1x_2)`; it is right when both coordinates
    fall on the side of their component's mean, or both on the wrong side (Proposition
    prop-07-xor-bayes, Chapter 7).
    """
    check_positive(offset, "offset")
    check_positive(gamma, "gamma")
    t = float(offset) / float(gamma)
    return float(norm.cdf(t) ** 2 + norm.cdf(-t) ** 2)


# --------------------------------------------------------------------------- intercept-free rules in the plane
def _angle_density(theta: np.ndarray, m: np.ndarray) -> np.ndarray:
    r"""Density of the polar angle of :math:`\mathcal N(m, I_2)`:
    :math:`e^{-\|m\|^2/2}/(2\pi) + s\,\Phi(s)\,\varphi(t)`, :math:`s = m^\top u_\theta`, :math:`t = m^\top u_\theta^\perp`."""
    c, s_ = np.cos(theta), np.sin(theta)
    s = c * m[0] + s_ * m[1]
    t = -s_ * m[0] + c * m[1]
    return np.exp(-0.5 * float(m @ m)) / (2 * np.pi) + s * norm.cdf(s) * norm.pdf(t)


_GL_NODES, _GL_WEIGHTS = np.polynomial.legendre.leggauss(24)


def _whiten(mean: Any, cov: Any) -> tuple[np.ndarray, np.ndarray]:
    m = as_float_array(mean, "mean", ndim=1)
    G = as_float_array(cov, "cov", ndim=2)
    if m.shape != (2,) or G.shape != (2, 2):
        raise ValueError(f"mean must have shape (2,) and cov (2, 2), got {m.shape} and {G.shape}")
    if not np.allclose(G, G.T) or np.any(np.linalg.eigvalsh(G) <= 0):
        raise ValueError("cov must be symmetric positive definite")
    R = np.linalg.cholesky(G)             # x = m + R xi; angles are mapped through R^{-1}
    Rinv = np.linalg.inv(R)
    return Rinv @ m, Rinv


def _whitened_angle(Rinv: np.ndarray, theta: float) -> float:
    v = Rinv @ np.array([np.cos(theta), np.sin(theta)])
    return float(np.arctan2(v[1], v[0]))


def sector_probability(mean: Any, cov: Any, start: float, stop: float) -> float:
    r"""Probability that :math:`X\sim\mathcal N(m,\Gamma)` in the plane lies in the sector of polar angles :math:`(\text{start}, \text{stop})`.

    Chapter 7, Proposition prop-07-linear-ceiling. With :math:`\Gamma = RR^\top` (Cholesky),
    :math:`X = R\,Y` with :math:`Y\sim\mathcal N(R^{-1}m, I)`, and a sector through the origin
    maps to a sector (:math:`\det R > 0` keeps the orientation). The polar angle of
    :math:`Y\sim\mathcal N(\tilde m, I)` has the density

    .. math::

        f(\theta) = \frac{e^{-\|\tilde m\|^2/2}}{2\pi} + s\,\Phi(s)\,\varphi(t),\qquad
        s = \tilde m^\top u_\theta,\ t = \tilde m^\top u_\theta^\perp

    (integrate the Gaussian density along the ray :math:`r u_\theta` with weight :math:`r`),
    which is integrated by adaptive quadrature (``scipy.integrate.quad``, absolute error
    about 1e-14). The arc ``stop - start`` must lie in :math:`[0, 2\pi]`.
    """
    from scipy import integrate

    mt, Rinv = _whiten(mean, cov)
    start, stop = float(start), float(stop)
    arc = stop - start
    if not (np.isfinite(start) and np.isfinite(stop)) or arc < 0 or arc > 2 * np.pi + 1e-12:
        raise ValueError(f"stop - start must lie in [0, 2π], got {arc!r}")
    if arc == 0:
        return 0.0
    if arc >= 2 * np.pi:
        return 1.0
    a = _whitened_angle(Rinv, start)
    b = _whitened_angle(Rinv, stop)
    b = a + np.mod(b - a, 2 * np.pi)
    if arc > np.pi and b - a < np.pi:   # orientation kept: a long arc stays long
        b += 2 * np.pi
    val, _ = integrate.quad(_angle_density, a, b, args=(mt,), epsabs=1e-15, epsrel=1e-13, limit=200)
    return float(min(max(val, 0.0), 1.0))


class ConeRule(NamedTuple):
    r"""The best partition of the plane into sectors (Proposition prop-07-linear-ceiling).

    Attributes
    ----------
    accuracy : float
        :math:`\sum_k\pi_k P_k(S_k)` at the best partition.
    order : tuple of int
        The classes in counterclockwise order.
    rays : ndarray, shape (K,)
        The polar angle where each class's sector starts (sector k runs to the next ray).
    arcs : ndarray, shape (K,)
        The sectors' arcs, each in :math:`[0, \pi]`, summing to :math:`2\pi`.
    attained : bool
        Whether an intercept-free argmax rule realises this partition: every non-empty arc is
        below :math:`\pi`, or two classes take half-planes and the third nothing. Otherwise the
        accuracy is a supremum, approached but not reached.
    slack : ndarray, shape (K,)
        For each sector whose arc is :math:`\pi`, the rate at which the accuracy would grow if
        that sector could open further (sum over its two rays of the density difference
        :math:`\pi_k f_k - \pi_j f_j`); 0 for the others. Positive: the constraint binds.
    """

    accuracy: float
    order: tuple
    rays: np.ndarray
    arcs: np.ndarray
    attained: bool
    slack: np.ndarray


def best_cone_rule(x_mixture: GaussianMixture, *, n_grid: int = 360) -> ConeRule:
    r"""The supremum of the accuracy of intercept-free argmax rules :math:`\arg\max_k w_k^\top x` on three classes in the plane.

    Proposition prop-07-linear-ceiling (Chapter 7): the decision regions of such a rule are
    disjoint convex cones, sectors of arc at most :math:`\pi`, and every partition of the
    circle into three consecutive sectors of arcs in :math:`[0, \pi]` is a rule or a limit of
    rules, so

    .. math::

        \sup_W \mathrm{acc}(W) = \max\Big\{\sum_k\pi_k P_k(S_k):\ S_k\text{ consecutive sectors, arcs}
        \in[0,\pi]\Big\}.

    The objective is separable in the three rays (a ray between classes :math:`i` and
    :math:`j` contributes :math:`\pi_iF_i(\rho) - \pi_jF_j(\rho)`, :math:`F_k` the angular
    distribution function of class :math:`k`); it is tabulated on ``n_grid`` angles
    (24-point Gauss–Legendre per cell of :func:`sector_probability`'s density), maximised over
    the grid for both cyclic orders, and polished by SLSQP with the exact density as
    gradient and the arcs' bounds as linear constraints.
    """
    from scipy.optimize import minimize

    x_mixture = check_mixture(x_mixture, "x_mixture")
    if x_mixture.dim != 2 or x_mixture.n_components != 3:
        raise ValueError("x_mixture must have 3 components in dimension 2, got "
                         f"{x_mixture.n_components} in dimension {x_mixture.dim}")
    if isinstance(n_grid, bool) or not isinstance(n_grid, (int, np.integer)) or n_grid < 12 or n_grid % 2:
        raise ValueError(f"n_grid must be an even integer >= 12, got {n_grid!r}")
    pi = x_mixture.weights
    white = [_whiten(m, G) for m, G in zip(x_mixture.means, x_mixture.covs)]

    def density(k: int, theta: np.ndarray) -> np.ndarray:
        """Density of the polar angle of class k at theta (through the whitening map)."""
        mt, Rinv = white[k]
        theta = np.atleast_1d(np.asarray(theta, dtype=float))
        u = np.stack([np.cos(theta), np.sin(theta)])
        v = Rinv @ u                                   # whitened directions
        phi = np.arctan2(v[1], v[0])
        jac = np.abs(np.linalg.det(Rinv)) / np.sum(v**2, axis=0)   # d(phi)/d(theta)
        return _angle_density(phi, mt) * jac

    N = int(n_grid)
    edges = np.linspace(0.0, 2 * np.pi, N + 1)
    half = np.diff(edges)[0] / 2
    nodes = (edges[:-1, None] + half * (1 + _GL_NODES[None])).ravel()
    F = np.zeros((3, N + 1))
    for k in range(3):
        cells = (density(k, nodes).reshape(N, -1) @ _GL_WEIGHTS) * half
        F[k, 1:] = np.cumsum(cells)

    def Fw(k: int, idx: np.ndarray) -> np.ndarray:
        q, r = np.divmod(idx, N)
        return F[k][r] + q

    H = N // 2
    d0, d1 = np.arange(H + 1)[:, None], np.arange(H + 1)[None, :]
    feasible = d0 + d1 >= H                     # the third arc N - d0 - d1 <= H
    best = (-np.inf, None, None)
    for order in ((0, 1, 2), (0, 2, 1)):
        o0, o1, o2 = order
        for ia in range(N):
            ib, ic = ia + d0, ia + d0 + d1
            acc = (pi[o0] * (Fw(o0, ib) - Fw(o0, np.array(ia))) + pi[o1] * (Fw(o1, ic) - Fw(o1, ib))
                   + pi[o2] * (Fw(o2, np.array(ia + N)) - Fw(o2, ic)))
            acc = np.where(feasible, acc, -np.inf)
            j = np.unravel_index(int(np.argmax(acc)), acc.shape)
            if acc[j] > best[0]:
                best = (float(acc[j]), order, np.array([ia, ia + j[0], ia + j[0] + j[1]]) * (2 * np.pi / N))

    _, order, rays0 = best

    def accuracy(r: np.ndarray) -> float:
        ends = np.append(r[1:], r[0] + 2 * np.pi)
        return float(sum(pi[k] * sector_probability(x_mixture.means[k], x_mixture.covs[k], a, b)
                         for k, a, b in zip(order, r, ends) if b > a))

    def gradient(r: np.ndarray) -> np.ndarray:
        prev = (order[2], order[0], order[1])            # the class ending at each ray
        return np.array([pi[p] * density(p, r[i])[0] - pi[c] * density(c, r[i])[0]
                         for i, (p, c) in enumerate(zip(prev, order))])

    A = np.array([[-1.0, 1.0, 0.0], [0.0, -1.0, 1.0], [1.0, 0.0, -1.0]])   # arcs (minus 2π on the last)
    shift = np.array([0.0, 0.0, 2 * np.pi])
    cons = [{"type": "ineq", "fun": lambda r: A @ r + shift, "jac": lambda r: A},
            {"type": "ineq", "fun": lambda r: np.pi - (A @ r + shift), "jac": lambda r: -A}]
    res = minimize(lambda r: -accuracy(r), rays0, jac=lambda r: -gradient(r), method="SLSQP",
                   constraints=cons, options={"ftol": 1e-15, "maxiter": 200})
    rays = res.x if -res.fun >= best[0] else rays0
    arcs = np.clip(A @ rays + shift, 0.0, np.pi)
    acc = accuracy(rays)
    tol = 1e-6
    full = arcs >= np.pi - tol
    empty = arcs <= tol
    attained = bool(not np.any(full) or (np.sum(full) == 2 and np.sum(empty) == 1))
    g = gradient(rays)
    # opening sector i moves its start ray back (−g[i]) and its end ray forward (+g[i+1])
    slack = np.where(full, -g + np.roll(g, -1), 0.0)
    return ConeRule(acc, tuple(int(k) for k in order), np.mod(rays, 2 * np.pi), arcs, attained, slack)
