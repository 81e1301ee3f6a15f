#include "batch.h"

long long pd_batch_size(const struct pd_batch_in *in)
{
	long long cap = in->cap > in->floor ? in->cap : in->floor, b;

	if (in->rtt_us <= 0 || in->run_us <= 0)
		return in->floor;
	/* jobs the runs get through in two round trips; divided first: no overflow */
	if (2 * (in->rtt_us / in->run_us) >= cap)
		return cap;
	b = (2 * in->conc * in->rtt_us + in->run_us / 2) / in->run_us;
	return b < in->floor ? in->floor : b > cap ? cap : b;
}

long long pd_batch_depth(const struct pd_batch_in *in)
{
	long long cap = in->conc, d;

	if (in->stream && 2 * pd_batch_size(in) > cap)
		cap = 2 * pd_batch_size(in);
	if (in->rtt_us <= 0 || in->run_us <= 0)
		return 0;
	if (in->rtt_us / in->run_us >= cap)
		return cap;
	d = (2 * in->conc * in->rtt_us + in->run_us / 2) / in->run_us;
	return d > cap ? cap : d;
}
