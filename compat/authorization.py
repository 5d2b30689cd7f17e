"""The broker's authorizer: the stored ACLs enforced on requests when ``authorizer.class.name`` names Kafka's
``StandardAuthorizer`` (empty, the default, checks nothing, as a Kafka broker without an authorizer).

`BrokerAuthorizer` holds a `core.acls.authorizer.Authorizer` over the ``acls`` projection, rebuilt when an ACL
event commits, and remembers its decisions per principal, host, operation and resource until then: a Produce asks
once per topic, and a dict lookup is what that costs. The handlers ask through `allowed` and `allowed_any`, which
answer ``True`` at once when there is no authorizer; whole-request checks (a group's, the cluster's, a
transactional id's) are `compat.authorization_rules`' table, run before the handler.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

from logwright.core.acls.acls import AclBinding
from logwright.core.acls.authorizer import Authorizer, AuthorizerSettings
from logwright.core.acls.bindings import CLUSTER_NAME, ResourceType
from logwright.core.errors import InvalidConfig
from logwright.core.events.acls import ACL_EVENT_TYPES
from logwright.eventstore.interface import LoggedEvent

if TYPE_CHECKING:
    from logwright.compat.broker import Broker
    from logwright.compat.registry import RequestContext

STANDARD_AUTHORIZER = "org.apache.kafka.metadata.authorizer.StandardAuthorizer"

DECISIONS_KEPT = 100_000
"""Decisions remembered between ACL changes; past it they are forgotten at once (a client naming a million
topics cannot grow the memory)."""


class BrokerAuthorizer:
    def __init__(self, broker: Broker) -> None:
        self._broker = broker
        self.settings = AuthorizerSettings.parse(broker.broker_config("super.users"),
                                                 broker.broker_config("allow.everyone.if.no.acl.found"))
        self._authorizer: Authorizer | None = None
        self._decided: dict[tuple[str, str, int, int, str], bool] = {}
        self.generation = 0
        """Counts the ACL changes (and reloads): what was decided under an older generation may no longer hold."""
        broker.store.add_commit_listener(self._changed, ACL_EVENT_TYPES)
        broker.store.add_reload_listener(self._forget)

    @classmethod
    def configured(cls, broker: Broker) -> BrokerAuthorizer | None:
        """The authorizer ``authorizer.class.name`` asks for; ``None`` when it is empty. Any other class is refused:
        a broker that silently enforced nothing where its operator asked for an authorizer would be open."""
        name = broker.broker_config("authorizer.class.name").strip()
        if not name:
            return None
        if name != STANDARD_AUTHORIZER:
            raise InvalidConfig(f"authorizer.class.name={name!r} is not served: use {STANDARD_AUTHORIZER} (or leave it "
                             "empty for no authorizer)")
        return cls(broker)

    def _changed(self, events: Sequence[LoggedEvent]) -> None:
        self._forget()

    def _forget(self) -> None:
        self.generation += 1
        self._authorizer = None
        self._decided.clear()

    @property
    def authorizer(self) -> Authorizer:
        if self._authorizer is None:
            bindings = [binding for binding in self._broker.store.entities("acls").values()
                        if isinstance(binding, AclBinding)]
            self._authorizer = Authorizer(bindings, self.settings)
        return self._authorizer

    def allows(self, principal: str, host: str, operation: int, resource_type: int, name: str) -> bool:
        key = (principal, host, operation, resource_type, name)
        decided = self._decided.get(key)
        if decided is None:
            if len(self._decided) >= DECISIONS_KEPT:
                self._decided.clear()
            decided = self._decided[key] = self.authorizer.authorize(principal, host, operation, resource_type, name)
        return decided


def principal(context: RequestContext) -> str:
    """The request's principal as ACLs name it: ``User:alice``, ``User:ANONYMOUS`` on a PLAINTEXT listener."""
    authentication = context.authentication
    if authentication is None:
        return "User:ANONYMOUS"
    return f"{authentication.principal_type}:{authentication.principal}"


def allowed(context: RequestContext, operation: int, resource_type: int, name: str) -> bool:
    """Whether the request's principal may perform ``operation`` on the named resource (always, without an
    authorizer)."""
    authorizer = context.broker.authorizer
    if authorizer is None:
        return True
    return authorizer.allows(principal(context), context.client_host, operation, resource_type, name)


def allowed_on_cluster(context: RequestContext, operation: int) -> bool:
    return allowed(context, operation, ResourceType.CLUSTER, CLUSTER_NAME)


def allowed_any(context: RequestContext, operation: int, resource_type: int) -> bool:
    """Kafka's ``authorizeByResourceType``: the operation allowed on some resource of the type."""
    authorizer = context.broker.authorizer
    if authorizer is None:
        return True
    return authorizer.authorizer.authorize_any(principal(context), context.client_host, operation, resource_type)


def operations(context: RequestContext, resource_type: int, name: str, supported: int) -> int:
    """The bits of ``supported`` the principal may perform on the resource (all of them without an authorizer):
    what a describing API reports as authorized operations."""
    authorizer = context.broker.authorizer
    if authorizer is None:
        return supported
    return authorizer.authorizer.operations(principal(context), context.client_host, resource_type, name, supported)
