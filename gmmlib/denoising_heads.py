"""Moved to :mod:`gmmlib.denoising.heads`. This path is kept for code written against earlier
editions: it re-exports the same objects."""

from gmmlib.denoising.heads import (
    carrier_direction,
    two_head_construction,
    one_head_construction,
    multihead_limit,
    multihead_finite_prompt_mse,
    ResidualLayer,
    residual_construction,
    residual_denoiser,
    residual_limit,
    key_bias_tokens,
    key_bias_parameters,
    key_bias_attention,
)

__all__ = [
    "carrier_direction",
    "two_head_construction",
    "one_head_construction",
    "multihead_limit",
    "multihead_finite_prompt_mse",
    "ResidualLayer",
    "residual_construction",
    "residual_denoiser",
    "residual_limit",
    "key_bias_tokens",
    "key_bias_parameters",
    "key_bias_attention",
]
