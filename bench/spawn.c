/*
 * spawn: the spawn ceiling for scripts/bench. posix_spawn PROG (default
 * /bin/true) keeping CONCURRENCY children in flight for SECONDS, then print
 * how many finished per second. No pipes, no database: what the machine can
 * do at best, to compare pd-worker's drain rate with.
 *
 *   spawn [-c CONCURRENCY] [-s SECONDS] [PROG]     (defaults: 8, 3, /bin/true)
 *
 * Prints key=value lines: spawns_per_s, completed, seconds, concurrency.
 */
#include <sys/wait.h>

#include <errno.h>
#include <spawn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

extern char **environ;

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	long concurrency = 8, completed = 0, running = 0;
	double seconds = 3, t0, end, t1;
	char *prog = "/bin/true";
	int opt;

	while ((opt = getopt(argc, argv, "c:s:")) != -1) {
		switch (opt) {
		case 'c':
			concurrency = strtol(optarg, NULL, 10);
			break;
		case 's':
			seconds = strtod(optarg, NULL);
			break;
		default:
			fprintf(stderr, "usage: spawn [-c CONCURRENCY] [-s SECONDS] [PROG]\n");
			return 64;
		}
	}
	if (optind < argc)
		prog = argv[optind];
	if (concurrency < 1 || seconds <= 0) {
		fprintf(stderr, "spawn: bad concurrency or duration\n");
		return 64;
	}

	t0 = now_s();
	end = t0 + seconds;
	for (;;) {
		int st;
		pid_t pid;

		while (running < concurrency && now_s() < end) {
			char *args[] = {prog, NULL};
			int rc = posix_spawn(&pid, prog, NULL, NULL, args, environ);

			if (rc != 0) {
				fprintf(stderr, "spawn: posix_spawn %s: %s\n", prog, strerror(rc));
				return 70;
			}
			running++;
		}
		if (running == 0)
			break;
		pid = waitpid(-1, &st, 0);
		if (pid < 0) {
			if (errno == EINTR)
				continue;
			fprintf(stderr, "spawn: waitpid: %s\n", strerror(errno));
			return 70;
		}
		running--;
		if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
			fprintf(stderr, "spawn: %s did not exit 0\n", prog);
			return 70;
		}
		completed++;
	}
	t1 = now_s();
	printf("spawns_per_s=%.0f\ncompleted=%ld\nseconds=%.3f\nconcurrency=%ld\n",
	       (double)completed / (t1 - t0), completed, t1 - t0, concurrency);
	return 0;
}
