"""The book's build machinery (Sphinx extensions, ``_toc.yml``, the runner), apart from gmmlib."""
