"""Classification with one softmax head: linear discriminant analysis in context (Chapters 4–6).

Modules
-------
task      : the task, the predictor, the risk (:class:`LDAModel`, :class:`LDABlocks`, ...)
landscape : its landmarks: the best linear rule, the minimisers, zeta_rho (Chapters 4–6)
dynamics  : its gradient flow, population descent, SGD chains and their floors (Chapter 6)
autograd  : torch versions (autograd reference risk, LDABlocksModule) for Chapters 5 and 6

The names of :mod:`gmmlib.lda.task` are importable from here too (``from gmmlib.lda import
LDAModel``); the other modules are imported by name. Importing this package does not import
torch (only :mod:`gmmlib.lda.autograd` does).
"""

from .task import (
    LDAModel,
    EffectiveParams,
    LDABlocks,
    logistic_loss,
    effective_params,
    effective_predictor,
    construction_r0,
    construction_s0,
    population_risk,
    population_risk_grad,
    attention_risk_grad,
    attention_jacobian,
    excess_risk_estimate,
)

__all__ = [
    "LDAModel",
    "EffectiveParams",
    "LDABlocks",
    "logistic_loss",
    "effective_params",
    "effective_predictor",
    "construction_r0",
    "construction_s0",
    "population_risk",
    "population_risk_grad",
    "attention_risk_grad",
    "attention_jacobian",
    "excess_risk_estimate",
]
