/* SPDX-License-Identifier: MIT */
/*
 * replay.c - the main() of a fuzz target built without libFuzzer: run every
 * file named on the command line (directories: every regular file in them,
 * in name order) through LLVMFuzzerTestOneInput once.  Each input sits in a
 * buffer of exactly its size, so a sanitizer sees any read past its end.
 * Fails when no input was found: a corpus that vanished must not pass.
 */
#include <dirent.h>
#include <errno.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "fuzz.h"

__attribute__((weak)) int LLVMFuzzerInitialize(int *argc, char ***argv) { return 0; }
__attribute__((weak)) void fuzz_fini(void) {}

static unsigned long ninputs, nbytes;

static int run_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	uint8_t *buf;
	long len;

	if (!f) {
		fprintf(stderr, "replay: cannot open %s: %s\n", path, strerror(errno));
		return -1;
	}
	if (fseek(f, 0, SEEK_END) || (len = ftell(f)) < 0 || fseek(f, 0, SEEK_SET)) {
		fprintf(stderr, "replay: cannot size %s\n", path);
		fclose(f);
		return -1;
	}
	buf = malloc(len ? (size_t)len : 1);
	if (!buf || (len && fread(buf, 1, (size_t)len, f) != (size_t)len)) {
		fprintf(stderr, "replay: cannot read %s\n", path);
		free(buf);
		fclose(f);
		return -1;
	}
	fclose(f);
	if (getenv("GDAK_FUZZ_VERBOSE"))
		fprintf(stderr, "replay: %s (%ld bytes)\n", path, len);
	/* what it returns is libFuzzer's keep/reject hint, not a verdict */
	LLVMFuzzerTestOneInput(buf, (size_t)len);
	free(buf);
	ninputs++;
	nbytes += (unsigned long)len;
	return 0;
}

static int cmp_names(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

static int run_dir(const char *dir)
{
	DIR *d = opendir(dir);
	struct dirent *e;
	char **names = NULL;
	size_t n = 0, cap = 0;
	int rc = 0;

	if (!d) {
		fprintf(stderr, "replay: cannot open directory %s: %s\n", dir, strerror(errno));
		return -1;
	}
	while ((e = readdir(d))) {
		if (e->d_name[0] == '.')
			continue;
		if (n == cap) {
			char **nn = realloc(names, (cap = cap ? cap * 2 : 64) * sizeof(*names));
			if (!nn)
				abort();
			names = nn;
		}
		names[n++] = strdup(e->d_name);
	}
	closedir(d);
	if (n)
		qsort(names, n, sizeof(*names), cmp_names);
	for (size_t i = 0; i < n; i++) {
		char path[4096];
		struct stat st;

		snprintf(path, sizeof(path), "%s/%s", dir, names[i]);
		if (!stat(path, &st) && S_ISREG(st.st_mode) && run_file(path))
			rc = -1;
		free(names[i]);
	}
	free(names);
	return rc;
}

int main(int argc, char **argv)
{
	struct timespec t0, t1;
	int rc = 0;

	if (argc < 2) {
		fprintf(stderr, "usage: %s CORPUS_DIR_OR_FILE...\n", argv[0]);
		return 2;
	}
	LLVMFuzzerInitialize(&argc, &argv);
	clock_gettime(CLOCK_MONOTONIC, &t0);
	for (int i = 1; i < argc; i++) {
		struct stat st;

		if (stat(argv[i], &st)) {
			fprintf(stderr, "replay: %s: %s\n", argv[i], strerror(errno));
			rc = 1;
		} else if (S_ISDIR(st.st_mode) ? run_dir(argv[i]) : run_file(argv[i])) {
			rc = 1;
		}
	}
	clock_gettime(CLOCK_MONOTONIC, &t1);
	fuzz_fini();
	printf("replay: %lu inputs, %lu bytes, %.1f ms\n", ninputs, nbytes,
	       (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
	if (!ninputs) {
		fprintf(stderr, "replay: no inputs found\n");
		return 1;
	}
	return rc;
}
