"""The homework's tests share one build of every chapter's homework (the fixture ``built``,
defined with its cache in test_assignments.py): the JupyterLab test takes its chapter from it."""

from .test_assignments import built  # noqa: F401
