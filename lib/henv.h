/*
 * henv: what a daemon's children (handlers, stream handlers, a relay's
 * publish commands) inherit of its environment, and the secrets the
 * daemon takes out of its own.
 *
 * The rule (pendulum.yaml(5), "secret_env"): a child gets the daemon's
 * environment without PD_DATABASE_URL and PD_LISTEN_URL, without every variable whose name
 * starts with "PG" (libpq's: PGPASSWORD, PGHOST, PGUSER, PGSERVICE,
 * PGPASSFILE...), and without the names the config lists under
 * secret_env:, except those the handler lists under pass_env:. A variable
 * the daemon withheld from its own environment at start-up
 * (pd_henv_withhold: PD_DATABASE_URL, PD_LISTEN_URL, PGPASSWORD) reaches a child only
 * through pass_env: too.
 */
#ifndef PD_HENV_H
#define PD_HENV_H

#include <stddef.h>

#define PD_HENV_MAX_NAMES 256 /* most names in one secret_env: or pass_env: list */
#define PD_HENV_NAME_MAX  128 /* longest variable name in them */

/* "NAME=value", malloc'd (never NULL: pd_xmalloc); the caller frees it. */
char *pd_henv_var(const char *name, const char *value);

/*
 * 1 if name (a variable name: letters, digits and '_', not starting with a
 * digit, at most PD_HENV_NAME_MAX bytes) is valid.
 */
int pd_henv_name_ok(const char *name);

/*
 * 1 if variable var ("NAME=value", or a bare NAME) reaches a child under
 * the rule: secret and pass are NULL-terminated name lists (NULL: none).
 */
int pd_henv_passes(const char *var, const char *const *secret, const char *const *pass);

/*
 * The environment env (NULL-terminated) as a child gets it under the rule,
 * with the withheld variables pass names added and without the variables
 * named in drop (NULL-terminated, NULL: none: the names the caller sets
 * itself): a new vector of copies with room for extra more entries and the
 * NULL (pd_strv_free); *k: how many are set.
 */
char **pd_henv_build(const char *const *env, const char *const *secret, const char *const *pass,
		     const char *const *drop, size_t extra, size_t *k);

/*
 * The process-wide secret_env: list (the loaded config's; NULL: none): set
 * when the config is loaded or reloaded. Not copied: it must outlive its use.
 */
void pd_henv_set_secret(const char *const *names);
const char *const *pd_henv_secret(void);

/*
 * Take variable name out of this process's environment: its value is
 * copied into memory of our own, the bytes of "NAME=value" (name and
 * value) are overwritten in place (/proc/self/environ shows the original block, which unsetenv
 * alone leaves as it was) and the variable is unset. Returns the copy
 * (kept until exit; also pd_henv_held's), or NULL when it was not set.
 * Call before any thread starts.
 */
const char *pd_henv_withhold(const char *name);

/* The value pd_henv_withhold took out under name, or NULL. */
const char *pd_henv_held(const char *name);

/*
 * Set var ("NAME=value", malloc'd: env owns it from now on) in env[0..*k):
 * it replaces, and frees, the variable of the same name, or is appended
 * (*k + 1; env must have room for it). A vector built only through this
 * holds each name once.
 */
void pd_henv_put(char **env, size_t *k, char *var);

/* The value of the first NAME in env ("NAME=value", NULL-terminated), or NULL. */
const char *pd_henv_get(char *const *env, const char *name);

/* Overwrite the n bytes at s with 'x' (volatile: not optimised away). */
void pd_henv_wipe(char *s, size_t n);

#endif
