"""The benchmark scripts (``benchmarks/``, not a package) loaded as modules, for their tests."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path
from types import ModuleType

FOLDER = Path(__file__).resolve().parents[1] / "benchmarks"


def benchmark(name: str) -> ModuleType:
    """``benchmarks/<name>.py`` as module ``name`` (registered in ``sys.modules``: a dataclass
    of its looks its module up there)."""
    spec = importlib.util.spec_from_file_location(name, FOLDER / f"{name}.py")
    assert spec is not None
    assert spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module
