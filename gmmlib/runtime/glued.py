"""Numbers computed by a cell, made available to the text (myst-nb's glue)."""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["glue"]


def glue(name: str, value: Any) -> None:
    r"""Make a computed number available to the text as ``{glue:text}`name:.3g```.

    A thin wrapper of myst-nb's ``glue`` (``display=False``): numpy scalars become plain
    Python numbers, so that the role's format specification applies. Outside the book's
    build (Colab, Binder without myst-nb) it does nothing: the number is in the cell's output.
    """
    if not isinstance(name, str) or not name:
        raise ValueError("name must be a non-empty string")
    arr = np.asarray(value.detach().cpu().numpy() if hasattr(value, "detach") else value)
    if arr.ndim == 0 and arr.dtype.kind in "biuf":
        value = int(arr) if arr.dtype.kind in "biu" else float(arr)
    try:
        from myst_nb import glue as _myst_glue
    except ImportError:  # pragma: no cover - outside the book's build
        return
    _myst_glue(name, value, display=False)
