/*
 * batch: how many jobs a worker claims in one round trip and how many it
 * holds ready ahead of a free run, from what it measured (pure: inputs in,
 * sizes out; lib/worksync calls it before each claim).
 *
 * The batch follows the handlers' rate and the round trip: as many jobs as
 * the runs get through during two round trips (2 x concurrency x rtt / run
 * time: the jobs a claim brings must last until the next claim's are in, a
 * round trip later, with a round trip to spare for the averages' noise, so
 * that two workers at the same rate both reach the cap), at least the floor (--batch, worker.batch)
 * and at most the cap
 * (--batch-max, worker.batch_max; a cap below the floor is the floor). A
 * fast stream handler, whose runs finish in microseconds, gets the cap; a
 * handler process that runs long compared with a round trip keeps the
 * floor. Before anything is measured (rtt or run time 0): the floor.
 *
 * The prefetch depth (the ready jobs held, claimed LEASED ahead of a free
 * run): as many as the runs get through during two round trips, at most
 * the batch or the concurrency, whichever is more (handler processes), or,
 * with stream handlers, at most twice the batch (so
 * that each round trip can carry a whole batch of outcomes and claims
 * while the handler works through the previous one). None before anything
 * is measured, and none for handlers that run long compared with a round
 * trip: their jobs stay claimable by idle workers.
 *
 * With handler processes the round trip counts as rtt + pause_us (below)
 * when a run is shorter than the pause, and the depth reaches the batch:
 * the ready jobs last through the pause.
 *
 * The pause (handler processes only; pause_us, PD_BATCH_PAUSE_MS): a worker
 * whose ready jobs outlast the rest of the pause and a round trip sends
 * nothing for up to pause_us
 * after its last batch, so that one round trip carries the outcomes, the
 * starts and the claim of that many ms of runs. Each round trip costs
 * PostgreSQL about 1.5-2 ms of CPU whatever it carries (the claim's plan,
 * the finish's functions, the commit) against tens of us a job, and on
 * a machine whose cores the handlers fill, that CPU is taken from them
 * (README, "The process drain"). Most jobs run during a pause are over
 * before the next round trip, and their outcome records their start: one write a job.
 * Stream handlers need no pause: their batches are large already.
 *
 * So a worker holds at most concurrency (running) + the depth (ready) jobs:
 * concurrency + the cap with handler processes, concurrency + 2 x the cap
 * with stream handlers; a lost worker's are reaped as every lease is.
 */
#ifndef PD_BATCH_H
#define PD_BATCH_H

struct pd_batch_in {
	long long conc;	  /* the runs (concurrency) */
	long long floor;  /* --batch: the least claimed at once */
	long long cap;	  /* --batch-max: the most claimed at once */
	long long rtt_us; /* a round trip's moving average; 0: not measured yet */
	long long run_us; /* a handler run's moving average; 0: not measured yet */
	int stream;	  /* the worker has stream handlers */
	/* the pause: PD_BATCH_PAUSE_MS with handler processes, 0 with streams */
	long long pause_us;
};

/* The pause of a worker with handler processes only, in ms (see above). */
#define PD_BATCH_PAUSE_MS 50

/* The most jobs one claim takes now: floor <= batch <= max(floor, cap). */
long long pd_batch_size(const struct pd_batch_in *in);

/* The ready jobs to hold now (the prefetch depth), 0 to the bound above. */
long long pd_batch_depth(const struct pd_batch_in *in);

/*
 * 1: nready ready jobs outlast left_us (what is left of the pause) and a
 * round trip (more than conc x (left + rtt) / run), so that the claim sent
 * at the pause's end is in before they run out: the worker may pause its
 * writes (pause_us > 0); 0: send now.
 */
int pd_batch_pause(const struct pd_batch_in *in, long long nready, long long left_us);

#endif
