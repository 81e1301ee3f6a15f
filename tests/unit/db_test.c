/*
 * db_test: the SQLSTATE table (exit codes, transient and data-error
 * classes, a caller's remap) and the array literals, without PostgreSQL.
 */
#include <stdlib.h>

#include "db.h"
#include "tap.h"

static void text_array(const char *const *v, int n, const char *want, const char *name)
{
	struct pd_buf b = PD_BUF_INIT;

	pd_db_text_array(&b, v, n);
	is_str(b.data, want, name);
	pd_buf_release(&b);
}

int main(void)
{
	static const struct pd_db_remap map[] = {
	    {"23503", PD_EX_NOTFOUND}, {"23", PD_EX_CONFLICT}, {NULL, 0}};
	static const long long ids[] = {1, -2, 9223372036854775807LL};
	static const char *const names[] = {"a", "b c", "q\"u\\o", ""};
	struct pd_buf b = PD_BUF_INIT;

	is_int(pd_db_exit_code("08006"), PD_EX_UNAVAILABLE, "class 08: unavailable");
	is_int(pd_db_exit_code("57P01"), PD_EX_UNAVAILABLE, "57P01 admin shutdown: unavailable");
	is_int(pd_db_exit_code("57014"), PD_EX_SOFTWARE, "57014 query canceled is not 57P");
	is_int(pd_db_exit_code("22023"), PD_EX_DATAERR, "class 22: bad data");
	is_int(pd_db_exit_code("23505"), PD_EX_DATAERR, "class 23: bad data");
	is_int(pd_db_exit_code("54000"), PD_EX_SOFTWARE, "class 54: internal");
	is_int(pd_db_exit_code("40P01"), PD_EX_SOFTWARE, "class 40: internal");
	is_int(pd_db_exit_code("42P01"), PD_EX_SOFTWARE, "class 42: internal");
	is_int(pd_db_exit_code(""), PD_EX_SOFTWARE, "no SQLSTATE: internal");
	is_int(pd_db_exit_code(NULL), PD_EX_SOFTWARE, "NULL: internal");

	ok(pd_db_transient("40P01"), "a deadlock is transient");
	ok(pd_db_transient("40001"), "a serialization failure is transient");
	ok(pd_db_transient("53100"), "a full disk is transient");
	ok(!pd_db_transient("22023"), "bad data is not transient");
	ok(!pd_db_transient("08006"), "a lost connection is not (it is unavailable)");
	ok(!pd_db_transient(""), "no SQLSTATE is not transient");

	ok(pd_db_data_error("22003"), "a number out of range is a data error");
	ok(pd_db_data_error("23514"), "a check violation is a data error");
	ok(pd_db_data_error("54000"), "a program limit is a data error");
	ok(!pd_db_data_error("40P01"), "a deadlock is no data error");
	ok(!pd_db_data_error("42883"), "an undefined function is no data error");
	ok(!pd_db_data_error(NULL), "NULL is no data error");

	is_int(pd_db_remap_code(map, "23503"), PD_EX_NOTFOUND, "remap: the state itself first");
	is_int(pd_db_remap_code(map, "23505"), PD_EX_CONFLICT, "remap: then its class");
	is_int(pd_db_remap_code(map, "22023"), 0, "remap: 0 where the map says nothing");
	is_int(pd_db_remap_code(map, ""), 0, "remap: 0 for no SQLSTATE");
	is_int(pd_db_remap_code(NULL, "23503"), 0, "remap: 0 for no map");

	pd_db_id_array(&b, ids, 3);
	is_str(b.data, "{1,-2,9223372036854775807}", "bigint[] literal");
	pd_buf_reset(&b);
	pd_db_id_array(&b, ids, 0);
	is_str(b.data, "{}", "empty bigint[] literal");
	pd_buf_release(&b);
	text_array(names, 4, "{\"a\",\"b c\",\"q\\\"u\\\\o\",\"\"}", "text[] literal, quoted");
	text_array(names, 0, "{}", "empty text[] literal");
	return done_testing();
}
