r"""Gaussian mixtures: the prompt distributions of the book.

A :class:`GaussianMixture` describes the law

.. math::

    \mu = \sum_{k=1}^K \pi_k \, \mathcal N(m_k, \Gamma_k),

with weights :math:`\pi_k \ge 0` summing to one, means :math:`m_k \in \mathbb R^d` and
symmetric positive semi-definite covariances :math:`\Gamma_k` (zero is allowed: a point
mass). It is immutable and validated on construction.

The operation the whole book turns on is *exponential tilting*: for a vector
:math:`a`, the tilted law has density proportional to :math:`e^{a^\top x}\mu(x)`.
For a Gaussian component,

.. math::

    e^{a^\top x}\, \mathcal N(x; m, \Gamma) = e^{a^\top m + \frac12 a^\top \Gamma a}\,
    \mathcal N(x; m + \Gamma a, \Gamma),

so tilting a mixture shifts every mean by :math:`\Gamma_k a` and re-weights the
components by :math:`\pi_k e^{a^\top m_k + \frac12 a^\top\Gamma_k a}`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np
from scipy.special import logsumexp

from ._validation import as_float_array, check_covariances, check_positive, check_rng

__all__ = ["GaussianMixture"]

_WEIGHT_TOL = 1e-8
#: Beyond this size a logit's rounding error (1e-4) would show in a softmax: such rows saturate.
_FAR_LOGIT = 1e12
_TILT_OVERFLOW = (
    "the tilt's log-weights log π_k + aᵀm_k + aᵀΓ_k a/2 overflow the float range: a is too "
    "large for them (tilt_weights() still gives the saturated weights)"
)


def _validate_covs(covs: np.ndarray, name: str = "covs") -> np.ndarray:
    """Check a stack of symmetric PSD matrices and return it exactly symmetrised."""
    return check_covariances(covs, name)


def _saturating_softmax(
    Xhat: np.ndarray, scale: np.ndarray, M: np.ndarray, b: np.ndarray, c: np.ndarray
) -> np.ndarray:
    r"""Rows of :math:`\operatorname{softmax}_k(c_k + s\,\hat x^\top b_k + \tfrac12 s^2\,\hat x^\top
    M_k\hat x)`, no overflow.

    For points :math:`x = s\hat x` so far out that the logits themselves overflow (the
    softmax then saturates, and its value is finite). The quadratic term is computed once per
    distinct :math:`M_k`, so components sharing a matrix share it exactly and it cancels among
    them however large :math:`s` is; a component whose quadratic term trails the largest by
    :math:`g > 0` gets weight :math:`e^{-s^2 g/2}` relative to it (0 once that underflows).
    """
    K = M.shape[0]
    uniq, inverse = np.unique(M.reshape(K, -1), axis=0, return_inverse=True)
    Mu = uniq.reshape(-1, *M.shape[1:])
    q = 0.5 * np.einsum("ni,uij,nj->nu", Xhat, Mu, Xhat)[:, np.ravel(inverse)]  # (n, K)
    dq = q - q.max(axis=1, keepdims=True)  # <= 0; exactly 0 for the leading matrix
    s = scale[:, None]
    with np.errstate(over="ignore", invalid="ignore"):
        quad = np.where(dq < 0, (dq * s) * s, 0.0)
        logits = quad + (Xhat @ b.T) * s + c[None, :]
    logits = np.where(
        np.isneginf(quad) | np.isneginf(c)[None, :] | np.isnan(logits), -np.inf, logits
    )
    top = np.isposinf(logits)  # s·x̂ᵀb_k overflowed upwards: those components take all the mass
    finite_max = np.max(np.where(np.isfinite(logits), logits, -np.inf), axis=1, keepdims=True)
    with np.errstate(invalid="ignore"):
        shifted = np.where(np.isfinite(logits), logits - finite_max, -np.inf)
    w = np.exp(np.where(top.any(axis=1, keepdims=True), np.where(top, 0.0, -np.inf), shifted))
    return w / w.sum(axis=1, keepdims=True)


def _far_rows(logits: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Rows of logits that overflowed, or are so large (beyond 1e12) that rounding swamps their
    differences."""
    live = weights > 0
    with np.errstate(invalid="ignore"):
        size = np.max(np.abs(np.where(live[None, :], logits, 0.0)), axis=1)
    return ~(size <= _FAR_LOGIT)  # NaN or inf count as far


