r"""The evidence a check compares a claim with: estimates that carry their own error.

An :class:`Estimate` is a computed reference with the tolerance it justifies and the reason,
written from the actual numbers: a quadrature value with its convergence error
(:func:`converged_quadrature`), a Richardson-extrapolated derivative
(:func:`richardson_derivative`), or the mean of random draws with its standard error and a
family-wise multiplier (:func:`replicates`, :func:`monte_carlo_mean`). The checks that use
them are in :mod:`gmmlib.runtime.checks`, which re-exports everything here.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = [
    "CONVERGENCE_MULTIPLIER",
    "Estimate",
    "converged_quadrature",
    "monte_carlo_mean",
    "replicate_mean_se",
    "replicates",
    "richardson_derivative",
]


@dataclass(frozen=True)
class Estimate:
    r"""A computed reference together with its own error, and the justification of that error.

    Made by :func:`converged_quadrature`, :func:`richardson_derivative`, :func:`replicates`
    and :func:`monte_carlo_mean`; pass it as the ``reference`` (or ``estimate``) of a check
    and the check takes its tolerance and ``why`` from it.

    Attributes
    ----------
    value : ndarray
        The estimate.
    error : ndarray
        The absolute tolerance it justifies (for :meth:`~gmmlib.runtime.checks.Ledger.close`).
    why : str
        How ``error`` was obtained, written from the actual numbers.
    method : str
        How ``value`` was computed.
    se : ndarray or None
        Its standard error, for random estimates (for
        :meth:`~gmmlib.runtime.checks.Ledger.within_se`).
    k : float or None
        The tolerance multiplier in standard errors that goes with ``se``.
    """

    value: np.ndarray
    error: np.ndarray
    why: str
    method: str
    se: np.ndarray | None = None
    k: float | None = None

    def __getitem__(self, index: Any) -> "Estimate":
        """The estimate of some entries (``est[0]``, ``est[:, 1]``), with their errors and standard
        errors."""
        def pick(x: Any) -> Any:
            if x is None:
                return None
            arr = np.asarray(x, dtype=np.float64)
            return arr if arr.ndim == 0 else np.broadcast_to(arr, np.shape(self.value))[index]
        return Estimate(np.asarray(self.value)[index], pick(self.error), self.why, self.method,
                        pick(self.se), self.k)


def numeric_array(x: Any, name: str) -> np.ndarray:
    """``x`` (an :class:`Estimate`'s value, an array or a tensor) as a float64 array; ``name`` in
    errors."""
    if isinstance(x, Estimate):
        x = x.value
    try:
        return np.asarray(x.detach().cpu().numpy() if hasattr(x, "detach") else x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be numeric, got {type(x).__name__}") from exc


def format_number(x: float) -> str:
    """``x`` with four significant digits (scientific notation below 1e-3 and from 1e5)."""
    if x == 0 or not math.isfinite(x):
        return f"{x:g}"
    ax = abs(x)
    return f"{x:.3e}" if ax < 1e-3 or ax >= 1e5 else f"{x:.4g}"



#: The multiplier applied to the change between two rule sizes (quadrature) or two steps
#: (Richardson): the finer value's error is taken to be at most this many times that change.
CONVERGENCE_MULTIPLIER = 10.0


def converged_quadrature(compute: Any, n_points: int, n_fine: int | None = None, *,
                         method: str = "Gauss–Hermite quadrature", dim: int = 1) -> Estimate:
    r"""A quadrature value with its error estimated from two rule sizes.

    ``compute(n)`` evaluates the rule with ``n`` nodes (per axis). With
    :math:`Q_n, Q_{n'}` (:math:`n' = ` ``n_fine``, default :math:`2n`), the value is
    :math:`Q_{n'}` and its error bound is

    .. math::

        \varepsilon = c\,|Q_{n'} - Q_n| + \max(100, 4\sqrt N)\,u\,\max(|Q_{n'}|, 1),

    with :math:`c` = :data:`CONVERGENCE_MULTIPLIER` = 10, :math:`u` the float64 unit round-off and
    :math:`N = n'^{\,\text{dim}}` the number of terms the finer rule sums (``dim`` axes of a
    tensor-product rule): the round-off of a sum of :math:`N` terms grows like :math:`\sqrt N\,u`
    (Higham, *Accuracy and Stability of Numerical Algorithms*, §4.2), four of its standard
    deviations. Gauss–Hermite rules converge like :math:`e^{-c\sqrt n}` or faster on the book's
    analytic integrands, so the finer rule's error is below the change between the two once that
    change is small; :math:`c = 10` is the book's one documented safety factor for that.
    """
    if isinstance(n_points, bool) or not isinstance(n_points, (int, np.integer)) or n_points < 1:
        raise ValueError(f"n_points must be a positive integer, got {n_points!r}")
    n_fine = 2 * int(n_points) if n_fine is None else int(n_fine)
    if n_fine <= n_points:
        raise ValueError(f"n_fine must exceed n_points ({n_points}), got {n_fine}")
    coarse = numeric_array(compute(int(n_points)), "compute(n)")
    fine = numeric_array(compute(n_fine), "compute(n_fine)")
    if coarse.shape != fine.shape:
        raise ValueError("compute(n) must return the same shape for every n")
    change = np.abs(fine - coarse)
    if isinstance(dim, bool) or not isinstance(dim, (int, np.integer)) or dim < 1:
        raise ValueError(f"dim must be a positive integer (the rule's number of axes), got {dim!r}")
    ulps = max(100.0, 4.0 * math.sqrt(float(n_fine) ** int(dim)))
    round_off = ulps * np.finfo(np.float64).eps * np.maximum(np.abs(fine), 1.0)
    error = CONVERGENCE_MULTIPLIER * change + round_off
    why = (
        f"{CONVERGENCE_MULTIPLIER:g} × the change from {n_points} to {n_fine} nodes "
        f"(max {format_number(float(change.max()))}) + {ulps:.0f} ulp of round-off"
    )
    return Estimate(fine, error, why, f"{method}, {n_fine} nodes")


def richardson_derivative(f: Any, x: Any, direction: Any, h: float = 1e-3) -> Estimate:
    r"""The directional derivative :math:`\partial_t f(x + t\,\delta)|_{t=0}` by Richardson
    extrapolation.

    With central differences :math:`D(h) = (f(x + h\delta) - f(x - h\delta))/(2h)`, error
    :math:`O(h^2)`, the value is :math:`(4D(h/2) - D(h))/3`, error :math:`O(h^4)`, and its
    error bound :math:`c\,|D(h/2) - D(h)|/3 + 10\,u\,|f(x)|/h` (:math:`c` =
    :data:`CONVERGENCE_MULTIPLIER`): :math:`|D(h/2) - D(h)|/3` estimates the error of
    :math:`D(h/2)` alone, a bound the extrapolated value beats by a factor
    :math:`O(h^2)`, and the last term bounds the round-off of the differences.
    """
    x = numeric_array(x, "x")
    delta = numeric_array(direction, "direction")
    if delta.shape != x.shape:
        raise ValueError(f"direction must have the shape of x {x.shape}, got {delta.shape}")
    if not (h > 0 and math.isfinite(h)):
        raise ValueError(f"h must be positive and finite, got {h}")

    def D(step: float) -> np.ndarray:
        return (
            numeric_array(f(x + step * delta), "f") - numeric_array(f(x - step * delta), "f")
        ) / (2 * step)

    d1, d2 = D(h), D(h / 2)
    value = (4 * d2 - d1) / 3
    scale = np.abs(numeric_array(f(x), "f"))
    change = np.abs(d2 - d1) / 3
    error = CONVERGENCE_MULTIPLIER * change + 10 * np.finfo(np.float64).eps * scale / h
    why = (
        f"{CONVERGENCE_MULTIPLIER:g} × |D(h/2) − D(h)|/3 = "
        f"{format_number(float(np.max(CONVERGENCE_MULTIPLIER * change)))}, h = {h:g}, "
        "plus round-off"
    )
    return Estimate(value, error, why, f"Richardson-extrapolated central differences, h = {h:g}")


def replicates(
    samples: Any, *, familywise_alpha: float = 1e-3, method: str = "Monte Carlo"
) -> Estimate:
    r"""Mean and standard error of independent replicates (axis 0), with a family-wise multiplier.

    See :func:`replicate_mean_se` for the formulas; the returned :class:`Estimate` carries ``se``
    and the multiplier ``k`` for :meth:`~gmmlib.runtime.checks.Ledger.within_se`, and a ``why``
    written from the actual counts.
    """
    mean, se, k = replicate_mean_se(samples, familywise_alpha=familywise_alpha)
    x = numeric_array(samples, "samples")
    R, n = x.shape[0], max(1, int(np.prod(x.shape[1:])))
    why = (
        f"{k:.3g} se: Student t with {R - 1} degrees of freedom from {R} independent replicates, "
        f"Bonferroni over {n} entr{'y' if n == 1 else 'ies'}, "
        f"family-wise level {familywise_alpha:g}"
    )
    return Estimate(mean, k * se, why, f"{method}, {R} replicates", se=se, k=k)


def monte_carlo_mean(
    samples: Any, *, axis: int = 0, familywise_alpha: float = 1e-3, method: str = "Monte Carlo"
) -> Estimate:
    r"""The mean of i.i.d. draws along ``axis``, its standard error and a Gaussian family-wise
    multiplier.

    .. math::

        \bar x = \frac1n\sum_i x_i,\qquad \mathrm{se} = \frac{s}{\sqrt n},\qquad
        k = \Phi^{-1}\Big(1 - \frac{\alpha}{2N}\Big)

    for :math:`N` entries compared at once (Bonferroni); valid when :math:`n` is large
    enough for the central limit theorem (the book uses it with :math:`n \ge 1000`).
    """
    from scipy.special import ndtri  # the normal quantile (scipy.stats costs ~1 s to import)

    x = np.moveaxis(numeric_array(samples, "samples"), axis, 0)
    if not np.all(np.isfinite(x)):
        raise ValueError("samples must be finite (no NaN or inf)")
    if x.shape[0] < 100:
        raise ValueError(
            f"monte_carlo_mean needs at least 100 draws along axis {axis}, got {x.shape[0]}; "
            "use replicates() for a few independent replicates"
        )
    if not (0.0 < familywise_alpha < 1.0):
        raise ValueError(f"familywise_alpha must lie in (0, 1), got {familywise_alpha}")
    n_draws, n = x.shape[0], max(1, int(np.prod(x.shape[1:])))
    mean, se = x.mean(axis=0), x.std(axis=0, ddof=1) / np.sqrt(n_draws)
    if np.any(se <= 0):
        raise ValueError("samples have zero spread along the axis: nothing random to test")
    k = float(ndtri(1.0 - familywise_alpha / (2.0 * n)))
    why = (
        f"{k:.3g} se: Gaussian quantile for {n_draws:,} i.i.d. draws, Bonferroni over {n} "
        f"entr{'y' if n == 1 else 'ies'}, family-wise level {familywise_alpha:g}"
    )
    return Estimate(mean, k * se, why, f"{method}, {n_draws:,} draws", se=se, k=k)


def replicate_mean_se(
    samples: Any, *, familywise_alpha: float = 1e-3
) -> tuple[np.ndarray, np.ndarray, float]:
    r"""Mean, standard error and a family-wise tolerance multiplier for independent replicates.

    For :math:`R` i.i.d. replicates (axis 0) of an array of :math:`N` estimates,

    .. math::

        \bar x = \frac1R\sum_r x_r,\qquad \mathrm{se} = \frac{s}{\sqrt R},\qquad
        k = t_{R-1}^{-1}\Big(1 - \frac{\alpha}{2N}\Big),

    where :math:`s` is the sample standard deviation and :math:`t_{R-1}` Student's law: a
    correct reference is outside :math:`\bar x \pm k\,\mathrm{se}` somewhere among the
    :math:`N` entries with probability at most about :math:`\alpha` (Bonferroni, Gaussian
    replicates).

    Returns
    -------
    mean, se : ndarray
        Shape ``samples.shape[1:]``.
    k : float
    """
    from scipy.special import stdtrit  # Student's quantile, without importing scipy.stats

    x = numeric_array(samples, "samples")
    if not np.all(np.isfinite(x)):
        raise ValueError("samples must be finite (no NaN or inf)")
    if x.ndim < 1 or x.shape[0] < 3:
        raise ValueError(
            f"samples must hold at least 3 replicates along axis 0, got shape {x.shape}"
        )
    if not (0.0 < familywise_alpha < 1.0):
        raise ValueError(f"familywise_alpha must lie in (0, 1), got {familywise_alpha}")
    R = x.shape[0]
    n = max(1, int(np.prod(x.shape[1:])))
    mean = x.mean(axis=0)
    se = x.std(axis=0, ddof=1) / np.sqrt(R)
    k = float(stdtrit(R - 1, 1.0 - familywise_alpha / (2.0 * n)))
    return mean, se, k
