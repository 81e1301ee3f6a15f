/* The batch and the prefetch depth from the measured rates (lib/batch): pure. */
#include "batch.h"
#include "tap.h"

/* -j 8 --batch 8, the default cap, stream handlers or processes. */
static struct pd_batch_in in8(long long rtt_us, long long run_us, int stream)
{
	return (struct pd_batch_in){.conc = 8,
				    .floor = 8,
				    .cap = 1000,
				    .rtt_us = rtt_us,
				    .run_us = run_us,
				    .stream = stream};
}

static void size(void)
{
	struct pd_batch_in in = in8(0, 0, 1);

	is_int(pd_batch_size(&in), 8, "nothing measured: the floor");
	in = in8(1500, 0, 1);
	is_int(pd_batch_size(&in), 8, "no run measured: the floor");
	in = in8(0, 40, 1);
	is_int(pd_batch_size(&in), 8, "no round trip measured: the floor");
	in = in8(1500, 60, 1);
	is_int(pd_batch_size(&in), 400,
	       "fast stream: what the runs get through in two round trips");
	in = in8(1500, 5, 1);
	is_int(pd_batch_size(&in), 1000, "very fast stream: the cap");
	in = in8(1500, 100000, 0);
	is_int(pd_batch_size(&in), 8, "slow process handler: the floor");
	in = in8(1000, 1000, 0);
	is_int(pd_batch_size(&in), 16, "process handler as fast as a round trip: twice the runs");
	in = in8(1000, 3000, 0);
	is_int(pd_batch_size(&in), 8, "process handler a little slower: the floor");
	in = in8(1500, 5, 1);
	in.cap = 300;
	is_int(pd_batch_size(&in), 300, "a lower cap holds");
	in.cap = 4;
	is_int(pd_batch_size(&in), 8, "a cap below the floor: the floor");
	in = in8(1000000000LL, 1, 1);
	is_int(pd_batch_size(&in), 1000, "a huge ratio: the cap, no overflow");
	in = in8(1000000000LL, 999999999LL, 1);
	is_int(pd_batch_size(&in), 16, "huge times, ratio 1: twice the runs, no overflow");
}

static void depth(void)
{
	struct pd_batch_in in = in8(0, 0, 1);

	is_int(pd_batch_depth(&in), 0, "nothing measured: none held ready");
	in = in8(1500, 100000, 0);
	is_int(pd_batch_depth(&in), 0, "slow process handler: none");
	in = in8(2000, 1000, 0);
	is_int(pd_batch_depth(&in), 8, "fast process handler: at most the concurrency");
	in = in8(1000, 4000, 0);
	is_int(pd_batch_depth(&in), 4, "two round trips' worth");
	in = in8(1500, 60, 1);
	is_int(pd_batch_depth(&in), 400, "fast stream: two round trips' worth");
	in = in8(1500, 40, 1);
	is_int(pd_batch_depth(&in), 600, "faster stream: two round trips' worth");
	in = in8(1500, 5, 1);
	is_int(pd_batch_depth(&in), 2000, "very fast stream: twice the cap, the bound");
	in = in8(1500, 5, 0);
	is_int(pd_batch_depth(&in), 8, "processes: the concurrency whatever the cap");
	in = in8(1000000000LL, 1, 1);
	is_int(pd_batch_depth(&in), 2000, "a huge ratio: the bound, no overflow");
}

int main(void)
{
	size();
	depth();
	return done_testing();
}
