/* SPDX-License-Identifier: MIT */
/*
 * env.h - the one table of gdak's environment variables.
 *
 * Every variable the library and its tools read is a row here (name, type,
 * allowed values, default, one line of documentation), and every read goes
 * through gdak_env_raw(), the only getenv() of the tree.  gdak_open() checks
 * every variable that is set before it opens anything: a bad value fails it
 * with -EINVAL and a message naming the variable, the value and what is
 * allowed, whatever backend or transport would have read it.  `gdak-info`
 * prints the table with the current values and the defaults.  (Code that
 * does not link gdak - the gdak-run launcher, gdak-rxe-peer, the examples'
 * own settings - reads its variables itself; gdak's libmlx5 and libefa log
 * through gdak's libibverbs, gdak_ibv_note.  The test gdak.core.one_getenv
 * fails on any other getenv of the library.)
 */
#ifndef GDAK_ENV_H
#define GDAK_ENV_H

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

enum gdak_env_type {
	GDAK_ENV_TEXT = 0, /* free text checked by its reader (a path, a fault spec) */
	GDAK_ENV_UINT,	   /* a decimal in [min, max] */
	GDAK_ENV_BOOL,	   /* 0/1, off/on, no/yes, false/true (any case) */
	GDAK_ENV_CHOICE,   /* one of the '|'-separated words of `choices` (any case) */
};

struct gdak_env_var {
	const char *name;
	enum gdak_env_type type;
	const char *def;	     /* the default as text; "" when the default is "not set" */
	unsigned long long min, max; /* GDAK_ENV_UINT */
	const char *choices;	     /* GDAK_ENV_CHOICE */
	const char *area; /* who reads it: core, nic, udp, verbs, cuda, trace, capture, hw, tools */
	const char *doc;
};

/* The table, n rows. */
const struct gdak_env_var *gdak_env_table(size_t *n);
/* The row of name, or NULL. */
const struct gdak_env_var *gdak_env_find(const char *name);
/* The value of name in the environment, NULL when unset or empty (any name:
 * also the variables of other programs, e.g. an MPI launcher's). */
const char *gdak_env_raw(const char *name);

/*
 * Typed reads.  Each returns 0 with *out set from the environment, or from the
 * row's default when the variable is unset (1 is returned instead of 0 then,
 * so a caller can tell); -EINVAL when the value is not allowed (logged, naming
 * variable, value and what is allowed); -ENOENT when name is not in the table
 * (a bug: logged).  gdak_env_choice gives the index of the word in `choices`.
 */
int gdak_env_uint(const char *name, unsigned long long *out);
int gdak_env_bool(const char *name, int *out);
int gdak_env_choice(const char *name, int *out);
/* The value, or the default when unset (NULL when the default is "not set"). */
const char *gdak_env_text(const char *name);

/* What v allows, as text ("1..64", "spin|adaptive", "0|1"), into buf. */
const char *gdak_env_allowed(const struct gdak_env_var *v, char *buf, size_t len);
/* 0 when the value of v (set, or NULL for unset) is allowed, else -EINVAL. */
int gdak_env_check_value(const struct gdak_env_var *v, const char *value);
/* Check every variable of the table that is set: 0, or -EINVAL after one log
 * line per bad variable. */
int gdak_env_validate(void);

#ifdef __cplusplus
}
#endif
#endif /* GDAK_ENV_H */
