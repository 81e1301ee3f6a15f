/*
 * libFuzzer target for lib/crontab: the input parsed as a crontab file
 * ("fuzz.crontab", host zone Europe/Berlin).
 *
 *   make fuzz FUZZ_SECONDS=60       (or build-fuzz/fuzz/crontab_fuzz DIR)
 *
 * Checks: a failure is code 65 and one line naming the file and the line; a
 * success gives schedules that pass pd_sched_check, named uniquely, of type
 * "crontab.fuzz.NAME", in line order, each with a one-line command and an
 * environment of NAME=value strings.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "crontab.h"
#include "err.h"
#include "sched.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pd_crontab t;
	struct pd_err e = PD_ERR_INIT;
	char *text = fuzz_text(data, size);

	memset(&t, 0, sizeof(t));
	if (pd_crontab_parse(&t, "fuzz.crontab", text, size, "Europe/Berlin", NULL, &e) < 0) {
		CHECK(e.code == PD_EX_DATAERR);
		CHECK(strncmp(e.msg, "fuzz.crontab:", 13) == 0);
		CHECK(strchr(e.msg, '\n') == NULL);
	} else {
		struct pd_sched *v = pd_crontab_scheds(&t);
		char prefix[128];

		pd_crontab_prefix(&t, prefix, sizeof(prefix));
		CHECK(strcmp(prefix, "crontab.fuzz.") == 0);
		for (int i = 0; i < t.n; i++) {
			const struct pd_crontab_entry *x = &t.v[i];

			CHECK(pd_sched_check(&v[i], &e) == 0);
			CHECK(strncmp(x->s.type, prefix, strlen(prefix)) == 0);
			CHECK(strcmp(x->s.type + strlen(prefix), x->s.name) == 0);
			CHECK(x->command != NULL && strchr(x->command, '\n') == NULL);
			CHECK(x->s.line >= 1 && (i == 0 || x->s.line > t.v[i - 1].s.line));
			for (int k = 0; k < i; k++)
				CHECK(strcmp(t.v[k].s.name, x->s.name) != 0);
			for (int k = 0; k < x->nenv; k++)
				CHECK(strchr(x->env[k], '=') != NULL);
			CHECK(x->env == NULL || x->env[x->nenv] == NULL);
		}
		free(v);
	}
	pd_crontab_release(&t);
	free(text);
	return 0;
}
