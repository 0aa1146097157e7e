"""Seeds derived from names, so that every random stream is reproducible and independent.

``derive_seed("branin-1-1-discrete", 3, "init")`` is the same integer on every machine and Python
version (it hashes the parts with SHA-256; Python's ``hash`` is salted per process).
"""

from __future__ import annotations

import hashlib

import torch


def derive_seed(*parts: object) -> int:
    """A 63-bit seed from any sequence of printable parts."""
    digest = hashlib.sha256("/".join(map(str, parts)).encode()).digest()
    return int.from_bytes(digest[:8], "little") >> 1


def generator(*parts: object) -> torch.Generator:
    """A CPU ``torch.Generator`` seeded with :func:`derive_seed` of ``parts``."""
    return torch.Generator().manual_seed(derive_seed(*parts))
