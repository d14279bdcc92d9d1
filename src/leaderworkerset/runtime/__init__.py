"""The controller runtime (design.md §3, §4): client, watch-fed caches, work queue, controller loop,
event recorder, leader election and manager. Import the pieces from their modules; the most used
names are re-exported here.
"""

from leaderworkerset.runtime.cache import Cache
from leaderworkerset.runtime.client import ClientOptions, KubeClient, new_client
from leaderworkerset.runtime.clock import Clock, FakeClock, RealClock
from leaderworkerset.runtime.codecs import DictCodec, StructCodec
from leaderworkerset.runtime.controller import (
    Controller,
    Result,
    has_label,
    label_mapper,
    own_key,
    owner_mapper,
)
from leaderworkerset.runtime.errors import (
    ApiStatusError,
    is_already_exists,
    is_conflict,
    is_not_found,
)
from leaderworkerset.runtime.objects import ObjectKey, ObjectMeta
from leaderworkerset.runtime.reflector import FuncHandler, Informer
from leaderworkerset.runtime.store import Store, label_values
from leaderworkerset.runtime.workqueue import WorkQueue

__all__ = [
    "ApiStatusError",
    "Cache",
    "ClientOptions",
    "Clock",
    "Controller",
    "DictCodec",
    "FakeClock",
    "FuncHandler",
    "Informer",
    "KubeClient",
    "ObjectKey",
    "ObjectMeta",
    "RealClock",
    "Result",
    "Store",
    "StructCodec",
    "WorkQueue",
    "has_label",
    "is_already_exists",
    "is_conflict",
    "is_not_found",
    "label_mapper",
    "label_values",
    "new_client",
    "own_key",
    "owner_mapper",
]