@dataclass(frozen=True, eq=False)
class GaussianMixture:
    r"""A Gaussian mixture :math:`\sum_k \pi_k \mathcal N(m_k, \Gamma_k)` on :math:`\mathbb R^d`.

    Parameters
    ----------
    weights : array_like, shape (K,)
        Mixture weights :math:`\pi_k`, non-negative and summing to one (to within 1e-8;
        they are then renormalised exactly).
    means : array_like, shape (K, d)
        Component means :math:`m_k`.
    covs : array_like, shape (K, d, d)
        Component covariances :math:`\Gamma_k`, symmetric positive semi-definite.
        A zero matrix makes the component a point mass.

    Raises
    ------
    ValueError
        On wrong shapes, NaN or inf, negative weights or weights not summing to one,
        non-symmetric or indefinite covariances.

    Examples
    --------
    >>> import numpy as np
    >>> gm = GaussianMixture([0.5, 0.5], [[-1.0, 0.0], [1.0, 0.0]],
    ...                      np.stack([np.eye(2)] * 2))
    >>> gm.dim, gm.n_components
    (2, 2)
    """

    weights: np.ndarray
    means: np.ndarray
    covs: np.ndarray
    _cache: dict = field(default_factory=dict, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        w = as_float_array(self.weights, "weights", ndim=1)
        m = as_float_array(self.means, "means", ndim=2)
        c = as_float_array(self.covs, "covs", ndim=3)
        K, d = m.shape
        if K == 0 or d == 0:
            raise ValueError(f"means must have shape (K, d) with K, d >= 1, got {m.shape}")
        if w.shape != (K,):
            raise ValueError(f"weights must have shape (K,) = ({K},) to match means, got {w.shape}")
        if c.shape != (K, d, d):
            raise ValueError(f"covs must have shape (K, d, d) = ({K}, {d}, {d}), got {c.shape}")
        if np.any(w < 0):
            raise ValueError(f"weights must be non-negative, got {w}")
        if abs(w.sum() - 1.0) > _WEIGHT_TOL:
            raise ValueError(f"weights must sum to 1, got sum {w.sum():.12g}")
        w = w / w.sum()
        c = _validate_covs(c)
        for arr in (w, m, c):
            arr.setflags(write=False)
        object.__setattr__(self, "weights", w)
        object.__setattr__(self, "means", m)
        object.__setattr__(self, "covs", c)

    # ------------------------------------------------------------------ constructors
    @classmethod
    def gaussian(cls, mean: Any, cov: Any) -> "GaussianMixture":
        r"""The single Gaussian :math:`\mathcal N(m, \Gamma)` as a one-component mixture."""
        mean = as_float_array(mean, "mean", ndim=1)
        cov = as_float_array(cov, "cov", ndim=2)
        return cls(np.ones(1), mean[None, :], cov[None, :, :])

    @classmethod
    def isotropic(cls, weights: Any, means: Any, variance: float) -> "GaussianMixture":
        r"""The mixture :math:`\sum_k \pi_k\mathcal N(m_k, \sigma^2 I)` (``variance`` =
        :math:`\sigma^2 \ge 0`)."""
        check_positive(variance, "variance", allow_zero=True)
        m = as_float_array(means, "means", ndim=2)
        K, d = m.shape
        return cls(weights, m, np.broadcast_to(variance * np.eye(d), (K, d, d)).copy())

    # ------------------------------------------------------------------ basic facts
    @property
    def dim(self) -> int:
        """The dimension :math:`d` of the space."""
        return int(self.means.shape[1])

    @property
    def n_components(self) -> int:
        """The number :math:`K` of components."""
        return int(self.means.shape[0])

    def __repr__(self) -> str:
        return f"GaussianMixture(n_components={self.n_components}, dim={self.dim})"

    def mean(self) -> np.ndarray:
        r"""The mean :math:`\mathbb E X = \sum_k \pi_k m_k`, shape (d,)."""
        return self.weights @ self.means

    def second_moment(self) -> np.ndarray:
        r"""The second moment :math:`\mathbb E XX^\top = \sum_k \pi_k(\Gamma_k + m_k m_k^\top)`,
        shape (d, d)."""
        outer = np.einsum("ki,kj->kij", self.means, self.means)
        return np.einsum("k,kij->ij", self.weights, self.covs + outer)

    def covariance(self) -> np.ndarray:
        r"""The covariance :math:`\mathbb E XX^\top - \mathbb E X\,\mathbb E X^\top`, shape (d,
        d)."""
        mu = self.mean()
        return self.second_moment() - np.outer(mu, mu)

    def shared_covariance(self, name: str = "mixture", purpose: str = "") -> np.ndarray:
        r"""The one covariance :math:`\Gamma` of every component, for the shared-covariance
        formulas.

        Components count as sharing it when :math:`\max_k\|\Gamma_k - \Gamma_1\|_{\max} \le
        10^{-12}\max(1, \max_k\|\Gamma_k\|_{\max})`; otherwise a ``ValueError`` names
        ``name`` and ``purpose`` (what needed one covariance).
        """
        G = self.covs[0]
        scale = max(1.0, float(np.max(np.abs(self.covs))))
        if np.max(np.abs(self.covs - G[None])) > 1e-12 * scale:
            raise ValueError(
                f"{name} must have one covariance shared by all components"
                + (f" ({purpose})" if purpose else "")
            )
        return G

    # ------------------------------------------------------------------ sampling
    def _factors(self) -> np.ndarray:
        """Square roots :math:`R_k` with :math:`R_k R_k^\\top = \\Gamma_k` (PSD-safe, via eigh)."""
        if "factors" not in self._cache:
            eig, vec = np.linalg.eigh(self.covs)
            self._cache["factors"] = vec * np.sqrt(np.clip(eig, 0.0, None))[:, None, :]
        return self._cache["factors"]

    def sample(self, n: int, rng: Any) -> tuple[np.ndarray, np.ndarray]:
        r"""Draw ``n`` i.i.d. points.

        Parameters
        ----------
        n : int
            Number of points.
        rng : numpy.random.Generator or int
            Random generator, or a seed for a new one.

        Returns
        -------
        X : ndarray, shape (n, d)
            The points :math:`x_i = m_{k_i} + R_{k_i}\varepsilon_i`,
            :math:`\varepsilon_i\sim\mathcal N(0, I)`.
        labels : ndarray of int, shape (n,)
            The component :math:`k_i \sim \pi` each point was drawn from.
        """
        check_positive(n, "n", integer=True, allow_zero=True)
        rng = check_rng(rng)
        labels = rng.choice(self.n_components, size=int(n), p=self.weights)
        X = rng.standard_normal((int(n), self.dim))
        factors = self._factors()
        # einsum, not `@`: numpy's matmul is very slow for an (n, d) @ (d, d) product with tiny d.
        if self.n_components == 1:
            X = self.means[0] + np.einsum("ni,ji->nj", X, factors[0])
        else:
            for k in range(self.n_components):
                idx = np.flatnonzero(labels == k)
                X[idx] = self.means[k] + np.einsum("ni,ji->nj", X[idx], factors[k])
        return X, labels

    def sample_tokens(self, n_prompts: int, length: int, rng: Any) -> np.ndarray:
        r"""Draw ``n_prompts`` independent prompts of ``length`` i.i.d. tokens each: tokens only.

        The finite prompts of Chapter 1 (their empirical measures :math:`\hat\mu_L`). A bare
        mixture has no queries and no targets, so this is not a task sampler (those are
        ``sample_prompts`` and return a :class:`gmmlib.attention.PromptBatch`): it returns the
        tokens, as :meth:`gmmlib.lda.task.LDAModel.sample_tokens` does. The same draws as
        ``sample(n_prompts * length, rng)``, reshaped.

        Returns
        -------
        ndarray, shape (n_prompts, length, d)
        """
        check_positive(n_prompts, "n_prompts", integer=True)
        check_positive(length, "length", integer=True)
        X, _ = self.sample(int(n_prompts) * int(length), rng)
        return X.reshape(int(n_prompts), int(length), self.dim)

    # ------------------------------------------------------------------ densities
    def _check_points(self, X: Any, name: str = "X") -> np.ndarray:
        X = as_float_array(X, name, ndim=(1, 2))
        X2 = X[None, :] if X.ndim == 1 else X
        if X2.shape[1] != self.dim:
            raise ValueError(
                f"{name} must have {self.dim} columns (the mixture's dim), got shape {X.shape}"
            )
        return X2

    def _cholesky(self) -> np.ndarray:
        if "chol" not in self._cache:
            try:
                self._cache["chol"] = np.linalg.cholesky(self.covs)
            except np.linalg.LinAlgError:
                eig = np.linalg.eigvalsh(self.covs).min(axis=1)
                k = int(np.argmin(eig))
                raise ValueError(
                    "densities need positive-definite covariances; component "
                    f"{k} is singular (smallest eigenvalue {eig[k]:.3g}): a point mass has no "
                    "density"
                ) from None
            if np.any(np.diagonal(self._cache["chol"], axis1=1, axis2=2) <= 0):
                del self._cache["chol"]
                raise ValueError("densities need positive-definite covariances")
        return self._cache["chol"]

    def component_log_prob(self, X: Any) -> np.ndarray:
        r"""Log-densities :math:`\log\mathcal N(x_i; m_k, \Gamma_k)`, shape (n, K).

        Needs positive-definite covariances (raises ``ValueError`` otherwise).
        """
        out = self._component_log_prob(self._check_points(X))
        if not np.all(np.isfinite(out)):
            i = int(np.argmax(~np.all(np.isfinite(out), axis=1)))
            raise ValueError(
                f"the log-density at row {i} of X is below the float range (its squared "
                "Mahalanobis distance to a component overflows): the point is too far out for a "
                "log-density; posterior() still gives its (saturated) responsibilities"
            )
        return out

    def _component_log_prob(self, X: np.ndarray) -> np.ndarray:
        """Like :meth:`component_log_prob` on checked points, with -inf where the distance
        overflows."""
        L = self._cholesky()
        diff = X[:, None, :] - self.means[None, :, :]  # (n, K, d)
        # Solve L_k y = diff for every point and component.
        y = np.linalg.solve(L[None], diff[..., None])[..., 0]
        with np.errstate(over="ignore"):
            maha = np.sum(y**2, axis=-1)
        logdet = 2.0 * np.sum(np.log(np.diagonal(L, axis1=1, axis2=2)), axis=1)
        return -0.5 * (maha + logdet[None, :] + self.dim * np.log(2.0 * np.pi))

    def log_prob(self, X: Any) -> np.ndarray:
        r"""Log-density :math:`\log \sum_k \pi_k \mathcal N(x; m_k, \Gamma_k)` at each row of ``X``,
        shape (n,)."""
        with np.errstate(divide="ignore"):
            logw = np.log(self.weights)
        return logsumexp(self.component_log_prob(X) + logw[None, :], axis=1)

    def posterior(self, X: Any) -> np.ndarray:
        r"""Responsibilities :math:`p(k\mid x) = \pi_k\mathcal N(x; m_k,\Gamma_k)/\sum_j
        \pi_j\mathcal N(x; m_j,\Gamma_j)`, shape (n, K)."""
        X = self._check_points(X)
        with np.errstate(divide="ignore"):
            logw = np.log(self.weights)
        lp = self._component_log_prob(X) + logw[None, :]
        far = _far_rows(lp, self.weights)
        if not np.any(far):
            return np.exp(lp - logsumexp(lp, axis=1, keepdims=True))
        # Points so far out that the squared distances overflow, or swamp the log-densities'
        # differences in rounding (beyond 1e12, see _far_rows): expand the log-densities,
        # c_k + x^T P_k m_k - x^T P_k x / 2 with P_k = Γ_k^{-1}, and let the softmax saturate.
        out = np.empty_like(lp)
        near = ~far
        out[near] = np.exp(lp[near] - logsumexp(lp[near], axis=1, keepdims=True))
        L = self._cholesky()
        P = np.linalg.inv(self.covs)
        Pm = np.einsum("kij,kj->ki", P, self.means)
        logdet = 2.0 * np.sum(np.log(np.diagonal(L, axis1=1, axis2=2)), axis=1)
        c = logw - 0.5 * logdet - 0.5 * np.einsum("ki,ki->k", self.means, Pm)
        scale = np.max(np.abs(X[far]), axis=1)
        out[far] = _saturating_softmax(X[far] / scale[:, None], scale, -P, Pm, c)
        return out

    # ------------------------------------------------------------------ tilting
    def _check_direction(self, a: Any) -> np.ndarray:
        a = as_float_array(a, "a", ndim=(1, 2))
        if a.shape[-1] != self.dim:
            raise ValueError(
                f"a must have last dimension {self.dim} (the mixture's dim), got shape {a.shape}"
            )
        return a

    def tilt_logits(self, a: Any) -> np.ndarray:
        r"""The unnormalised log-weights :math:`\log\pi_k + a^\top m_k + \tfrac12 a^\top\Gamma_k a`.

        ``a`` may be one vector (d,) or a batch (n, d); the result has shape (K,) or (n, K).
        """
        out = self._tilt_logits(self._check_direction(a))
        if not np.all(np.isfinite(out) | (self.weights == 0)):  # -inf for a zero weight is right
            raise ValueError(_TILT_OVERFLOW)
        return out

    def _tilt_logits(self, a: np.ndarray, *, relative: bool = False) -> np.ndarray:
        r""":meth:`tilt_logits` of checked directions, with ±inf where they overflow (no warning).

        ``relative``: less the term :math:`\tfrac12 a^\top\Gamma_1 a` common to every component
        (the same softmax), so that the quadratic terms cancel exactly, not in rounding, where
        the covariances are equal (a large tilt would otherwise cost the gates ~1e-16 of
        :math:`a^\top\Gamma a` in absolute error).
        """
        with np.errstate(divide="ignore"):
            logw = np.log(self.weights)
        covs = self.covs - self.covs[0] if relative else self.covs
        with np.errstate(over="ignore", invalid="ignore"):
            quad = np.einsum("...i,kij,...j->...k", a, covs, a)
            return logw + a @ self.means.T + 0.5 * quad

    def tilt_weights(self, a: Any) -> np.ndarray:
        r"""The weights :math:`\operatorname{softmax}_k(\log\pi_k + a^\top m_k + \tfrac12
        a^\top\Gamma_k a)` of the tilted mixture.

        ``a`` may be (d,) (returns shape (K,)) or (n, d) (returns (n, K)). Finite for every finite
        ``a``: where the logits overflow the softmax saturates, and it is computed as such (the
        component with the largest :math:`a^\top\Gamma_k a`, then :math:`a^\top m_k`, wins). These
        are the gates of attention's infinite-prompt limit (Chapter 1, :prf:ref:`lem-01-tilt`).
        """
        a = self._check_direction(a)
        A = np.atleast_2d(a)
        logits = self._tilt_logits(A, relative=True)
        bad = _far_rows(logits, self.weights)
        out = np.empty_like(logits)
        good = ~bad
        if np.any(good):
            out[good] = np.exp(logits[good] - logsumexp(logits[good], axis=1, keepdims=True))
        if np.any(bad):
            with np.errstate(divide="ignore"):
                logw = np.log(self.weights)
            scale = np.max(np.abs(A[bad]), axis=1)
            out[bad] = _saturating_softmax(
                A[bad] / scale[:, None], scale, self.covs, self.means, logw
            )
        return out[0] if a.ndim == 1 else out

    def log_mgf(self, a: Any) -> np.ndarray | float:
        r"""The cumulant generating function :math:`\Lambda(a) = \log\mathbb E\, e^{a^\top X} =
        \operatorname{logsumexp}_k(\log\pi_k + a^\top m_k + \tfrac12 a^\top\Gamma_k a)`.

        :math:`\Lambda` of :prf:ref:`lem-01-tilt` (Chapter 1).

        ``a`` may be (d,) (returns a float) or (n, d) (returns shape (n,)). Raises ``ValueError``
        where the value is beyond the float range (:math:`a^\top\Gamma_k a` overflows).
        """
        out = logsumexp(self.tilt_logits(a), axis=-1)
        return float(out) if np.ndim(out) == 0 else out

    def tilt(self, a: Any) -> "GaussianMixture":
        r"""The exponentially tilted mixture :math:`\mu^{(a)}` with density :math:`\propto e^{a^\top
        x}\mu(x)`.

        Eq. :eq:`eq-01-tilt` of :prf:ref:`lem-01-tilt` (Chapter 1); for one Gaussian it is
        :prf:ref:`lem-02-tilt` (Chapter 2), and for a mixture Chapter 3's gated affine experts.

        Component :math:`k` keeps its covariance, moves to :math:`m_k + \Gamma_k a` and gets
        weight :math:`\propto \pi_k e^{a^\top m_k + \frac12 a^\top\Gamma_k a}` (computed
        with log-sum-exp, so huge :math:`a` stays finite). Point masses are allowed.
        """
        a = self._check_direction(a)
        if a.ndim != 1:
            raise ValueError(
                f"a must be one vector of shape ({self.dim},) for tilt, got shape {a.shape}"
            )
        w = self.tilt_weights(a)
        means = self.means + np.einsum("kij,j->ki", self.covs, a)
        if not np.all(np.isfinite(means)):
            raise ValueError(
                "the tilted means m_k + Γ_k a overflow the float range: a is too large"
            )
        return GaussianMixture(w / w.sum(), means, self.covs.copy())

    # ------------------------------------------------------------------ transformations
    def affine(self, A: Any, b: Any | None = None) -> "GaussianMixture":
        r"""The law of :math:`AX + b`: components :math:`\mathcal N(Am_k + b, A\Gamma_k A^\top)`.

        ``A`` has shape (p, d); ``b`` has shape (p,) (zero by default).
        """
        A = as_float_array(A, "A", ndim=2)
        if A.shape[1] != self.dim:
            raise ValueError(f"A must have shape (p, {self.dim}), got {A.shape}")
        b = np.zeros(A.shape[0]) if b is None else as_float_array(b, "b", ndim=1)
        if b.shape != (A.shape[0],):
            raise ValueError(f"b must have shape ({A.shape[0]},), got {b.shape}")
        covs = np.einsum("pi,kij,qj->kpq", A, self.covs, A)
        return GaussianMixture(self.weights.copy(), self.means @ A.T + b, covs)

    def convolve(self, cov: Any) -> "GaussianMixture":
        r"""The law of :math:`X + \varepsilon`, :math:`\varepsilon\sim\mathcal N(0, \Sigma)`
        independent of :math:`X`.

        Every component's covariance becomes :math:`\Gamma_k + \Sigma`. ``cov`` is a (d, d)
        PSD matrix :math:`\Sigma`, or a non-negative scalar :math:`s` meaning :math:`sI`.
        """
        if np.ndim(cov) == 0:
            check_positive(cov, "cov", allow_zero=True)
            cov = float(cov) * np.eye(self.dim)
        cov = as_float_array(cov, "cov", ndim=2)
        if cov.shape != (self.dim, self.dim):
            raise ValueError(f"cov must have shape ({self.dim}, {self.dim}), got {cov.shape}")
        cov = _validate_covs(cov[None], "cov")[0]
        return GaussianMixture(self.weights.copy(), self.means.copy(), self.covs + cov[None])


def check_mixture(mixture: Any, name: str = "mixture") -> GaussianMixture:
    """Return ``mixture`` if it is a :class:`GaussianMixture`, else raise ``TypeError``."""
    if not isinstance(mixture, GaussianMixture):
        raise TypeError(f"{name} must be a GaussianMixture, got {type(mixture).__name__}")
    return mixture
