"""devlint: a linter and auto-fixer for PyTorch device bugs."""

__version__ = "0.1.0"
