r"""The landscape of one softmax head on the LDA task: its landmarks (Chapters 4–6).

The best risk of linear attention (the ceiling a softmax head beats), the distances to the two
families of Bayes minimisers, and the diverging minimising sequence :math:`\zeta_\rho`. The task,
the predictor and the risk are in :mod:`gmmlib.lda.task`; the dynamics in
:mod:`gmmlib.lda.dynamics`.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from scipy.optimize import minimize

from .._validation import as_float_array, check_positive, check_type
from .task import RISK_TOLERANCE, EffectiveParams, LDAModel, population_risk_grad

__all__ = ["best_linear_attention", "minimiser_distances", "zeta_sequence"]


def best_linear_attention(model: LDAModel, n_points: int = 40,
                          start: Any | None = None) -> tuple[np.ndarray, float]:
    r"""The best logistic risk of linear attention: :math:`R_{\mathrm{lin}} = \min_w \mathbb
    E\,\ell(Yw^\top X)`.

    Implements :prf:ref:`prop-04-linear` (Chapter 4): linear attention's limit on the query
    :math:`(x, 0)` is :math:`w_{\mathrm{lin}}^\top x` with :math:`w_{\mathrm{lin}}^\top =
    (V\,\mathbb E[ZZ^\top]\,U)_{d+1,1:d}`, any :math:`w_{\mathrm{lin}}` being reachable; the problem
    is a convex logistic regression without intercept, solved by BFGS (scipy) on the quadrature risk
    and its exact gradient, then polished by three Newton steps (gradient norm ~1e-15). The search
    starts at ``start`` (default :math:`w = 0`, which knows nothing of :math:`w^*`); the rule's
    convergence (see :func:`gmmlib.lda.task.population_risk`) is checked at the minimiser, not at
    the trial points of the line searches. Returns ``(w_lin, risk)``.
    """
    model = check_type(model, LDAModel, "model")
    d = model.dim
    x0 = np.zeros(d) if start is None else as_float_array(start, "start", ndim=1)
    if x0.shape != (d,):
        raise ValueError(f"start must have shape ({d},), got {x0.shape}")

    def fun(beta, tol=None):
        eff = EffectiveParams(beta, 0.0, 0.0, np.zeros(d))
        risk, g = population_risk_grad(model, eff, n_points, tol=tol)
        return risk, g.w

    res = minimize(fun, x0, jac=True, method="BFGS", options={"gtol": 1e-12, "maxiter": 500})
    beta = res.x
    for _ in range(3):  # Newton polish (Hessian by central differences of the exact gradient)
        g = fun(beta)[1]
        h = 1e-5 * max(1.0, float(np.linalg.norm(beta)))
        H = np.stack([(fun(beta + h * e)[1] - fun(beta - h * e)[1]) / (2 * h)
                      for e in np.eye(d)], axis=1)
        beta = beta - np.linalg.solve(0.5 * (H + H.T), g)
    return beta, float(fun(beta, RISK_TOLERANCE)[0])


def minimiser_distances(model: LDAModel, eff: Any) -> tuple[float, float]:
    r"""Euclidean distances in :math:`(w,b,r,s)` to the two minimiser families.

    :math:`E_1 = \{(w^*, b^*, 0, s)\}`: :math:`d_1^2 = \|w-w^*\|^2 + (b-b^*)^2 + r^2`. :math:`E_2 =
    \{(w^*, b^* - \rho\sigma(s_0), \rho, 0)\}`: :math:`d_2^2 = \|w-w^*\|^2 + \|s\|^2 +
    \min_\rho[(b-b^*+\rho\sigma(s_0))^2 + (r-\rho)^2]`, the last minimum being :math:`(b - b^* +
    r\sigma(s_0))^2/(1+\sigma(s_0)^2)`.
    """
    model = check_type(model, LDAModel, "model")
    w, b, r, s = EffectiveParams.checked(eff, model.dim)
    w_star, b_star = model.bayes_params()
    q = model.pi_pos
    dw2 = float(np.sum((w - w_star) ** 2))
    d1 = np.sqrt(dw2 + (b - b_star) ** 2 + r**2)
    d2 = np.sqrt(dw2 + float(s @ s) + (b - b_star + r * q) ** 2 / (1 + q * q))
    return float(d1), float(d2)


def zeta_sequence(model: LDAModel, c: Any, rho: float) -> EffectiveParams:
    r"""The diverging minimising sequence :math:`\zeta_\rho = (w^* - \sigma'(s_0)c,\ b^* -
    \sigma(s_0)\rho,\ \rho,\ c/\rho)`.

    Implements :prf:ref:`prop-05-zeta` (Chapter 5; Proposition 3.4 of Gabet et al., who write
    :math:`R` for :math:`\rho`). Its predictor is :math:`f^* + \rho[\sigma(s_0 + c^\top x/\rho) -
    \sigma(s_0) - \sigma'(s_0)c^\top x/\rho] = f^* + O(1/\rho)`.
    """
    model = check_type(model, LDAModel, "model")
    c = as_float_array(c, "c", ndim=1)
    check_positive(rho, "rho")
    w_star, b_star = model.bayes_params()
    q = model.pi_pos
    return EffectiveParams(w_star - q * (1 - q) * c, b_star - q * rho, float(rho), c / rho)
