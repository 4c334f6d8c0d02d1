"""Checks moved out of Chapter 7: one sum computed twice.

Issue 20, item 1. Moved: "E[XY] from the parameters and from the tokens' second moment = 0"
(claim cor-07-xor). Σₖ πₖ yₖ mₖ and the cross block of the token mixture's second moment are
the same sum; the corollary's E[XY] = 0 is the four-term arithmetic of its proof, and the
chapter checks item 2 by the exact accuracies of fifty random linear rules and by their
accuracies on fresh queries.
"""

from __future__ import annotations

import numpy as np

from gmmlib.selection import token_mixture, xor_task


def test_xor_cross_moment_vanishes_both_ways():
    nu = 2.0
    xor_x, xor_labels = xor_task(offset=nu, gamma=np.sqrt(0.5))
    tokens = token_mixture(xor_x, xor_labels)
    direct = xor_x.weights @ (xor_labels * xor_x.means)
    cross = tokens.second_moment()[:2, 2]
    tol = 4 * np.finfo(float).eps * nu
    np.testing.assert_allclose(direct, 0.0, atol=tol)
    np.testing.assert_allclose(cross, 0.0, atol=tol)
    # near miss: the same moment for the separable labels sign(m_k1) is ν·(1, 0)
    separable = np.sign(xor_x.means[:, :1])
    sep_tokens = token_mixture(xor_x, separable)
    np.testing.assert_allclose(sep_tokens.second_moment()[:2, 2], [nu, 0.0], atol=tol)
    np.testing.assert_allclose(xor_x.weights @ (separable * xor_x.means), [nu, 0.0], atol=tol)
