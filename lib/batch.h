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
 * the concurrency, or, with stream handlers, at most twice the batch (so
 * that each round trip can carry a whole batch of outcomes and claims
 * while the handler works through the previous one). None before anything
 * is measured, and none for handlers that run long compared with a round
 * trip: their jobs stay claimable by idle workers.
 *
 * So a worker holds at most concurrency (running) + the depth (ready) jobs:
 * 2 x concurrency with handler processes, concurrency + 2 x the cap with
 * stream handlers; a lost worker's are reaped as every lease is.
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
};

/* The most jobs one claim takes now: floor <= batch <= max(floor, cap). */
long long pd_batch_size(const struct pd_batch_in *in);

/* The ready jobs to hold now (the prefetch depth), 0 to the bound above. */
long long pd_batch_depth(const struct pd_batch_in *in);

#endif
