/*
 * verdict: what becomes of a job or an outbox message once its handler or
 * publish command is over. One set for both (lib/jobs, lib/outbox); the
 * pool derives it from how the child ended (pd_exit_verdict).
 */
#ifndef PD_VERDICT_H
#define PD_VERDICT_H

enum pd_verdict {
	PD_VERDICT_DONE,    /* exit 0: SUCCEEDED, or PUBLISHED */
	PD_VERDICT_RETRY,   /* retryable: PENDING after a backoff, or dead when attempts are used up
			     */
	PD_VERDICT_DEAD,    /* terminal: dead-lettered now, with a dead_reason */
	PD_VERDICT_RELEASE, /* given back: PENDING now, the attempt refunded */
	PD_VERDICT_SNOOZE,  /* put off: PENDING after the handler's duration, the attempt
			       refunded, snoozes + 1 (a worker's jobs only) */
	PD_VERDICT_CANCEL,  /* an operator cancelled it: CANCELLED (jobs only, sql/022) */
};

#endif
