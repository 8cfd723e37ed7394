"""The containers of modules, as PyTorch's: ``Sequential``, ``ModuleList``, ``ModuleDict``."""

from __future__ import annotations

from collections import OrderedDict
from typing import Any, Dict, Iterable, Iterator, Optional, Tuple, Union

from .module import Module


class Sequential(Module):
    """Modules applied in order: ``Sequential(a, b, c)`` or ``Sequential(OrderedDict(...))``."""

    def __init__(self, *args: Any) -> None:
        super().__init__()
        if len(args) == 1 and isinstance(args[0], OrderedDict):
            for name, m in args[0].items():
                self.add_module(name, m)
        else:
            for i, m in enumerate(args):
                self.add_module(str(i), m)

    def forward(self, input: Any) -> Any:
        for m in self._modules.values():
            input = m(input)
        return input

    def __getitem__(self, idx: Union[int, slice]) -> Any:
        items = list(self._modules.items())
        if isinstance(idx, slice):
            return Sequential(OrderedDict(items[idx]))
        return items[idx][1]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())

    def append(self, module: Module) -> "Sequential":
        """Adds ``module`` at the end."""
        self.add_module(str(len(self)), module)
        return self


class ModuleList(Module):
    """A list of modules, registered (their parameters are the list's)."""

    def __init__(self, modules: Optional[Iterable[Module]] = None) -> None:
        super().__init__()
        for m in modules or []:
            self.append(m)

    def append(self, module: Module) -> "ModuleList":
        """Adds ``module`` at the end."""
        self.add_module(str(len(self)), module)
        return self

    def extend(self, modules: Iterable[Module]) -> "ModuleList":
        """Adds each of ``modules``."""
        for m in modules:
            self.append(m)
        return self

    def __getitem__(self, idx: int) -> Module:
        return list(self._modules.values())[idx]

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[Module]:
        return iter(self._modules.values())


class ModuleDict(Module):
    """A dict of modules, registered under their keys."""

    def __init__(self, modules: Optional[Dict[str, Module]] = None) -> None:
        super().__init__()
        for k, m in (modules or {}).items():
            self.add_module(k, m)

    def __getitem__(self, key: str) -> Module:
        return self._modules[key]

    def __setitem__(self, key: str, module: Module) -> None:
        self.add_module(key, module)

    def __len__(self) -> int:
        return len(self._modules)

    def __iter__(self) -> Iterator[str]:
        return iter(self._modules)

    def keys(self) -> Iterable[str]:
        """The keys."""
        return self._modules.keys()

    def values(self) -> Iterable[Module]:
        """The modules."""
        return self._modules.values()

    def items(self) -> Iterable[Tuple[str, Module]]:
        """(key, module) pairs."""
        return self._modules.items()
