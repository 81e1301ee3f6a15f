#include <stdlib.h>
#include <string.h>

#include "err.h"
#include "henv.h"

extern char **environ;

char *pd_henv_var(const char *name, const char *value)
{
	size_t ln = strlen(name), lv = strlen(value);
	char *s = pd_xmalloc(ln + lv + 2);

	memcpy(s, name, ln);
	s[ln] = '=';
	memcpy(s + ln + 1, value, lv + 1);
	return s;
}

int pd_henv_name_ok(const char *name)
{
	size_t n = strlen(name);

	if (n == 0 || n > PD_HENV_NAME_MAX || (name[0] >= '0' && name[0] <= '9'))
		return 0;
	for (size_t i = 0; i < n; i++) {
		char c = name[i];

		if (!((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') ||
		      c == '_'))
			return 0;
	}
	return 1;
}

/*
 * 1 if var ("NAME=value" or "NAME", its name l bytes) is named in list
 * (NULL-terminated, or NULL). Once a variable a job (pd_henv_build): the
 * first byte first, no strlen of the names.
 */
static int named_n(const char *var, size_t l, const char *const *list)
{
	for (; list && *list; list++)
		if ((*list)[0] == var[0] && strncmp(var, *list, l) == 0 && (*list)[l] == '\0')
			return 1;
	return 0;
}

static int named(const char *var, const char *const *list)
{
	return named_n(var, strcspn(var, "="), list);
}

/* pd_henv_passes for var, whose name is l bytes. */
static int passes_n(const char *var, size_t l, const char *const *secret, const char *const *pass)
{
	if (named_n(var, l, pass))
		return 1;
	if (l == 15 && strncmp(var, "PD_DATABASE_URL", 15) == 0)
		return 0;
	if (l == 13 && strncmp(var, "PD_LISTEN_URL", 13) == 0)
		return 0;
	if (strncmp(var, "PG", 2) == 0)
		return 0;
	return !named_n(var, l, secret);
}

int pd_henv_passes(const char *var, const char *const *secret, const char *const *pass)
{
	return passes_n(var, strcspn(var, "="), secret, pass);
}

char **pd_henv_build(const char *const *env, const char *const *secret, const char *const *pass,
		     const char *const *drop, size_t extra, size_t *k)
{
	size_t n = 0, np = 0;
	char **out;

	while (env && env[n])
		n++;
	while (pass && pass[np])
		np++;
	out = pd_xcalloc(n + np + extra + 1, sizeof(*out));
	*k = 0;
	for (size_t i = 0; i < n; i++) {
		size_t l = strcspn(env[i], "=");

		if (!named_n(env[i], l, drop) && passes_n(env[i], l, secret, pass))
			out[(*k)++] = pd_xstrdup(env[i]);
	}
	/* A variable withheld from our own environment, passed: its value given back. */
	for (size_t i = 0; i < np; i++) {
		const char *v = pd_henv_held(pass[i]);

		if (v != NULL && !named(pass[i], drop))
			out[(*k)++] = pd_henv_var(pass[i], v);
	}
	return out;
}

static const char *const *secret_names;

void pd_henv_set_secret(const char *const *names)
{
	secret_names = names;
}

const char *const *pd_henv_secret(void)
{
	return secret_names;
}

#define HELD_MAX 8

static struct {
	char *name, *value;
} held[HELD_MAX];
static int nheld;

void pd_henv_wipe(char *s, size_t n)
{
	volatile char *p = s;

	for (size_t i = 0; i < n; i++)
		p[i] = 'x';
}

const char *pd_henv_withhold(const char *name)
{
	size_t l = strlen(name);
	const char *kept = pd_henv_held(name);
	char *value = NULL;

	if (kept != NULL)
		return kept;
	/* Every copy of it in environ: the block the kernel shows, and any setenv's. */
	for (char **e = environ; e && *e; e++) {
		if (strncmp(*e, name, l) != 0 || (*e)[l] != '=')
			continue;
		if (value == NULL)
			value = pd_xstrdup(*e + l + 1);
		pd_henv_wipe(*e, strlen(*e)); /* the name too: nothing says it was there */
	}
	unsetenv(name);
	if (value == NULL)
		return NULL;
	if (nheld == HELD_MAX)
		return value; /* a fixed few names: not reached */
	held[nheld].name = pd_xstrdup(name);
	held[nheld].value = value;
	return held[nheld++].value;
}

const char *pd_henv_held(const char *name)
{
	for (int i = 0; i < nheld; i++)
		if (strcmp(held[i].name, name) == 0)
			return held[i].value;
	return NULL;
}

void pd_henv_put(char **env, size_t *k, char *var)
{
	size_t l = strcspn(var, "="), i = 0;

	while (i < *k && !(strncmp(env[i], var, l) == 0 && env[i][l] == '='))
		i++;
	if (i == *k)
		(*k)++;
	else
		free(env[i]);
	env[i] = var;
}

const char *pd_henv_get(char *const *env, const char *name)
{
	size_t l = strlen(name);

	for (; env && *env; env++)
		if (strncmp(*env, name, l) == 0 && (*env)[l] == '=')
			return *env + l + 1;
	return NULL;
}
