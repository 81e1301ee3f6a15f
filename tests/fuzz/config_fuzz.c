/*
 * libFuzzer target for the configuration file (lib/ydoc, lib/config,
 * lib/handler, lib/flow): the input decoded as pendulum.yaml into struct
 * pd_config (pd_config_load_string, named "fuzz.yaml").
 *
 *   make fuzz FUZZ_SECONDS=60       (or build-fuzz/fuzz/config_fuzz DIR)
 *
 * Checks: a failure is code 78 in one line naming fuzz.yaml; a success has
 * named handlers and topics, and every workflow is found by its name.
 */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "config.h"
#include "err.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct pd_config c;
	struct pd_err e = PD_ERR_INIT;
	char *text = fuzz_text(data, size);

	pd_config_init(&c);
	if (pd_config_load_string(&c, "fuzz.yaml", text, size, &e) < 0) {
		CHECK(e.code == PD_EX_CONFIG);
		CHECK(strncmp(e.msg, "fuzz.yaml", 9) == 0);
		CHECK(strchr(e.msg, '\n') == NULL);
	} else {
		for (int i = 0; i < c.nhandlers; i++)
			CHECK(c.handlers[i].name != NULL && c.handlers[i].name[0] != '\0');
		for (int i = 0; i < c.relay.ntopics; i++)
			CHECK(c.relay.topics[i].name != NULL && c.relay.topics[i].name[0] != '\0');
		for (int i = 0; i < c.nflows; i++)
			CHECK(pd_config_flow(&c, c.flows[i].name) != NULL);
		CHECK(c.worker.queues == NULL || c.worker.queues[c.worker.nqueues] == NULL);
	}
	pd_config_release(&c);
	free(text);
	return 0;
}
