"""devflow: find, fix and explain PyTorch cross-device errors."""

__version__ = "0.1.0"
