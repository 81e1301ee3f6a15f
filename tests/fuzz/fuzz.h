/*
 * What every libFuzzer target of tests/fuzz shares: the entry point's
 * prototype, CHECK (a broken promise aborts, which libFuzzer reports as a
 * crash with its input), and fuzz_text (the input as a buffer of exactly its
 * bytes, so that ASan sees any read past them).
 */
#ifndef PD_FUZZ_H
#define PD_FUZZ_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define CHECK(cond)                                                                                \
	do {                                                                                       \
		if (!(cond))                                                                       \
			abort();                                                                   \
	} while (0)

/* A malloc'd copy of data[0..size), not NUL-terminated; the caller frees it. */
static inline char *fuzz_text(const uint8_t *data, size_t size)
{
	char *text = malloc(size ? size : 1);

	if (text == NULL)
		abort();
	memcpy(text, data, size);
	return text;
}

#endif
