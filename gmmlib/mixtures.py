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

from ._validation import as_float_array, check_positive, check_rng

__all__ = ["GaussianMixture"]

_SYM_TOL = 1e-10
_PSD_TOL = 1e-10
_WEIGHT_TOL = 1e-8


def _validate_covs(covs: np.ndarray, name: str = "covs") -> np.ndarray:
    """Check a stack of symmetric PSD matrices and return it exactly symmetrised."""
    scale = max(1.0, float(np.max(np.abs(covs)))) if covs.size else 1.0
    asym = np.max(np.abs(covs - np.swapaxes(covs, -1, -2))) if covs.size else 0.0
    if asym > _SYM_TOL * scale:
        k = int(np.argmax(np.max(np.abs(covs - np.swapaxes(covs, -1, -2)), axis=(-1, -2))))
        raise ValueError(
            f"{name} must be symmetric; component {k} differs from its transpose by {asym:.3g}"
        )
    sym = 0.5 * (covs + np.swapaxes(covs, -1, -2))
    eig = np.linalg.eigvalsh(sym)
    if np.min(eig) < -_PSD_TOL * scale:
        k = int(np.argmin(np.min(eig, axis=-1)))
        raise ValueError(
            f"{name} must be positive semi-definite; component {k} has eigenvalue {np.min(eig):.3g}"
        )
    return sym


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
    >>> gm = GaussianMixture([0.5, 0.5], [[-1.0, 0.0], [1.0, 0.0]], np.stack([np.eye(2)] * 2))
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
        r"""The mixture :math:`\sum_k \pi_k\mathcal N(m_k, \sigma^2 I)` (``variance`` = :math:`\sigma^2 \ge 0`)."""
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
        r"""The second moment :math:`\mathbb E XX^\top = \sum_k \pi_k(\Gamma_k + m_k m_k^\top)`, shape (d, d)."""
        outer = np.einsum("ki,kj->kij", self.means, self.means)
        return np.einsum("k,kij->ij", self.weights, self.covs + outer)

    def covariance(self) -> np.ndarray:
        r"""The covariance :math:`\mathbb E XX^\top - \mathbb E X\,\mathbb E X^\top`, shape (d, d)."""
        mu = self.mean()
        return self.second_moment() - np.outer(mu, mu)

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
            The points :math:`x_i = m_{k_i} + R_{k_i}\varepsilon_i`, :math:`\varepsilon_i\sim\mathcal N(0, I)`.
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

    def sample_prompts(self, n_prompts: int, length: int, rng: Any) -> np.ndarray:
        r"""Draw ``n_prompts`` independent prompts of ``length`` i.i.d. tokens each.

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
            raise ValueError(f"{name} must have {self.dim} columns (the mixture's dim), got shape {X.shape}")
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
                    f"{k} is singular (smallest eigenvalue {eig[k]:.3g}): a point mass has no density"
                ) from None
            if np.any(np.diagonal(self._cache["chol"], axis1=1, axis2=2) <= 0):
                del self._cache["chol"]
                raise ValueError("densities need positive-definite covariances")
        return self._cache["chol"]

    def component_log_prob(self, X: Any) -> np.ndarray:
        r"""Log-densities :math:`\log\mathcal N(x_i; m_k, \Gamma_k)`, shape (n, K).

        Needs positive-definite covariances (raises ``ValueError`` otherwise).
        """
        X = self._check_points(X)
        L = self._cholesky()
        diff = X[:, None, :] - self.means[None, :, :]  # (n, K, d)
        # Solve L_k y = diff for every point and component.
        y = np.linalg.solve(L[None], diff[..., None])[..., 0]
        maha = np.sum(y**2, axis=-1)
        logdet = 2.0 * np.sum(np.log(np.diagonal(L, axis1=1, axis2=2)), axis=1)
        return -0.5 * (maha + logdet[None, :] + self.dim * np.log(2.0 * np.pi))

    def log_prob(self, X: Any) -> np.ndarray:
        r"""Log-density :math:`\log \sum_k \pi_k \mathcal N(x; m_k, \Gamma_k)` at each row of ``X``, shape (n,)."""
        with np.errstate(divide="ignore"):
            logw = np.log(self.weights)
        return logsumexp(self.component_log_prob(X) + logw[None, :], axis=1)

    def posterior(self, X: Any) -> np.ndarray:
        r"""Responsibilities :math:`p(k\mid x) = \pi_k\mathcal N(x; m_k,\Gamma_k)/\sum_j \pi_j\mathcal N(x; m_j,\Gamma_j)`, shape (n, K)."""
        with np.errstate(divide="ignore"):
            logw = np.log(self.weights)
        lp = self.component_log_prob(X) + logw[None, :]
        return np.exp(lp - logsumexp(lp, axis=1, keepdims=True))

    # ------------------------------------------------------------------ tilting
    def _check_direction(self, a: Any) -> np.ndarray:
        a = as_float_array(a, "a", ndim=(1, 2))
        if a.shape[-1] != self.dim:
            raise ValueError(f"a must have last dimension {self.dim} (the mixture's dim), got shape {a.shape}")
        return a

    def tilt_logits(self, a: Any) -> np.ndarray:
        r"""The unnormalised log-weights :math:`\log\pi_k + a^\top m_k + \tfrac12 a^\top\Gamma_k a`.

        ``a`` may be one vector (d,) or a batch (n, d); the result has shape (K,) or (n, K).
        """
        a = self._check_direction(a)
        with np.errstate(divide="ignore"):
            logw = np.log(self.weights)
        quad = np.einsum("...i,kij,...j->...k", a, self.covs, a)
        return logw + a @ self.means.T + 0.5 * quad

    def log_mgf(self, a: Any) -> np.ndarray | float:
        r"""The cumulant generating function :math:`\log\mathbb E\, e^{a^\top X} = \operatorname{logsumexp}_k(\log\pi_k + a^\top m_k + \tfrac12 a^\top\Gamma_k a)`.

        ``a`` may be (d,) (returns a float) or (n, d) (returns shape (n,)).
        """
        out = logsumexp(self.tilt_logits(a), axis=-1)
        return float(out) if np.ndim(out) == 0 else out

    def tilt(self, a: Any) -> "GaussianMixture":
        r"""The exponentially tilted mixture with density :math:`\propto e^{a^\top x}\mu(x)`.

        Component :math:`k` keeps its covariance, moves to :math:`m_k + \Gamma_k a` and gets
        weight :math:`\propto \pi_k e^{a^\top m_k + \frac12 a^\top\Gamma_k a}` (computed
        with log-sum-exp, so huge :math:`a` stays finite). Point masses are allowed.
        """
        a = self._check_direction(a)
        if a.ndim != 1:
            raise ValueError(f"a must be one vector of shape ({self.dim},) for tilt, got shape {a.shape}")
        logits = self.tilt_logits(a)
        w = np.exp(logits - logsumexp(logits))
        means = self.means + np.einsum("kij,j->ki", self.covs, a)
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
        r"""The law of :math:`X + \varepsilon`, :math:`\varepsilon\sim\mathcal N(0, \Sigma)` independent of :math:`X`.

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
