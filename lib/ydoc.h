/*
 * yaml: read a YAML file (libyaml) into a small tree that remembers where
 * every node came from, and typed accessors whose errors point there:
 *
 *   pendulum.yaml:12:3: unknown key 'retires' in 'worker'; did you mean 'retry'?
 *   pendulum.yaml:4:16: 'concurrency': expected an integer from 1 to 1024, got 'many'
 *
 * One document per file. Anchors and aliases, multiple documents and
 * non-scalar mapping keys are refused, and so is a key written twice in one
 * mapping. An empty file (or one holding only comments) is an empty mapping.
 * Tags are ignored. A plain scalar that is empty, "~" or "null" is a null:
 * pd_y_map and pd_y_seq take it as empty ("worker:" alone), the other typed
 * accessors refuse it.
 *
 * Every error is "PATH:LINE:COLUMN: what" (1-based, like a compiler); the
 * loaders use code 78 (PD_EX_CONFIG), the accessors the code they are given.
 */
#ifndef PD_YDOC_H
#define PD_YDOC_H

#include <stddef.h>

#include "err.h"

enum pd_ynode_type { PD_Y_SCALAR = 1, PD_Y_MAP, PD_Y_SEQ };

struct pd_ynode {
	enum pd_ynode_type type;
	char *value;   /* scalar text ("" for other types) */
	int line, col; /* 1-based */
	int n;
	struct pd_ynode **keys;	 /* map keys (scalars), n of them; NULL otherwise */
	struct pd_ynode **items; /* map values / seq items, n of them */
	int quoted;		 /* scalar was quoted (or a block scalar) in the source */
	struct pd_ynode *parent; /* NULL for the root; for messages ("'lease'") */
};

struct pd_ydoc {
	char *path; /* the name used in messages */
	struct pd_ynode *root;
};

#define PD_YDOC_INIT                                                                               \
	{                                                                                          \
		NULL, NULL                                                                         \
	}

/* The largest file pd_ydoc_load reads: 16 MiB. */
#define PD_YDOC_MAX_BYTES (16 * 1024 * 1024)

/*
 * Read and parse the file at path, in time linear in its size. On failure
 * d holds nothing; a file over PD_YDOC_MAX_BYTES is refused (code 78,
 * naming it and its size) having read no more than one byte past the limit.
 */
int pd_ydoc_load(struct pd_ydoc *d, const char *path, struct pd_err *e);
/* Parse text (len bytes) and name it name in messages. */
int pd_ydoc_load_string(struct pd_ydoc *d, const char *name, const char *text, size_t len,
			struct pd_err *e);
/* Free the tree; d is empty (PD_YDOC_INIT) afterwards. Safe to repeat. */
void pd_ydoc_release(struct pd_ydoc *d);

/*
 * The value under key in map, or NULL when map is NULL, not a mapping, or
 * has no such key.
 */
const struct pd_ynode *pd_y_get(const struct pd_ynode *map, const char *key);

/* 1 if n is a null (a plain "", "~" or "null" scalar), else 0. */
int pd_y_is_null(const struct pd_ynode *n);

/*
 * Typed accessors. Each returns 0 and stores the value, or returns -1
 * having filled e with code and "PATH:L:C: 'key': expected ..., got ...".
 */
/* Any non-null scalar; *out points into the tree. */
int pd_y_str(const struct pd_ydoc *d, const struct pd_ynode *n, const char **out, int code,
	     struct pd_err *e);
/* A plain decimal integer in [min, max] (quoted "4" is a string, refused). */
int pd_y_int(const struct pd_ydoc *d, const struct pd_ynode *n, long long min, long long max,
	     long long *out, int code, struct pd_err *e);
/* A plain true/false/yes/no/on/off, any case. */
int pd_y_bool(const struct pd_ydoc *d, const struct pd_ynode *n, int *out, int code,
	      struct pd_err *e);
/* A duration (pd_dur_parse); plain numbers are seconds. */
int pd_y_dur(const struct pd_ydoc *d, const struct pd_ynode *n, long long *ms, int code,
	     struct pd_err *e);
/*
 * Check the node's type: "expected a mapping, got a sequence". A null
 * passes (n == 0: nothing to iterate, pd_y_get finds nothing).
 */
int pd_y_map(const struct pd_ydoc *d, const struct pd_ynode *n, int code, struct pd_err *e);
int pd_y_seq(const struct pd_ydoc *d, const struct pd_ynode *n, int code, struct pd_err *e);

/*
 * Report key_node as unknown: "PATH:L:C: unknown key 'k'" (at the top level)
 * or "... unknown key 'k' in 'section'". Always returns -1.
 */
int pd_y_unknown_key(const struct pd_ydoc *d, const struct pd_ynode *key_node, int code,
		     struct pd_err *e);
/*
 * Check that map is a mapping whose keys are all in known (NULL-terminated);
 * the first other key is reported with pd_y_unknown_key_hint.
 */
int pd_y_check_keys(const struct pd_ydoc *d, const struct pd_ynode *map, const char *const *known,
		    int code, struct pd_err *e);

/*
 * Report a custom problem at n: "PATH:L:C: <fmt...>". Always returns -1.
 * For checks the accessors above do not cover.
 */
int pd_y_errf(const struct pd_ydoc *d, const struct pd_ynode *n, int code, struct pd_err *e,
	      const char *fmt, ...) __attribute__((format(printf, 5, 6)));

/*
 * Describe n for messages into out: "'lease'" for a mapping value,
 * "'queues' item 2" for a sequence item, "key 'x'", or "the top level".
 */
const char *pd_y_describe(const struct pd_ynode *n, char *out, size_t size);

#endif
