"""The package's version, at the bottom floor so that any layer may report it."""

__version__ = "0.1.0"
