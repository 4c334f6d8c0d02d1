"""Input validation shared by gmmlib's modules.

Every public function of gmmlib checks its inputs with these helpers so that bad input
fails early with a ``ValueError`` (or ``TypeError``) that names the argument and says
what was expected.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = [
    "as_float_array",
    "check_mixture",
    "check_points",
    "check_queries",
    "check_U",
    "check_V",
    "check_matrix",
    "check_rng",
    "check_positive",
]


def as_float_array(x: Any, name: str, ndim: int | tuple[int, ...] | None = None) -> np.ndarray:
    """Convert ``x`` to a finite float64 array, checking its number of dimensions.

    Parameters
    ----------
    x : array_like
        The value to convert.
    name : str
        The argument's name, used in error messages.
    ndim : int or tuple of int, optional
        The accepted number(s) of dimensions.

    Raises
    ------
    TypeError
        If ``x`` cannot be converted to a numeric array.
    ValueError
        If it has the wrong number of dimensions or holds NaN or infinite values.
    """
    if hasattr(x, "detach") and hasattr(x, "cpu"):  # a torch tensor
        x = x.detach().cpu().numpy()
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        raise TypeError(f"{name} must be a numeric array, got {type(x).__name__}") from exc
    if ndim is not None:
        allowed = (ndim,) if isinstance(ndim, int) else tuple(ndim)
        if arr.ndim not in allowed:
            want = " or ".join(f"{k}-D" for k in allowed)
            raise ValueError(f"{name} must be {want}, got an array of shape {arr.shape}")
    if not np.all(np.isfinite(arr)):
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return arr


def check_matrix(x: Any, name: str, shape: tuple[int | None, int | None]) -> np.ndarray:
    """Return ``x`` as a finite float64 matrix of the given shape (``None`` = any size)."""
    arr = as_float_array(x, name, ndim=2)
    for axis, want in enumerate(shape):
        if want is not None and arr.shape[axis] != want:
            expected = tuple("*" if s is None else s for s in shape)
            raise ValueError(f"{name} must have shape {expected}, got {arr.shape}")
    return arr


def check_rng(rng: Any, name: str = "rng") -> np.random.Generator:
    """Return a numpy ``Generator`` from a Generator or an integer seed."""
    if isinstance(rng, np.random.Generator):
        return rng
    if isinstance(rng, (int, np.integer)) and not isinstance(rng, bool):
        if rng < 0:
            raise ValueError(f"{name} must be a non-negative integer seed, got {rng}")
        return np.random.default_rng(int(rng))
    raise TypeError(f"{name} must be a numpy Generator or an integer seed, got {type(rng).__name__}")


def check_positive(x: Any, name: str, *, integer: bool = False, allow_zero: bool = False) -> Any:
    """Check that a scalar is positive (or non-negative) and, optionally, an integer."""
    if integer:
        if isinstance(x, bool) or not isinstance(x, (int, np.integer)):
            raise TypeError(f"{name} must be an integer, got {type(x).__name__}")
    else:
        if isinstance(x, bool) or not isinstance(x, (int, float, np.integer, np.floating)):
            raise TypeError(f"{name} must be a number, got {type(x).__name__}")
        if not np.isfinite(x):
            raise ValueError(f"{name} must be finite, got {x}")
    if x < 0 or (x == 0 and not allow_zero):
        bound = "non-negative" if allow_zero else "positive"
        raise ValueError(f"{name} must be {bound}, got {x}")
    return x


def check_mixture(mixture: Any, name: str = "mixture") -> Any:
    """Return ``mixture`` if it is a :class:`~gmmlib.mixtures.GaussianMixture`, else raise ``TypeError``."""
    from .mixtures import GaussianMixture  # local: mixtures imports this module

    if not isinstance(mixture, GaussianMixture):
        raise TypeError(f"{name} must be a GaussianMixture, got {type(mixture).__name__}")
    return mixture


def check_queries(queries: Any, d: int, name: str = "queries") -> tuple[np.ndarray, bool]:
    """Queries as an (n, d) float array, and whether a single (d,) query was given."""
    Q = as_float_array(queries, name, ndim=(1, 2))
    single = Q.ndim == 1
    Q = Q[None, :] if single else Q
    if Q.shape[1] != d:
        raise ValueError(f"{name} must have shape (n, {d}) to match the dimension {d}, got {Q.shape}")
    return Q, single


def check_points(Z: Any, d: int, name: str = "Z") -> np.ndarray:
    """Points as an (n, d) float array (exactly two dimensions)."""
    Zarr = as_float_array(Z, name, ndim=2)
    if Zarr.shape[1] != d:
        raise ValueError(f"{name} must have shape (n, {d}), got {Zarr.shape}")
    return Zarr


def check_U(U: Any, d: int, name: str = "U") -> np.ndarray:
    """An interaction matrix of shape (d, d)."""
    U = as_float_array(U, name, ndim=2)
    if U.shape != (d, d):
        raise ValueError(f"{name} must have shape ({d}, {d}), got {U.shape}")
    return U


def check_V(V: Any, d: int, name: str = "V") -> np.ndarray:
    """A value matrix of shape (p, d)."""
    V = as_float_array(V, name, ndim=2)
    if V.shape[1] != d:
        raise ValueError(f"{name} must have shape (p, {d}), got {V.shape}")
    return V
