/*
 * tap.h: the smallest Test Anything Protocol kit that does the job.
 *
 *   plan_no_plan(); ok(x == 1, "x is one"); is_str(a, b, "name");
 *   return done_testing();
 */
#ifndef PD_TAP_H
#define PD_TAP_H

#include <stdio.h>
#include <string.h>

static int tap_n, tap_failed;

static inline int tap_ok(int cond, const char *file, int line, const char *name)
{
	tap_n++;
	printf("%sok %d - %s\n", cond ? "" : "not ", tap_n, name);
	if (!cond) {
		tap_failed++;
		printf("#   Failed test '%s'\n#   at %s line %d.\n", name, file, line);
	}
	fflush(stdout);
	return cond;
}

#define ok(cond, name) tap_ok(!!(cond), __FILE__, __LINE__, (name))

#define is_int(got, want, name)                                                                    \
	do {                                                                                       \
		long long g_ = (long long)(got), w_ = (long long)(want);                           \
		if (!ok(g_ == w_, (name)))                                                         \
			printf("#          got: %lld\n#     expected: %lld\n", g_, w_);            \
	} while (0)

#define is_str(got, want, name)                                                                    \
	do {                                                                                       \
		const char *g_ = (got), *w_ = (want);                                              \
		if (!ok(g_ && w_ && strcmp(g_, w_) == 0, (name)))                                  \
			printf("#          got: '%s'\n#     expected: '%s'\n", g_ ? g_ : "(null)", \
			       w_ ? w_ : "(null)");                                                \
	} while (0)

#define like(got, needle, name)                                                                    \
	do {                                                                                       \
		const char *g_ = (got), *n_ = (needle);                                            \
		if (!ok(g_ && strstr(g_, n_) != NULL, (name)))                                     \
			printf("#          got: '%s'\n#     expected to contain: '%s'\n",          \
			       g_ ? g_ : "(null)", n_);                                            \
	} while (0)

static inline void diag(const char *msg)
{
	printf("# %s\n", msg);
}

static inline int done_testing(void)
{
	printf("1..%d\n", tap_n);
	return tap_failed ? 1 : 0;
}

#endif
