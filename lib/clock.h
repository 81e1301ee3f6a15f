/*
 * clock: the monotonic clock, for deadlines and timeouts.
 *
 * Deadlines are absolute times on CLOCK_MONOTONIC, never wall-clock times:
 * a timeout is "pd_now_ms() + ms", and what is left of it is "deadline -
 * pd_now_ms()", recomputed on every pass of a poll loop.
 */
#ifndef PD_CLOCK_H
#define PD_CLOCK_H

/* Milliseconds on CLOCK_MONOTONIC (an arbitrary origin, never negative). */
long long pd_now_ms(void);

/* Microseconds on CLOCK_MONOTONIC, same origin as pd_now_ms(). */
long long pd_now_us(void);

#endif
