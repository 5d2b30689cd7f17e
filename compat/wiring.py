"""Where a broker is composed: the shared state and the coordinators behind the group and transaction APIs.

`compose_broker` is the one place the coordinators are built, each with what it needs from the plugins, so
the running server (`logwright.app`) and in-process test harnesses get the same broker. Handlers reach a
coordinator through `Broker.coordinators` (or the accessor function each coordinator module keeps).

Coordinators are built with the broker, so what they restore from the store (members' sessions, open
transactions, locks) counts from the broker clock at start-up, and their timers wait on that clock.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol

from logwright.compat.broker import Broker, BrokerSettings
from logwright.compat.coordinators.consumer_coordinator import ConsumerCoordinator
from logwright.compat.coordinators.deadline_timer import DeadlineTimer
from logwright.compat.coordinators.group_coordinator import GroupCoordinator
from logwright.compat.coordinators.group_expiry import GroupExpiry
from logwright.compat.coordinators.log_cleaner import LogCleaner
from logwright.compat.coordinators.log_retention import LogRetention
from logwright.compat.coordinators.plugin_timers import PluginTimers
from logwright.compat.coordinators.pop_coordinator import PopCoordinator
from logwright.compat.coordinators.producer_expiry import ProducerExpiry
from logwright.compat.coordinators.share_coordinator import ShareCoordinator
from logwright.compat.coordinators.token_expiry import TokenExpiry
from logwright.compat.coordinators.transaction_coordinator import TransactionTimer
from logwright.compat.coordinators.transactional_id_expiry import TransactionalIdExpiry
from logwright.core.clock import Clock
from logwright.core.config.configs import ConfigRegistry
from logwright.core.cursors.plugin_decisions import (
    Admission,
    AppendRequest,
    ArchiveDecider,
    GroupConfigCheck,
    ReleaseDecider,
    TopicScope,
)
from logwright.core.cursors.subscription_mode import SubscriptionMode
from logwright.core.log.index_hooks import EventDerivation, HeldBack, HoldBackQuery
from logwright.eventstore.rocksdb import RocksEventStore


class PluginDecisions(Protocol):
    """What the broker asks the plugins (`logwright.plugins.host.PluginHost` is one), resolved at composition."""

    def subscription_mode(self, name: str) -> SubscriptionMode:
        """The registered subscription mode called ``name``; raises `InvalidConfig` for an unknown one."""
        ...

    def release_decider(self, always: bool = False) -> ReleaseDecider | None:
        """The release decision chain; ``None`` when only the built-in default decides (unless ``always``)."""
        ...

    def admission(self) -> Callable[[AppendRequest], Admission] | None:
        """The append admission chain; ``None`` when every append is admitted."""
        ...

    def admission_scope(self) -> TopicScope | None:
        """The topics the admission chain acts on; ``None`` when it acts on every topic."""
        ...

    def archive_decider(self) -> ArchiveDecider | None:
        """The dead-letter decision for archived records; ``None`` when no plugin makes one."""
        ...

    def group_config_check(self) -> GroupConfigCheck | None:
        """The plugins' cross-key check of a group config change; ``None`` when no plugin checks."""
        ...

    def event_deriver(self) -> EventDerivation | None:
        """The plugins' events derived from every staged change; ``None`` when no plugin derives any."""
        ...

    def holder(self) -> Callable[[HoldBackQuery], HeldBack | None] | None:
        """What the plugins hold back from acquisition; ``None`` when no plugin holds anything back."""
        ...


@dataclass(frozen=True, slots=True)
class Coordinators:
    """The broker's stateful services, one of each, each with its own `DeadlineTimer` on the broker clock."""

    groups: GroupCoordinator
    consumer_groups: ConsumerCoordinator
    share_groups: ShareCoordinator
    transactions: TransactionTimer
    pop: PopCoordinator
    log_cleaner: LogCleaner
    log_retention: LogRetention
    group_expiry: GroupExpiry
    token_expiry: TokenExpiry
    producer_expiry: ProducerExpiry
    transactional_id_expiry: TransactionalIdExpiry
    plugin_timers: PluginTimers
    """Background tasks' timers (`BrokerFacade.deadline_timer`), run by LogwrightAdvanceClock with the rest."""

    @classmethod
    def of(cls, broker: Broker, plugins: PluginDecisions) -> Coordinators:
        return cls(GroupCoordinator(broker), ConsumerCoordinator(broker),
                   ShareCoordinator(broker, plugins.subscription_mode, plugins.release_decider(),
                                    plugins.release_decider(always=True), plugins.archive_decider(),
                                    plugins.group_config_check()),
                   TransactionTimer(broker), PopCoordinator(broker, plugins.archive_decider()), LogCleaner(broker),
                   LogRetention(broker), GroupExpiry(broker), TokenExpiry(broker), ProducerExpiry(broker),
                   TransactionalIdExpiry(broker), PluginTimers(broker.clock))

    def timers(self) -> tuple[DeadlineTimer, ...]:
        return (self.groups.timer, self.consumer_groups.timer, self.share_groups.timer, self.transactions.timer,
                self.pop.timer, self.log_cleaner.timer, self.log_retention.timer, self.group_expiry.timer,
                self.token_expiry.timer, self.producer_expiry.timer, self.transactional_id_expiry.timer)

    def start(self) -> None:
        """Start every timer on the running loop, so deadlines restored from the store fire without a request, and
        the classic groups' sweep of offsets on deleted topics."""
        for timer in self.timers():
            timer.ensure_running()
        self.groups.start()

    def run_due(self) -> None:
        """Run every deadline due on the broker clock now (after a manual clock moved); effects are staged."""
        self.groups.tick()
        self.share_groups.tick()
        self.transactions.tick()
        self.consumer_groups.tick()
        self.pop.tick()
        self.log_cleaner.tick()
        self.log_retention.tick()
        self.group_expiry.tick()
        self.token_expiry.tick()
        self.producer_expiry.tick()
        self.transactional_id_expiry.tick()
        self.plugin_timers.run_due()

    def close(self) -> None:
        """Stop every timer for good (before the store closes)."""
        for timer in self.timers():
            timer.close()
        self.log_cleaner.close()
        self.log_retention.close()
        self.group_expiry.close()
        self.producer_expiry.close()
        self.transactional_id_expiry.close()
        self.plugin_timers.close()


def compose_broker(store: RocksEventStore, plugins: PluginDecisions, settings: BrokerSettings | None = None,
                   configs: ConfigRegistry | None = None, clock: Clock | None = None) -> Broker:
    """A broker over ``store`` with its coordinators, deciding with ``plugins``; ``configs`` should include
    the plugins' keys (`PluginHost.config_registry`), ``clock`` defaults to the system clock."""
    return Broker(store, settings, configs, clock, admission=plugins.admission(),
                  admission_scope=plugins.admission_scope(),
                  derive_events=plugins.event_deriver(), hold_back=plugins.holder(),
                  coordinators=lambda broker: Coordinators.of(broker, plugins))
