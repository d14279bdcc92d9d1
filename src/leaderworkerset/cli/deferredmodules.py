"""lightkube's generated models, loaded only when something reads them.

The manager takes its kubeconfig, in-cluster and exec-plugin authentication from lightkube's loader
(runtime/transport.py), and lightkube's package imports its whole client with it: its exceptions
module imports `lightkube.core.internal_models`, which imports the generated `lightkube.models.*`
and `lightkube.resources.*` modules (core_v1 alone is about 1.5 MiB of RSS). The manager's own
transport, caches and controllers never read a generated model.

`defer_generated_models()` makes those modules load on first use instead: importing one gives a
module whose code runs when one of its attributes is first read (`from lightkube.models.core_v1
import Pod` reads `Pod`, so it loads then). Unlike `importlib.util.LazyLoader`, reading the
module's `__spec__` does not load it: every later `import` statement reads `__spec__`, so with
LazyLoader lightkube's own imports of the models would load them all at once anyway.

`import_aiohttp_lean()` imports aiohttp without the system's CA bundle and with frozenlist's pure-Python
list:
- aiohttp builds two default client TLS contexts when `aiohttp.connector` is imported, and each loads the
  bundle (144 certificates, about 2.1 MiB of RSS for good). The manager never connects through them: its
  transport (runtime/transport.py) gives every connection the context lightkube's loader built for the
  cluster, and plain HTTP none. So the manager imports aiohttp while OpenSSL's default paths name no
  certificates; were a connection ever to fall back to aiohttp's default context, it would fail
  verification, never pass unverified.
- frozenlist's compiled list is C++, and loading it maps libstdc++ and libgcc_s into the process (about
  1 MiB of RSS). aiohttp uses frozenlist only for its signal lists (callbacks registered at start-up,
  read when a signal fires), never per request, so the pure-Python list, which frozenlist's own
  FROZENLIST_NO_EXTENSIONS selects, costs nothing that matters.
The environment is put back at once, so child processes and contexts made later see it as it was.
"""

from __future__ import annotations

import importlib.abc
import importlib.machinery
import os
import sys
import threading
import types
from collections.abc import Sequence
from typing import Any

GENERATED = ("lightkube.models.", "lightkube.resources.")
_LOAD_LOCK = threading.RLock()  # a module's code may read another deferred module


class _Deferred(types.ModuleType):
    """A module whose code has not run yet; reading a missing attribute runs it."""

    _real_loader: importlib.abc.Loader

    def __getattr__(self, name: str) -> Any:
        if name.startswith("__") and name.endswith("__") and name != "__all__":
            # The import system probes `__path__`, `__file__`, ... while it creates the module,
            # before it sets them; the generated code defines none of them (only `__all__`).
            raise AttributeError(name)
        with _LOAD_LOCK:
            if type(self) is _Deferred:  # not loaded by another thread meanwhile
                loader = self._real_loader
                # A plain module from here on, as if imported normally: a circular import during
                # its execution sees a partly initialised module, not another load.
                self.__class__ = types.ModuleType  # type: ignore[assignment]
                del self.__dict__["_real_loader"]
                if self.__spec__ is not None:
                    self.__spec__.loader = loader
                self.__loader__ = loader
                loader.exec_module(self)
        return getattr(self, name)


class _DeferringLoader(importlib.abc.Loader):
    def __init__(self, real: importlib.abc.Loader) -> None:
        self.real = real

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        module = _Deferred(spec.name)
        module._real_loader = self.real
        return module

    def exec_module(self, module: types.ModuleType) -> None:
        """Runs nothing now: the module's code runs when an attribute is first read."""


class _GeneratedModelsFinder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if not fullname.startswith(GENERATED):
            return None
        spec = importlib.machinery.PathFinder.find_spec(fullname, path, target)
        if spec is None or spec.loader is None or spec.submodule_search_locations is not None:
            return None  # packages load as usual: only leaf modules are deferred
        spec.loader = _DeferringLoader(spec.loader)
        return spec


def defer_generated_models() -> None:
    """Install the deferral for this process; call it before lightkube is first imported."""
    if not any(isinstance(finder, _GeneratedModelsFinder) for finder in sys.meta_path):
        sys.meta_path.insert(0, _GeneratedModelsFinder())


def loaded(module: types.ModuleType) -> bool:
    """Whether a (possibly deferred) module's code has run."""
    return type(module) is not _Deferred


# What aiohttp is imported with (see the module's docstring): OpenSSL's default CA file and directory
# (ssl.get_default_verify_paths()) name nothing; frozenlist picks its pure-Python list.
_LEAN_AIOHTTP_ENVIRONMENT = {
    "SSL_CERT_FILE": os.devnull,
    "SSL_CERT_DIR": os.devnull,
    "FROZENLIST_NO_EXTENSIONS": "1",
}


def import_aiohttp_lean() -> bool:
    """Import aiohttp with its default client contexts empty and frozenlist in pure Python (see the
    module's docstring); False when aiohttp was imported already, so nothing could be left out."""
    if "aiohttp.connector" in sys.modules:
        return False
    saved = {name: os.environ.get(name) for name in _LEAN_AIOHTTP_ENVIRONMENT}
    os.environ.update(_LEAN_AIOHTTP_ENVIRONMENT)  # devnull as a CA file holds none; as a directory, none
    try:
        import aiohttp.connector  # noqa: F401  # builds its default contexts and imports frozenlist now
    finally:
        for name, value in saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
    return True
