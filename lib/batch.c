#include "batch.h"

/*
 * The round trip the sizes cover: a worker pausing its writes sends one
 * every rtt + pause; a handler that runs longer than the pause needs no
 * more jobs for it (its runs end fewer than conc times a pause).
 */
static long long span_us(const struct pd_batch_in *in)
{
	return in->rtt_us + (in->run_us < in->pause_us ? in->pause_us : 0);
}

long long pd_batch_size(const struct pd_batch_in *in)
{
	long long cap = in->cap > in->floor ? in->cap : in->floor, b, rtt = span_us(in);

	if (in->rtt_us <= 0 || in->run_us <= 0)
		return in->floor;
	/* jobs the runs get through in two round trips; divided first: no overflow */
	if (2 * (rtt / in->run_us) >= cap)
		return cap;
	b = (2 * in->conc * rtt + in->run_us / 2) / in->run_us;
	return b < in->floor ? in->floor : b > cap ? cap : b;
}

long long pd_batch_depth(const struct pd_batch_in *in)
{
	long long cap = in->conc, d, rtt = span_us(in), b = pd_batch_size(in);

	/* a stream batch is answered while the next is claimed; processes: the batch */
	if (in->stream && 2 * b > cap)
		cap = 2 * b;
	else if (!in->stream && b > cap)
		cap = b;
	if (in->rtt_us <= 0 || in->run_us <= 0)
		return 0;
	if (rtt / in->run_us >= cap)
		return cap;
	d = (2 * in->conc * rtt + in->run_us / 2) / in->run_us;
	return d > cap ? cap : d;
}

int pd_batch_pause(const struct pd_batch_in *in, long long nready, long long left_us)
{
	if (in->pause_us <= 0 || in->rtt_us <= 0 || in->run_us <= 0 || nready <= 0)
		return 0;
	return nready * in->run_us > in->conc * (in->rtt_us + left_us);
}
