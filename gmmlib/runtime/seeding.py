r"""One seed for the whole book, and named random streams derived from it.

Every random draw of the book comes from a generator made here::

    from gmmlib.runtime import Seeds
    seeds = Seeds(chapter=1)
    rng = seeds.rng("prompts")           # numpy Generator for the chapter's prompts
    torch_seed = seeds.int("training")   # an int, for APIs that take an int seed

A stream is fixed by three things: the book's base seed, the chapter and the stream's
name, mixed by :class:`numpy.random.SeedSequence` (so streams are independent and
adding one does not shift the others). The base seed is :data:`DEFAULT_SEED` unless the
environment variable ``GMMLIB_SEED`` sets another integer; ``make seeds`` runs every
chapter under several base seeds to show that no check depends on a lucky draw.
"""

from __future__ import annotations

import os
import zlib
from dataclasses import dataclass

import numpy as np

__all__ = ["DEFAULT_SEED", "SEED_ENV", "Seeds", "base_seed"]

#: The base seed of the published build.
DEFAULT_SEED = 2026
#: The environment variable that overrides it (``make seeds`` sets it).
SEED_ENV = "GMMLIB_SEED"


def base_seed() -> int:
    """The book's base seed: ``$GMMLIB_SEED`` if set (a non-negative integer), else
    :data:`DEFAULT_SEED`."""
    raw = os.environ.get(SEED_ENV, "").strip()
    if not raw:
        return DEFAULT_SEED
    try:
        value = int(raw)
    except ValueError:
        raise ValueError(f"{SEED_ENV} must be a non-negative integer, got {raw!r}") from None
    if value < 0:
        raise ValueError(f"{SEED_ENV} must be a non-negative integer, got {value}")
    return value


@dataclass(frozen=True)
class Seeds:
    """The named random streams of one chapter.

    Parameters
    ----------
    chapter : int
        The chapter's number (0–10); it separates the chapters' streams.
    base : int or None, optional
        The base seed; by default :func:`base_seed` (the environment's, or the book's).
    """

    chapter: int
    base: int | None = None

    def __post_init__(self) -> None:
        if (
            isinstance(self.chapter, bool)
            or not isinstance(self.chapter, (int, np.integer))
            or self.chapter < 0
        ):
            raise TypeError(f"chapter must be a non-negative int, got {self.chapter!r}")
        if self.base is None:
            object.__setattr__(self, "base", base_seed())
        elif (
            isinstance(self.base, bool)
            or not isinstance(self.base, (int, np.integer))
            or self.base < 0
        ):
            raise TypeError(f"base must be a non-negative int or None, got {self.base!r}")

    def sequence(self, name: str) -> np.random.SeedSequence:
        """The :class:`~numpy.random.SeedSequence` of the stream ``name``: entropy (base, chapter,
        crc32(name))."""
        if not isinstance(name, str) or not name:
            raise TypeError(f"name must be a non-empty string naming the stream, got {name!r}")
        return np.random.SeedSequence(
            [int(self.base), int(self.chapter), zlib.crc32(name.encode())]
        )

    def rng(self, name: str) -> np.random.Generator:
        """A fresh numpy generator for the stream ``name`` (the same name gives the same draws)."""
        return np.random.default_rng(self.sequence(name))

    def int(self, name: str) -> int:
        """A 31-bit integer seed for the stream ``name`` (for torch or for APIs that take an
        int)."""
        return int(self.sequence(name).generate_state(1, np.uint32)[0] >> 1)
