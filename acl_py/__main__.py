"""``python -m acl_py``: the acl-py command line (see :mod:`acl_py.cli`). ``main`` is also the
``acl-py`` console script's entry point (pyproject.toml)."""
import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
