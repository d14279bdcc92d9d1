"""The controller runtime, with client-go's and controller-runtime's semantics (docs/architecture.md,
"One event, from the watch to the write"). Import the pieces from their modules; the most used names
are re-exported here.

* the API: `client` (dict-level calls, server-side apply) over `transport` (aiohttp); `resources`
  (where each kind lives), `errors` (Status objects and their predicates), `objects` (keys, metadata);
* the caches: `listwatch` (list and watch calls), `reflector` (an informer), `store` (a kind's
  indexed cache), `cache` (the manager's informers), `codecs` and `projections` (what is kept);
* the loop: `workqueue`, `ratelimit`, `controller` (the workers), `clock` (real and fake time);
* around it: `manager` (start order, leader election via `leaderelection`, shutdown), `events` (the
  recorder), `metrics` and `metricsserver`, `probes` (/healthz, /readyz), `logging`, `settings` (the
  Configuration turned into options), `tlsconfig` and `certificates` (TLS), `childjob` (work handed
  to a child process), `heap` (free pages handed back to the kernel).

    client = new_client(ClientOptions(kubeconfig=path, qps=500, burst=500))
    mgr = Manager(client, ManagerOptions(election_namespace="lws-system"))
    lws = mgr.cache.informer(LEADERWORKERSETS, DictCodec())
    pods = mgr.cache.informer(PODS, POD_CODEC, label_selector=c.LABEL_SET_NAME,
                              indexers={"set": index_by_namespaced_labels(c.LABEL_SET_NAME)})
    recorder = mgr.event_recorder(c.EVENT_COMPONENT_LWS)

    async def reconcile(key: ObjectKey) -> Result | None:
        obj = lws.store.get(key)                   # cached, read-only
        if obj is None:
            return None
        members = pods.store.by_index("set", label_values(key.namespace, key.name))
        await client.apply(STATEFULSETS, desired)  # forced server-side apply, field manager "lws"
        recorder.normal(object_ref(obj), reason, action, note)
        return Result(requeue_after=30)           # or raise: retried with per-key backoff

    ctl = Controller("leaderworkerset", reconcile, max_concurrent=4, metrics=mgr.metrics)
    ctl.watch(lws)                                             # For()
    ctl.watch(pods, label_mapper(c.LABEL_SET_NAME))            # map pod -> owning LWS
    mgr.add_controller(ctl)                                    # leader only
    mgr.add_runnable("webhooks", webhook_server.run)           # every replica
    await mgr.run()                                            # until SIGTERM / lost lease
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
