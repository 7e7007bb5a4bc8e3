"""The campaign launcher: run folder, bus, store, memory, guard worker, agents, leaderboard and STOP."""

from __future__ import annotations

import contextlib
import gc
import secrets
import sqlite3
import time
from collections.abc import Callable, Iterator
from functools import cached_property
from pathlib import Path
from typing import Protocol

import anyio
import structlog

from arcengine import __version__
from arcengine.domain import library_seed
from arcengine.domain.errors import UserError, first_leaf
from arcengine.domain.events import (
    DECISIONS,
    SEED_AGENT,
    AgentFailed,
    AgentStarted,
    BestImproved,
    CampaignResumed,
    CampaignStarted,
    CampaignStopped,
    CandidateDecided,
    CandidateProposed,
    Event,
    ProviderCalled,
)
from arcengine.domain.problem import Problem, load_problem
from arcengine.domain.run import Phase, RunState, plateau_reached
from arcengine.domain.skills import Skill, load_skills, strategies_for
from arcengine.domain.tunables import declares_tunables
from arcengine.engine.agent import Agent, AgentState
from arcengine.engine.config import CampaignConfig
from arcengine.engine.history import History, load_history
from arcengine.engine.memory import Memory
from arcengine.engine.seeds import (
    Seed,
    assign_strategies,
    failure_reason,
    seed_candidate_id,
    starting_seeds,
)
from arcengine.engine.summary import AgentTotals, BestKernel, CampaignSummary, SeedKernel, Spending
from arcengine.guard.decision import Thresholds
from arcengine.guard.interface import Guard
from arcengine.guard.service import GuardService
from arcengine.providers import create_provider
from arcengine.providers.base import (
    AgentContext,
    LeaderboardEntry,
    Proposal,
    Provider,
    ProviderFatal,
    ProviderUnavailable,
    Reflection,
)
from arcengine.providers.pricing import PriceTable
from arcengine.recording.bus import Bus, RecordingError
from arcengine.recording.eventlog import EventLogWriter
from arcengine.recording.files import FileWriter
from arcengine.recording.logs import configure_logging
from arcengine.recording.redact import redact_secrets
from arcengine.recording.runlock import RunLock
from arcengine.recording.store import Store

log = structlog.get_logger()
RELAUNCH_PAUSE_S = 1.0  # before an agent that failed is relaunched; doubles with each failure



class CampaignError(UserError):
    """The campaign cannot start or go on (a cost cap it cannot count, a full disk)."""


class Display(Protocol):
    """What the engine feeds: a headless printer or the TUI. The engine never imports Textual."""

    async def on_event(self, event: Event) -> None: ...


def new_campaign_id(problem: str) -> str:
    return f"{problem}-{time.strftime('%Y%m%d-%H%M%S')}-{secrets.token_hex(2)}"


@contextlib.contextmanager
def rare_full_collections() -> Iterator[None]:
    """A full garbage collection after every 100 middle ones instead of 10, while a campaign runs. A busy
    campaign's heap is events and files on their way to the disk, with no cycles to find: a full pass there
    collected nothing and took 20 to 120 ms, 6 times per 10,000 candidates, each pausing every agent."""
    young, middle, full = gc.get_threshold()
    gc.set_threshold(young, middle, max(full, 100))
    try:
        yield
    finally:
        gc.set_threshold(young, middle, full)


