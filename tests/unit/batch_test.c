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
	is_int(pd_batch_depth(&in), 32, "fast process handler: its batch (two round trips' worth)");
	in = in8(1000, 4000, 0);
	is_int(pd_batch_depth(&in), 4, "two round trips' worth");
	in = in8(1500, 60, 1);
	is_int(pd_batch_depth(&in), 400, "fast stream: two round trips' worth");
	in = in8(1500, 40, 1);
	is_int(pd_batch_depth(&in), 600, "faster stream: two round trips' worth");
	in = in8(1500, 5, 1);
	is_int(pd_batch_depth(&in), 2000, "very fast stream: twice the cap, the bound");
	in = in8(1500, 5, 0);
	is_int(pd_batch_depth(&in), 1000, "processes: at most the cap (the batch), not twice");
	in = in8(1000000000LL, 1, 1);
	is_int(pd_batch_depth(&in), 2000, "a huge ratio: the bound, no overflow");
}

/* A worker with handler processes: the pause counts in the round trip. */
static void pause_(void)
{
	struct pd_batch_in in = in8(1000, 1000, 0);

	in.pause_us = 50000;
	is_int(pd_batch_size(&in), 816, "the pause in the round trip: 2 x 8 x 51 ms / 1 ms");
	is_int(pd_batch_depth(&in), 816, "the depth reaches the batch");
	in.cap = 100;
	is_int(pd_batch_depth(&in), 100, "the cap bounds the depth");
	in = in8(1000, 1000000, 0);
	in.pause_us = 50000;
	is_int(pd_batch_size(&in), 8, "slow handler (1 s): the floor, pause or not");
	is_int(pd_batch_depth(&in), 0, "slow handler: none held ready");
	in = in8(2000, 1000, 0);
	in.pause_us = 50000;
	is_int(pd_batch_pause(&in, 17, 0), 1,
	       "17 ready jobs of 1 ms on 8 runs outlast a 2 ms round trip");
	is_int(pd_batch_pause(&in, 16, 0), 0, "16 last exactly a round trip: send now");
	is_int(pd_batch_pause(&in, 0, 0), 0, "none ready: send now");
	is_int(pd_batch_pause(&in, 417, 50000), 1, "417 outlast 50 ms of pause and a round trip");
	is_int(pd_batch_pause(&in, 416, 50000), 0, "416 last exactly that: send now");
	in.pause_us = 0;
	is_int(pd_batch_pause(&in, 1000, 0), 0, "no pause (stream handlers): send now");
	in = in8(0, 1000, 0);
	in.pause_us = 50000;
	is_int(pd_batch_pause(&in, 1000, 0), 0, "no round trip measured: send now");
	in = in8(2000, 0, 0);
	in.pause_us = 50000;
	is_int(pd_batch_pause(&in, 1000, 0), 0, "no run measured: send now");
}

int main(void)
{
	size();
	depth();
	pause_();
	return done_testing();
}
