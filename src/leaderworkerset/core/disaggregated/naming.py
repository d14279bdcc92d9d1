"""Names and labels of the objects a DisaggregatedSet owns.

Every child is identified by (slice, revision, role): the child LeaderWorkerSet is
`<ds>-<slice>-<revision>-<role>`, its private Service appends `-prv`, and the role scaler of an
External role is `<ds>-<role>`. The length budget of these names is enforced at admission (the DS
webhook's generated-name rule), so nothing here truncates.
"""

from leaderworkerset.api import constants as c
from leaderworkerset.core.objects import Obj, labels_of

DEFAULT_SLICES = 1


def child_lws_name(ds_name: str, slice_index: int, revision: str, role: str) -> str:
    return f"{ds_name}-{slice_index}-{revision}-{role}"


def private_service_name(lws_name: str) -> str:
    return lws_name + c.DS_PRIVATE_SERVICE_SUFFIX


def scaler_name(ds_name: str, role: str) -> str:
    return f"{ds_name}-{role}"


def app_label(ds_name: str, slice_index: int, role: str) -> str:
    return f"{ds_name}-{slice_index}-{role}"


def child_labels(ds_name: str, slice_index: int, revision: str, role: str) -> dict[str, str]:
    """The five labels on a child LWS and its pod templates; they win over user labels."""
    return {
        c.LABEL_APP: app_label(ds_name, slice_index, role),
        c.LABEL_DS_ROLE: role,
        c.LABEL_DS_SLICE: str(slice_index),
        c.LABEL_DS_NAME: ds_name,
        c.LABEL_DS_REVISION: revision,
    }


def scaler_selector(ds_name: str, role: str) -> str:
    """`status.selector` of a role scaler: the role's leader pods over every slice and revision."""
    return (
        f"{c.LABEL_DS_NAME}={ds_name},{c.LABEL_DS_ROLE}={role},{c.LABEL_WORKER_INDEX}={c.LEADER_WORKER_INDEX}"
    )


def slice_count(ds: Obj) -> int:
    value = (ds.get("spec") or {}).get("slices")
    return DEFAULT_SLICES if value is None else int(value)


def role_names(ds: Obj) -> list[str]:
    return [str(role.get("name") or "") for role in (ds.get("spec") or {}).get("roles") or []]


def slice_of(obj: Obj) -> int | None:
    """The slice label as an integer; None when absent or not a decimal (legacy or foreign)."""
    value = labels_of(obj).get(c.LABEL_DS_SLICE, "")
    return int(value) if value.isdigit() else None


def role_of(obj: Obj) -> str:
    return labels_of(obj).get(c.LABEL_DS_ROLE, "")


def revision_of(obj: Obj) -> str:
    return labels_of(obj).get(c.LABEL_DS_REVISION, "")
