"""Fault settings for a simulated run: what the network and the machines may do to the cores."""

from __future__ import annotations

import attrs


@attrs.frozen
class Faults:
    """Probabilities are per message (network) or per scheduling decision (machines)."""

    drop: float = 0.02
    duplicate: float = 0.02
    #: delivery delay in ms, uniform; a random delay per message reorders them
    min_delay: int = 1
    max_delay: int = 15
    #: share of messages delayed much longer (up to ``long_delay`` ms)
    long_delay_rate: float = 0.01
    long_delay: int = 400
    #: share of messages also delivered again much later (a stalled connection that delivers an old
    #: answer after elections have moved on), up to ``late_delay`` ms after the first copy
    late_duplicate: float = 0.01
    late_delay: int = 2000
    #: mean ms between partition changes (symmetric splits, one-way cuts, heals); 0 = none
    partition_every: int = 700
    #: mean ms between crashes; a crashed node restarts from its durable state after a while
    crash_every: int = 900
    #: chance that a node crashes in the middle of handling a Ready (before or after persisting)
    crash_mid_ready: float = 0.002
    #: chance that a leader crashes right after its commit index advances (a "buggify" point: the
    #: moment the Figure 8 scenario turns on)
    crash_after_commit: float = 0.01
    #: chance that a server crashes right after it sends a vote grant (a buggify point: the moment a
    #: vote that was not made durable would be forgotten)
    crash_after_vote: float = 0.02
    #: chance that a node crashes just before a durable write (log save, snapshot file, log
    #: compaction, pruning the old snapshot file): the writes before it survive, it and later ones not
    crash_at_write: float = 0.002
    #: the same for the snapshot's writes (file, compaction, pruning), which are far rarer
    crash_at_snapshot_write: float = 0.05
    #: a crashed node restarts after between ``restart_min`` and ``restart_min + restart_spread`` ms
    #: (a quick restart lets it rejoin the very election or leadership it crashed in)
    restart_min: int = 50
    restart_spread: int = 500
    #: per-node tick period varies by up to this fraction (clock skew)
    clock_skew: float = 0.2

    @classmethod
    def none(cls) -> Faults:
        return cls(
            drop=0.0,
            duplicate=0.0,
            min_delay=1,
            max_delay=3,
            long_delay_rate=0.0,
            long_delay=0,
            late_duplicate=0.0,
            partition_every=0,
            crash_every=0,
            crash_mid_ready=0.0,
            crash_after_commit=0.0,
            crash_after_vote=0.0,
            crash_at_write=0.0,
            crash_at_snapshot_write=0.0,
            clock_skew=0.0,
        )


@attrs.frozen
class Mutations:
    """Deliberate bugs, to prove the simulator can catch them."""

    #: the leader commits entries of earlier terms by counting replicas (Raft §5.4.2 broken)
    commit_old_terms: bool = False
    #: votes are granted without checking the candidate's log is up to date (§5.4.1 broken)
    skip_vote_log_check: bool = False
    #: messages leave before the state they depend on is persisted
    send_before_persist: bool = False
    #: a new snapshot file replaces the old one before the log store's compaction (one file, as
    #: before 0.2): a crash between the two leaves a log store naming a file that is gone
    snapshot_file_first: bool = False
    #: a leader counts its own new entries towards a commit before its write of them ended (Raft
    #: dissertation §10.2.1 broken); only the real driver with a disk that takes time shows it
    #: (``--driver --disk-latency MS``)
    count_unwritten: bool = False
    #: a core from :data:`garlicfarm.sim.mutants.CORE_MUTANTS` ("" = the real one)
    core: str = ""

    def any(self) -> bool:
        flags = (
            self.commit_old_terms,
            self.skip_vote_log_check,
            self.send_before_persist,
            self.snapshot_file_first,
            self.count_unwritten,
        )
        return any(flags) or bool(self.core)
