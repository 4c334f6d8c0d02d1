"""MathJax served with the book: the pinned wheel's MathJax 3 copied into ``_static/``.

``mathjax_path`` in ``_config.yml`` (``sphinx.config``) names a file under the HTML's
``_static/`` (Sphinx's reading of a relative path); when the HTML builder starts, this copies
that bundle from the installed django-static-mathjax wheel, with what it loads on a reader's
demand (TeX extensions, the CHTML fonts, the menu, accessibility and speech), so a built page
reads offline. Nothing of MathJax is committed: it comes from the installed package, whose
version ``requirements.txt`` pins. MathJax's configuration (``mathjax3_config``, which
myst-parser extends) is Sphinx's and unchanged.
"""

import shutil
from pathlib import Path, PurePosixPath
from typing import Any

from sphinx.application import Sphinx
from sphinx.config import Config
from sphinx.errors import ConfigError

#: what a MathJax 3 combined component loads on demand, under its es5 folder: the TeX
#: extensions (autoload, \require), the CHTML output's fonts, the menu and its accessibility
#: options (assistive MathML, the explorer and its speech rule engine)
ON_DEMAND = ("input", "output/chtml", "ui", "a11y", "sre", "adaptors")


def es5() -> Path:
    """The ``es5`` folder of the installed MathJax wheel (django-static-mathjax)."""
    try:
        import mathjax  # django-static-mathjax: MathJax under mathjax/static/mathjax/
    except ImportError as exc:
        raise ConfigError("MathJax is served with the book from the django-static-mathjax "
                          "package, which is not installed: run `make install`") from exc
    return Path(mathjax.__file__).parent / "static" / "mathjax" / "es5"


def local_path(config: Config) -> PurePosixPath | None:
    """``mathjax_path`` when it names a copy under ``_static/`` (not a URL), else ``None``."""
    path = str(config.mathjax_path or "")
    if not path or "://" in path or path.startswith(("//", "/")):
        return None
    return PurePosixPath(path)


def _check(app: Sphinx, config: Config) -> None:
    path = local_path(config)
    if path is not None and not (es5() / path.name).is_file():
        raise ConfigError(f"mathjax_path = {str(path)!r}: the MathJax wheel has no "
                          f"{path.name} (its bundles: tex-mml-chtml.js, tex-chtml.js, …)")


def copy_mathjax(outdir: Path, path: PurePosixPath) -> Path:
    """Copy the bundle ``path.name`` and what it loads on demand to ``outdir/_static/<path>``'s
    folder; files already there with the same size are kept (a rebuild copies nothing)."""
    source, target = es5(), Path(outdir, "_static", *path.parent.parts)
    names = [Path(path.name)] + [f.relative_to(source) for part in ON_DEMAND
                                 for f in sorted((source / part).rglob("*")) if f.is_file()]
    for name in names:
        dest = target / name
        if not dest.is_file() or dest.stat().st_size != (source / name).stat().st_size:
            dest.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(source / name, dest)
    return target / path.name


def _copy(app: Sphinx) -> None:
    # before the pages are written: Sphinx then gives the script its checksum (``?v=…``)
    path = local_path(app.config)
    if path is not None and app.builder.format == "html":
        copy_mathjax(Path(app.outdir), path)


def setup(app: Sphinx) -> dict[str, Any]:
    app.setup_extension("sphinx.ext.mathjax")
    app.connect("config-inited", _check)
    app.connect("builder-inited", _copy)
    return {"version": "1.0", "parallel_read_safe": True, "parallel_write_safe": True}
