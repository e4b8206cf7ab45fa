"""The module paths jev had before its modules moved into sub-packages by stage: each still imports, as the
very module it moved to, with a DeprecationWarning naming the new path, for one release."""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import importlib.util
import sys
import warnings
from types import ModuleType

MOVED = {  # old path -> new path
    "jev.aio": "jev.support.aio", "jev.quick": "jev.support.quick", "jev.validate": "jev.support.validate",
    "jev.transcript": "jev.model.transcript", "jev.canonical": "jev.model.canonical",
    "jev.markers": "jev.model.markers", "jev.scope": "jev.model.scope", "jev.checks": "jev.providers.checks",
    "jev.analysis": "jev.reading.analysis", "jev.history": "jev.reading.history", "jev.state": "jev.reading.state",
    "jev.cost": "jev.deciding.cost", "jev.policy": "jev.deciding.policy",
    "jev.token_target": "jev.deciding.token_target", "jev.decision": "jev.deciding.decision",
    "jev.questions": "jev.judges.questions", "jev.windows": "jev.judges.windows",
    "jev.apply": "jev.applying.apply", "jev.archived_pair": "jev.applying.archived_pair",
    "jev.compactor": "jev.running.compactor", "jev.records": "jev.running.records",
    "jev.service": "jev.running.service", "jev.scenario": "jev.running.scenario", "jev.usage": "jev.billing.usage",
}


class _OldPaths(importlib.abc.MetaPathFinder, importlib.abc.Loader):
    """Finds an old path (after every real finder has not) and loads it as the module it moved to."""

    def find_spec(self, name: str, path: object = None, target: object = None) -> importlib.machinery.ModuleSpec | None:
        return importlib.util.spec_from_loader(name, self) if name in MOVED else None

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> ModuleType:
        warnings.warn(f"{spec.name} moved to {MOVED[spec.name]}: import it from there (the old path goes after one release)",
                      DeprecationWarning, stacklevel=2)
        module = importlib.import_module(MOVED[spec.name])
        spec.loader_state = module.__spec__  # the import system sets `__spec__` to this one: `exec_module` undoes it
        return module

    def exec_module(self, module: ModuleType) -> None:
        """Nothing to run (the module it moved to is loaded): give it back its own spec."""
        module.__spec__ = module.__spec__.loader_state  # type: ignore[union-attr]


def install() -> None:
    """Put the old paths' finder last on `sys.meta_path`, once."""
    if not any(isinstance(finder, _OldPaths) for finder in sys.meta_path):
        sys.meta_path.append(_OldPaths())