class Campaign:
    def __init__(self, config: CampaignConfig, display: Display | None = None,
                 provider: Provider | None = None, guard_factory: Callable[[Campaign], Guard] | None = None,
                 history: History | None = None, lock: RunLock | None = None) -> None:
        self.config = config
        self.lock = lock  # the run folder's one-writer lock (taken here for a new folder, by ``resume`` for one)
        self.problem: Problem = load_problem(config.problem, config.precision)
        self.skills = load_skills()
        self.display = display
        self.history = history  # a campaign resumed after a crash continues from its event log
        self.rebuilt_from: str | None = None  # a damaged database set aside on resume
        self.campaign_id = history.started.campaign_id if history else new_campaign_id(self.problem.name)
        self.run_dir = history.run_dir.resolve() if history else (config.out / self.campaign_id).resolve()
        self.candidates_dir = self.run_dir / "candidates"  # joined once: every step names two files in it
        self.memory = Memory(cap=config.memory_cap, scope=config.memory)
        self.provider = provider or create_provider(
            config.model, seed=config.rng_seed, base_url=config.base_url, concurrency=config.provider_concurrency,
            timeout_s=config.provider_timeout_s, max_retries=config.provider_retries,
            prices=PriceTable.with_overrides(config.prices))
        if history is None and config.max_cost_usd is not None and not getattr(self.provider, "priced", True):
            # Its calls would count $0 and the cap would never stop it: refuse before the first call.
            raise CampaignError(f"--max-cost needs a price for {self.provider.name}, and the built-in table has "
                                "none; give one with --prices FILE.toml (USD per million tokens)")
        self.last_agent_error: str | None = None
        self.guard_factory = guard_factory  # a replay answers from a recording instead of guard children
        self.agents: list[Agent] = []
        self.seeds: list[Seed] = []  # the problem's seeds with their decisions, once judged
        self.state = RunState()  # the log's facts as they arrive: counts, spending, the best, each agent's plateau
        self.stop_reason: str | None = None
        self._proposed = 0
        self._reserved = 0
        self._started = time.monotonic()
        self.files = FileWriter()
        self._leaders: dict[str, LeaderboardEntry] = {}  # each agent's best, in the agents' order
        self._leaderboard: list[LeaderboardEntry] | None = None  # sorted; re-sorted after a best moves
        self.bus: Bus
        self.store: Store
        self.guard: Guard

    # -- positions and files -------------------------------------------------------------------------
    def reserve_position(self, agent: Agent | None = None) -> bool:
        """A budget position for the next candidate; with ``split_budget``, each agent only gets its even share
        (budget // agents), as the paper's fixed-budget ablation has it."""
        if self.stop_reason is not None:
            return False
        if self._proposed + self._reserved >= self.config.budget:
            return False
        if self.config.split_budget and agent is not None and agent.state.candidates >= self.share:
            return False
        self._reserved += 1
        return True

    @property
    def share(self) -> int:
        return self.config.budget // self.config.agents

    def release_position(self) -> None:
        """Give back a reservation that brought no candidate (the provider was exhausted or failed)."""
        self._reserved -= 1

    def next_candidate(self) -> tuple[str, int]:
        """Turn the caller's reservation into a numbered candidate position."""
        self._reserved -= 1
        self._proposed += 1
        return f"c{self._proposed:04d}", self._proposed

    @property
    def candidates(self) -> int:
        return self._proposed

    def candidate_path(self, candidate_id: str) -> Path:
        return self.candidates_dir / f"{candidate_id}.py"

    def write_candidate(self, candidate_id: str, source: str) -> tuple[Path, anyio.Event]:
        """Queue a candidate's file: its path, and the event set once it is on disk (the guard waits for it)."""
        path = self.candidate_path(candidate_id)
        return path, self.files.put(path, source)

    @cached_property
    def held_out_values(self) -> set[int]:
        """Axis values only held-out workloads have: an agent's feedback never names them."""
        visible = {v for w in self.guard.workloads if not w.held_out for v in w.axes.values()}
        return {v for w in self.guard.workloads if w.held_out for v in w.axes.values()} - visible

    # -- what an agent may ask of its campaign (the AgentHost protocol of engine/agent.py) -------------
    def context(self, agent: Agent) -> AgentContext:
        problem, state = self.problem, agent.state
        return AgentContext(
            agent_id=agent.id,
            strategy=agent.strategy,
            problem_name=problem.name,
            problem_description=problem.description,
            kernel_type=problem.kernel_type,
            reference_source=problem.reference_source,
            visible_workloads=[w for w in self.guard.workloads if not w.held_out],
            working_source=state.working_source,
            best_source=state.best_source,
            best_speedup=state.best_speedup,
            plateau=state.plateau,
            drafting=state.plateau >= self.config.r_draft,
            recall=self.memory.recall(problem.kernel_type, agent.id),
            leaderboard=self.leaderboard(exclude=agent.id) if self.config.leaderboard else None,
            feedback=state.last_feedback,
            device=self.guard.device,
            entry=problem.entry,
            destination_passing=problem.destination_passing,
        )

    async def publish(self, events: list[Event]) -> None:
        await self.bus.publish_all(events)

    async def judge(self, agent: Agent, candidate_id: str, proposal: Proposal) -> CandidateDecided:
        if proposal.failure is not None:  # the position is spent; the agent hears why in its feedback
            return await self.guard.refuse(candidate_id=candidate_id, agent_id=agent.id,
                                           reason=f"no usable candidate: {proposal.failure}")
        path, written = self.write_candidate(candidate_id, proposal.source)
        return await self.guard.submit(
            candidate_id=candidate_id, agent_id=agent.id, source=proposal.source, candidate_path=path,
            incumbent_path=self.candidate_path(agent.state.best_id), written=written,
            incumbent_speedup=agent.state.best_speedup)

    async def remember(self, agent: Agent, proposal: Proposal, decided: CandidateDecided,
                       reflection: Reflection) -> None:
        problem = self.problem
        visible = sum(not w.held_out for w in self.guard.workloads)
        await self.memory.record(
            self.bus.publish_all,
            kind="win" if decided.decision == "KEEP" else "trap",
            kernel_type=problem.kernel_type, agent_id=agent.id, candidate_id=decided.candidate_id,
            strategy=proposal.strategy, speedup=decided.speedup,
            context=f"{problem.name} on {self.guard.device}, {visible} visible shapes",
            summary=reflection.summary, reflection=reflection.reflection, params=proposal.params)

    def put_file(self, path: Path, source: str) -> None:
        self.files.put(path, source)

    def leaderboard(self, exclude: str | None = None) -> list[LeaderboardEntry]:
        if self._leaderboard is None:  # every agent's context shows it: sort once per change, not per step
            self._leaderboard = sorted(self._leaders.values(), key=lambda e: -(e.speedup or 0.0))
        return [entry for entry in self._leaderboard if entry.agent_id != exclude]

    def _post_best(self, agent: Agent) -> None:
        """The agent's best, as the leaderboard shows it (only its own entry is rebuilt when it moves)."""
        state = agent.state
        self._leaders[agent.id] = LeaderboardEntry(agent.id, agent.strategy.name, state.best_id, state.best_speedup,
                                                   state.best_source)
        self._leaderboard = None

    # -- lifecycle ----------------------------------------------------------------------------------
    @classmethod
    def resume(cls, run_dir: Path, display: Display | None = None, provider: Provider | None = None,
               guard_factory: Callable[[Campaign], Guard] | None = None) -> Campaign:
        """The campaign of ``run_dir``, to continue where its event log ends, with its recorded settings."""
        # The lock comes before the log is read: a live writer's last line may be half written, and the resumed
        # campaign would cut it.
        lock = RunLock.acquire(run_dir) if (run_dir / "events.jsonl").is_file() else None
        try:
            history = load_history(run_dir)
            config = CampaignConfig(**{**history.started.config, "problem": history.started.problem_dir})
            return cls(config, display=display, provider=provider, guard_factory=guard_factory, history=history,
                       lock=lock)
        except BaseException:
            if lock is not None:
                lock.release()
            raise

    async def run(self) -> CampaignSummary:
        try:
            with rare_full_collections():
                return await self._run_recorded()
        except (KeyboardInterrupt, anyio.get_cancelled_exc_class()):
            if self.lock is not None:  # stopped by the user (Ctrl-C, q in the terminal UI): resumable, not crashed
                self.lock.mark("stopped")
            raise
        finally:
            if self.lock is not None:
                self.lock.release()
                self.lock = None

    async def _run_recorded(self) -> CampaignSummary:
        history = self.history
        # What exists now (modules, the problem, the provider, a terminal UI) lives as long as the campaign: the
        # collector's full passes need not walk it again. They took 60 to 120 ms each with torch, numpy and
        # Textual loaded, long enough to show as the slowest decisions of a busy campaign.
        gc.collect()
        gc.freeze()
        self.candidates_dir.mkdir(parents=True, exist_ok=history is not None)
        if self.lock is None:
            self.lock = RunLock.acquire(self.run_dir)
        configure_logging(self.run_dir / "engine.log")
        writer = EventLogWriter(self.run_dir / "events.jsonl")
        await writer.open()
        self.store = await self._open_store(self.run_dir / "campaign.db")
        if history is not None:
            await self._restore(history)
        self.bus = Bus(writer, first_seq=history.last_seq + 1 if history else 1)
        self.bus.subscribe_lines(self.store.apply_lines)
        self.bus.subscribe(self.memory.apply)
        self.bus.subscribe(self._fold)
        if self.display is not None:
            share = getattr(self.display, "share", None)
            if share is not None:  # a display that shows the run's state reads this fold instead of its own
                share(self.state)
            restore = getattr(self.display, "restore", None)
            if history is not None and restore is not None:  # show the whole campaign, its past too
                await restore(history.events)
            self.bus.subscribe(self.display.on_event)
        thresholds = Thresholds(self.config.margin, self.config.near_band, self.config.suspicious_speedup)
        self.guard = self.guard_factory(self) if self.guard_factory else GuardService(
            self.problem, self.bus, thresholds,
            seeds=self.config.seeds, timeout_s=self.config.candidate_timeout_s, rng_seed=self.config.rng_seed,
            cache_dir=self.run_dir / "kernel-cache", memory_limit_gib=self.config.child_memory_gib,
            pipeline=self.config.pipeline, baseline=self.config.baseline)
        try:
            async with anyio.create_task_group() as writer_task:
                writer_task.start_soon(self.store.run)
                writer_task.start_soon(self.files.run)
                await self._run()
                writer_task.cancel_scope.cancel()
        except* RecordingError as failed:
            error = first_leaf(failed)
            raise CampaignError(f"stopped: {error}. What was recorded before is intact: make room, then "
                                f"arcengine run --resume {self.run_dir}") from None
        finally:
            await self.files.close()
            await self.store.close()
            await writer.close()
        return self.summary()

    async def _open_store(self, path: Path) -> Store:
        """The database; on resume, one that is damaged is set aside and rebuilt from the log (its source)."""
        if self.history is None:
            return await Store.open(path)
        try:
            store = await Store.open(path)
            if await store.intact():
                return store
            await store.close()
        except sqlite3.DatabaseError:
            pass
        aside = path.with_name(f"{path.name}.damaged-{time.strftime('%Y%m%d-%H%M%S')}")
        path.rename(aside)
        for suffix in ("-wal", "-shm"):
            path.with_name(path.name + suffix).unlink(missing_ok=True)
        self.rebuilt_from = aside.name
        return await Store.open(path)

    async def _restore(self, history: History) -> None:
        """Catch the database up with the log and take back the counts, the best and the memory."""
        await self.store.catch_up(history.events)
        for event in history.events:
            await self.memory.apply(event)
        self._proposed = history.positions
        self.state.apply_all(history.events)
        self._started -= history.elapsed_s

    async def _run(self) -> None:
        config = self.config
        history = self.history
        if history is None:
            await self.bus.publish(CampaignStarted(
                campaign_id=self.campaign_id, problem=self.problem.name, problem_dir=str(self.problem.directory),
                kernel_type=self.problem.kernel_type, config=config.model_dump(mode="json"),
                device=config.device, versions={"arcengine": __version__}))
        else:
            await self.bus.publish(CampaignResumed(
                after_seq=history.last_seq, versions={"arcengine": __version__}, database_damaged=self.rebuilt_from,
                interrupted=[a.interrupted.candidate_id for a in history.agents.values() if a.interrupted]))
        for profiled in await self.guard.profile(config.device, config.gpus):
            log.info("campaign.device", device=profiled.device, gpu=profiled.gpu)
        async with anyio.create_task_group() as workers:
            workers.start_soon(self.guard.work)
            if history is not None and history.agents:
                seed_ok = await self._restart_agents(history)
            else:  # a resumed campaign whose agents had not started judges only the seeds left undecided
                seed_ok = await self._evaluate_seeds() and self._start_agents()
            if not seed_ok:
                workers.cancel_scope.cancel()
                return
            # The limit is the campaign's wall clock from its start (its seeds' judging included; a resumed one
            # counts what its first run spent): a user's --time-limit bounds the whole run, not only the search.
            time_left = (config.time_limit_s or float("inf")) - (time.monotonic() - self._started)
            with anyio.move_on_after(time_left) as timer:
                async with anyio.create_task_group() as agents:
                    for agent in self.agents if time_left > 0 else ():
                        agents.start_soon(self._supervise, agent)
            if timer.cancelled_caught or time_left <= 0:
                self.stop("time limit reached")
            workers.cancel_scope.cancel()
        if not seed_ok:
            raise CampaignError(self.stop_reason)
        if self.stop_reason is None:
            if self._proposed >= (self.share * config.agents if config.split_budget else config.budget):
                self.stop_reason = "candidate budget spent"
            elif self.agents and all(a.state.phase == Phase.FAILED for a in self.agents):
                self.stop_reason = f"every agent failed (last: {self.last_agent_error})"
            elif self._proposed == 0 and (why := {a.state.exhausted_because for a in self.agents} - {None}):
                # Nothing was ever proposed: say why, not just that the search ended (the offline tuner on a
                # problem whose seeds declare no TUNABLES, say).
                self.stop_reason = f"nothing to search: {'; '.join(sorted(why))}"
            else:
                self.stop_reason = "every agent's search is exhausted"
        best = self.state.best
        await self.bus.publish(CampaignStopped(
            reason=self.stop_reason, candidates=self._proposed,
            best_candidate_id=best.candidate_id if best else None, best_speedup=best.speedup if best else None))

    async def _evaluate_seeds(self) -> bool:
        """Judge every seed (side by side) before the agents start; the best that passes is the incumbent. A resumed
        campaign proposes and judges only the seeds its log has not."""
        history = self.history
        proposed = history.seeds_proposed if history else {}
        decided = dict(history.seeds_decided) if history else {}
        seed_files = self.problem.seed_files_for(self.guard.device)
        files = {seed_candidate_id(index): file for index, file in enumerate(seed_files)}
        sources = {candidate_id: proposed[candidate_id].source if candidate_id in proposed else
                   (self.problem.directory / file).read_text(encoding="utf-8") for candidate_id, file in files.items()}
        if not any(declares_tunables(source) for source in sources.values()):
            # Nothing for the offline tuner to search, nor a kernel to start from but the reference's own: the
            # generated seed (the reference: eager, compiled or a library route, as TUNABLES) is judged beside them.
            generated = seed_candidate_id(len(files))
            files[generated] = library_seed.SEED_FILE
            sources[generated] = proposed[generated].source if generated in proposed else \
                library_seed.library_seed(self.problem, self.guard.device)
        fresh: list[Event] = [CandidateProposed(
            candidate_id=candidate_id, agent_id=SEED_AGENT, position=0, parent_id=None, strategy="seed",
            rationale="the generated library seed" if file == library_seed.SEED_FILE else "the problem's seed",
            source=sources[candidate_id], seed_file=file)
            for candidate_id, file in files.items() if candidate_id not in proposed]
        if fresh:
            await self.bus.publish_all(fresh)

        async def judge(candidate_id: str) -> None:
            path, written = self.write_candidate(candidate_id, sources[candidate_id])
            if candidate_id not in decided:  # else it was decided before a crash: its file is kept for the agents
                decided[candidate_id] = await self.guard.submit(
                    candidate_id=candidate_id, agent_id=SEED_AGENT, source=sources[candidate_id],
                    candidate_path=path, incumbent_path=None, written=written)

        async with anyio.create_task_group() as judging:
            for candidate_id in files:
                judging.start_soon(judge, candidate_id)
        self.seeds = [Seed(candidate_id, file, sources[candidate_id], decided[candidate_id])
                      for candidate_id, file in files.items()]
        if not any(seed.passed for seed in self.seeds):
            self.stop_reason = failure_reason(self.seeds)
            await self.bus.publish(CampaignStopped(reason=self.stop_reason, candidates=0,
                                                   best_candidate_id=None, best_speedup=None))
            return False
        self._write_best(self._incumbent_seed().source)
        return True

    def _incumbent_seed(self) -> Seed:
        """The seed the run's fold holds as the incumbent: the passing seed of the highest speedup."""
        return next((seed for seed in self.seeds if seed.candidate_id == self.state.seed_candidate_id), self.seeds[0])

    @property
    def _provider_kind(self) -> str:
        """The provider the agents work with (for a replay, the recorded campaign's: its agents start as those did)."""
        model = getattr(self.provider, "replayed_model", None) or self.config.model
        return str(model).partition(":")[0]

    def _starts(self) -> list[Seed]:
        """Each agent's starting seed, in agent order (arcengine.engine.seeds.starting_seeds)."""
        return starting_seeds(self.seeds, self._incumbent_seed(), self.config.agents, self._provider_kind)

    def _start_agents(self) -> bool:
        starts = self._starts()
        for number, (strategy, seed) in enumerate(zip(self._strategies(starts), starts, strict=True), start=1):
            self.agents.append(self._fresh_agent(number, strategy, seed))
        for agent in self.agents:
            self._post_best(agent)
        return True

    def _strategies(self, starts: list[Seed]) -> list[Skill]:
        eligible = strategies_for(self.skills, self.problem.kernel_type)
        if not eligible:
            raise CampaignError("no strategy skill is eligible for this kernel type")
        return assign_strategies(eligible, [seed.source for seed in starts], self._provider_kind)

    def _fresh_agent(self, number: int, strategy: Skill, seed: Seed) -> Agent:
        state = AgentState.from_seed(seed.source, seed.speedup, seed.candidate_id)
        return Agent(f"a{number}", strategy, self.provider, self.run_dir / "agents" / f"a{number}", state,
                     seed_id=seed.candidate_id)

    def _recorded_seeds(self, history: History) -> list[Seed]:
        """The seeds as the log judged them (in a log from before several seeds, its one seed)."""
        files = dict(enumerate(self.problem.seed_files_for(self.guard.device)))
        return [Seed(candidate_id, proposed.seed_file or files.get(index, "seed.py"), proposed.source,
                     history.seeds_decided.get(candidate_id))
                for index, (candidate_id, proposed) in enumerate(history.seeds_proposed.items())]

    async def _restart_agents(self, history: History) -> bool:
        """The agents of a resumed campaign, as the log left them; what was in flight is judged first."""
        self.seeds = self._recorded_seeds(history)
        incumbents_written: anyio.Event | None = None
        for agent_id, past in history.agents.items():
            agent = Agent(agent_id, self.skills[past.strategy], self.provider, self.run_dir / "agents" / agent_id,
                          past.state, seed_id=past.seed_id)
            agent.interrupted = past.interrupted
            agent.write_files(self)
            # Its incumbent is timed from its file: a crash may have come before the file was written.
            incumbents_written = self.files.put(self.candidate_path(past.state.best_id), past.state.best_source)
            self.agents.append(agent)
        if incumbents_written is not None:
            await incumbents_written.wait()  # queued with no wait between them: one batch holds them all
        starts = self._starts()
        strategies = self._strategies(starts)
        for number in range(len(self.agents) + 1, self.config.agents + 1):  # the crash came before they started
            self.agents.append(self._fresh_agent(number, strategies[number - 1], starts[number - 1]))
        for agent in self.agents:
            self._post_best(agent)
        restore = getattr(self.provider, "restore", None)
        if callable(restore):  # a provider with its own memory (the offline tuner's tried settings)
            restore(history.events)
        for keep in history.unannounced_keeps:  # the crash fell between a KEEP and its announcement
            await self.after_decision(next(a for a in self.agents if a.id == keep.agent_id), keep)
        if self.state.best is not None:
            self._write_best(history.sources.get(self.state.best.candidate_id, self._incumbent_seed().source))
        return True

    async def _supervise(self, agent: Agent) -> None:
        """Keep-alive: an agent that raises is relaunched (its state kept) after a pause that doubles each time
        (a provider outage gets time to pass), up to ``max_relaunches``. A fatal provider error stops all."""
        await self.bus.publish(AgentStarted(agent_id=agent.id, strategy=agent.strategy.name,
                                            provider=self.config.model, seed_id=agent.seed_id))
        failures = 0
        while True:
            try:
                await agent.run(self)
                return
            except RecordingError:
                raise  # nothing can be recorded: the whole campaign stops
            except ProviderFatal as error:
                self.stop(f"provider error: {error}")
                agent.state.phase = Phase.FAILED
                await self.bus.publish(AgentFailed(agent_id=agent.id, error=str(error), relaunch=False))
                return
            except Exception as error:  # an agent's bug or a provider outage must not end the campaign
                relaunch = failures < self.config.max_relaunches
                if isinstance(error, ProviderUnavailable):
                    log.warning("agent.provider_unavailable", agent=agent.id, error=str(error))
                else:
                    log.exception("agent.failed", agent=agent.id)
                self.last_agent_error = f"{type(error).__name__}: {error}"
                await self.bus.publish(AgentFailed(agent_id=agent.id, error=self.last_agent_error,
                                                   relaunch=relaunch))
                if not relaunch:
                    agent.state.phase = Phase.FAILED
                    return
                failures += 1
                agent.state.phase = Phase.RELAUNCHING
                await anyio.sleep(min(RELAUNCH_PAUSE_S * 2 ** (failures - 1), 60.0))

    async def after_decision(self, agent: Agent, decided: CandidateDecided) -> None:
        run, config = self.state, self.config
        if decided.decision == "KEEP" and decided.speedup is not None:
            self._post_best(agent)  # the agent's best moved
            if run.best is not None and run.best.candidate_id == decided.candidate_id:  # still the campaign's best
                self._write_best(agent.state.best_source)
            await self.bus.publish(BestImproved(agent_id=agent.id, candidate_id=decided.candidate_id,
                                                speedup=decided.speedup, campaign_best=run.raised(decided.candidate_id),
                                                speedup_over_baseline=decided.speedup_over_baseline))
        if config.target_speedup and run.best and run.best.reached(config.target_speedup, config.target_against):
            self.stop(f"target speedup {config.target_speedup}x over the {config.target_against} reached")
        if config.plateau and plateau_reached([(a.state.phase, a.state.plateau) for a in self.agents], config.plateau):
            self.stop(f"plateau: every agent went {config.plateau} candidates without a KEEP")

    def stop(self, reason: str) -> None:
        if self.stop_reason is None:
            self.stop_reason = redact_secrets(reason)  # a provider's error may quote the key it was sent

    def _write_best(self, source: str) -> None:
        self.files.put(self.run_dir / "best.py", source, atomic=True)

    async def _fold(self, event: Event) -> None:
        self.state.apply(event)
        if isinstance(event, ProviderCalled):
            spent = self.state.budget.over_budget(self.config.max_tokens, self.config.max_cost_usd)
            if spent is not None:
                self.stop(spent)

    def summary(self) -> CampaignSummary:
        best, run = self.state.best, self.state
        return CampaignSummary(
            run_dir=str(self.run_dir),
            problem=self.problem.name,
            problem_dir=str(self.problem.directory),
            device=self.guard.device,
            gpus=[slot.gpu for slot in self.guard.slots if slot.gpu is not None],
            candidates=self._proposed,
            decisions={decision: run.decisions.get(decision, 0) for decision in DECISIONS},
            best=BestKernel(speedup=best.speedup, speedup_over_baseline=best.over_baseline, agent=best.agent_id,
                            candidate=best.candidate_id) if best else None,
            seed_speedup=run.seed_speedup,
            best_over_seed=best.speedup / run.seed_speedup if best and run.seed_speedup else None,
            stop_reason=self.stop_reason,
            provider=self.provider.name,
            usage=Spending(**run.budget.as_dict()),
            cost_known=getattr(self.provider, "priced", True),
            elapsed_s=round(time.monotonic() - self._started, 1),
            agents=[AgentTotals(id=a.id, strategy=a.strategy.name, candidates=a.state.candidates,
                                best_speedup=a.state.best_speedup, plateau=a.state.plateau) for a in self.agents],
            seeds=[SeedKernel(file=seed.file, candidate=seed.candidate_id, decision=seed.decision, speedup=seed.speedup,
                              speedup_over_baseline=seed.over_baseline,
                              incumbent=seed.passed and seed.candidate_id == run.seed_candidate_id)
                   for seed in run.seeds.values()],
        )
