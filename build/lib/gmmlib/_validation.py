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
    "as_tensor",
    "check_covariances",
    "check_points",
    "check_queries",
    "check_U",
    "check_V",
    "check_matrix",
    "check_rng",
    "check_positive",
    "check_type",
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
    raise TypeError(
        f"{name} must be a numpy Generator or an integer seed, got {type(rng).__name__}"
    )


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


#: Relative tolerance for symmetry and for the sign of the smallest eigenvalue of a covariance.
SYM_TOL = 1e-10


def as_tensor(x: Any, name: str, dtype: Any = None):
    """Convert ``x`` to a finite floating torch tensor (of ``dtype`` if given); torch loads here.

    A tensor keeps its autograd history; an array becomes a tensor that owns its data.
    """
    import torch

    if isinstance(x, torch.Tensor):
        t = x if dtype is None else x.to(dtype)
    else:
        arr = as_float_array(x, name)
        if not arr.flags.writeable:  # read-only (a frozen mixture's means): torch needs a copy
            arr = arr.copy()
        t = torch.from_numpy(arr)
        if dtype is not None:
            t = t.to(dtype)
    if not t.is_floating_point():
        t = t.to(torch.get_default_dtype())
    if not bool(torch.isfinite(t.detach()).all()):
        raise ValueError(f"{name} must be finite (no NaN or inf)")
    return t


def check_covariances(covs: Any, name: str = "covs", *, definite: bool = False) -> np.ndarray:
    r"""The one validator of covariance matrices: a (d, d) matrix or a (K, d, d) stack.

    Each matrix must be symmetric to ``SYM_TOL`` relative to its largest entry, and positive
    semi-definite (``definite=False``: eigenvalues :math:`\ge -\text{SYM\_TOL}\cdot` scale,
    point masses allowed) or positive definite (``definite=True``: eigenvalues :math:`> 0`).
    Returns the exactly symmetrised float64 array; raises ``ValueError`` naming ``name``, the
    component and the offending asymmetry or eigenvalue.
    """
    C = as_float_array(covs, name, ndim=(2, 3))
    if C.shape[-1] != C.shape[-2] or C.shape[-1] == 0:
        raise ValueError(
            f"{name} must hold square (d, d) matrices with d >= 1, got shape {C.shape}"
        )
    stack = C if C.ndim == 3 else C[None]
    scale = max(1.0, float(np.max(np.abs(stack)))) if stack.size else 1.0
    gap = (
        np.max(np.abs(stack - np.swapaxes(stack, -1, -2)), axis=(-1, -2))
        if stack.size
        else np.zeros(1)
    )
    if np.max(gap) > SYM_TOL * scale:
        where = f"; component {int(np.argmax(gap))}" if C.ndim == 3 else ""
        raise ValueError(
            f"{name} must be symmetric{where}: it differs from its transpose by {np.max(gap):.3g}"
        )
    sym = 0.5 * (stack + np.swapaxes(stack, -1, -2))
    low = np.linalg.eigvalsh(sym).min(axis=-1)
    bad = low <= 0 if definite else low < -SYM_TOL * scale
    if np.any(bad):
        k = int(np.argmin(low))
        where = f"; component {k}" if C.ndim == 3 else ""
        kind = "positive definite" if definite else "positive semi-definite"
        raise ValueError(f"{name} must be {kind}{where}: it has eigenvalue {low[k]:.3g}")
    return sym if C.ndim == 3 else sym[0]


def check_queries(queries: Any, d: int, name: str = "queries") -> tuple[np.ndarray, bool]:
    """Queries as an (n, d) float array, and whether a single (d,) query was given."""
    Q = as_float_array(queries, name, ndim=(1, 2))
    single = Q.ndim == 1
    Q = Q[None, :] if single else Q
    if Q.shape[1] != d:
        raise ValueError(
            f"{name} must have shape (n, {d}) to match the dimension {d}, got {Q.shape}"
        )
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


def check_type(x: Any, cls: type, name: str) -> Any:
    """Return ``x`` if it is an instance of ``cls``; else raise ``TypeError`` naming both."""
    if not isinstance(x, cls):
        raise TypeError(f"{name} must be a {cls.__module__}.{cls.__name__}, got {type(x).__name__}")
    return x
