/*
 * test_support — fixture loading for the Criterion suites. Fixtures live in
 * files under tests/fixtures (MLD_FIXTURES), never in C strings.
 * Every function aborts the test (cr_assert) on failure.
 */
#ifndef TEST_SUPPORT_H
#define TEST_SUPPORT_H

#include <jansson.h>
#include <stddef.h>

/* Absolute path of a fixture; new string (free()). */
char *ts_fixture_path(const char *rel);
/* Whole file contents, NUL-terminated; new buffer (free()). */
char *ts_read_fixture(const char *rel, size_t *ret_len);
/* Parse a JSON fixture; new reference. */
json_t *ts_load_json(const char *rel);

#endif
