"""Random sequences of group requests: the refolded log always equals the live state, invariants hold."""

from __future__ import annotations

import itertools

from hypothesis import given, settings
from hypothesis import strategies as st
from logwright.core.clock import ManualClock
from logwright.core.errors import DomainError
from logwright.core.groups.group_membership import GroupLimits, Heartbeat, JoinGroup, SyncGroup
from logwright.core.groups.group_sessions import GroupSessions, JoinReply, MemoryGroupStore
from logwright.core.groups.groups import GroupPhase

PROTOCOLS = ((("range", b"r"),), (("roundrobin", b"rr"), ("range", b"r")), (("roundrobin", b"rr"),))
step = st.tuples(st.sampled_from(["join", "rejoin", "sync", "heartbeat", "leave", "wait"]),
                 st.integers(0, 3), st.integers(0, 2), st.integers(0, 12_000))


@settings(max_examples=150, deadline=None)
@given(st.lists(step, max_size=40), st.integers(0, 2_000))
def test_refold_equals_live_state(steps: list[tuple[str, int, int, int]], delay: int) -> None:
    clock = ManualClock()
    store = MemoryGroupStore()
    ids = itertools.count()
    sessions = GroupSessions(store, GroupLimits(initial_rebalance_delay_ms=delay), clock.now_ms(),
                             lambda prefix: f"{prefix}-{next(ids)}")
    known: list[str] = []
    generations = [0]
    for action, who, protocols, millis in steps:
        member_id = known[who % len(known)] if known else ""
        state = store.group("g")
        generation = state.generation if state else 0
        try:
            if action == "join" or (action == "rejoin" and not known):
                member_id, _ = sessions.join(JoinGroup("g", "", "static" if who == 3 else None, "c", "h", 6_000,
                                                       6_000 + millis, "consumer", PROTOCOLS[protocols], False),
                                             clock.now_ms())
                known.append(member_id)
            elif action == "rejoin":
                sessions.join(JoinGroup("g", member_id, None, "c", "h", 6_000, 6_000, "consumer",
                                        PROTOCOLS[protocols], False), clock.now_ms())
            elif action == "sync":
                sessions.sync(SyncGroup("g", generation, member_id, assignments=((member_id, b"a"),)), clock.now_ms())
            elif action == "heartbeat":
                sessions.heartbeat(Heartbeat("g", generation, member_id), clock.now_ms())
            elif action == "leave":
                sessions.leave("g", [(member_id, None)], clock.now_ms())
            else:
                clock.advance(millis)
                replies = sessions.tick(clock.now_ms())
                assert all(isinstance(r, JoinReply) or r.member_id for r in replies)
        except DomainError:
            pass
        live = store.group("g")
        assert MemoryGroupStore(store.events).group("g") == live
        if live is not None:
            assert live.generation >= generations[-1]
            generations.append(live.generation)
            if live.phase in (GroupPhase.STABLE, GroupPhase.COMPLETING_REBALANCE):
                assert live.member(live.leader or "") is not None
                assert live.protocol_name in {name for name, _ in live.members[0].protocols}
            if live.phase == GroupPhase.EMPTY:
                assert live.members == ()
