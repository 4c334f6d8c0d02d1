"""The book's build machinery: Sphinx extensions, the one reading of ``_toc.yml``, the runner.

Installed with the book (``pip install -e .``) beside gmmlib but apart from it: a reader who
runs a chapter in Colab installs gmmlib and needs none of this. ``_config.yml``, the Makefile
and the tests import it by name; it never puts anything on ``sys.path``.
"""
