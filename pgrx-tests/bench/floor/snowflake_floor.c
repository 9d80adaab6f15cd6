/*
 * The physical floor of snowflake_nextval(), for the benchmark only (never installed by the
 * extension): a C function that does one vDSO clock_gettime() and one compare-and-swap on a word
 * in shared memory, and nothing else: no layout, no machine id, no mark, no statistics. What
 * pg_snowflake's own function costs above it is the price of everything it checks.
 * Built with PGXS by pgrx-tests/bench/per_id.sh.
 */
#include "postgres.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "port/atomics.h"
#include "storage/lwlock.h"
#include "storage/ipc.h"
#include "storage/shmem.h"

#include <time.h>

PG_MODULE_MAGIC;
PG_FUNCTION_INFO_V1(snowflake_floor);

static pg_atomic_uint64 *word = NULL;

Datum
snowflake_floor(PG_FUNCTION_ARGS)
{
	struct timespec ts;
	uint64		now,
				cur,
				next;

	if (word == NULL)
	{
		bool		found;

		/* A word of shared memory, as pg_snowflake's state word (taken from the main segment's
		 * spare space: a few bytes, once per backend). */
		LWLockAcquire(AddinShmemInitLock, LW_EXCLUSIVE);
		word = ShmemInitStruct("snowflake_floor", sizeof(pg_atomic_uint64), &found);
		if (!found)
			pg_atomic_init_u64(word, 0);
		LWLockRelease(AddinShmemInitLock);
	}
	clock_gettime(CLOCK_REALTIME, &ts);
	now = ((uint64) ts.tv_sec * 1000 + ts.tv_nsec / 1000000) << 22;
	cur = pg_atomic_read_u64(word);
	do
		next = now > cur ? now : cur + 1;
	while (!pg_atomic_compare_exchange_u64(word, &cur, next));
	PG_RETURN_INT64((int64) next);
}
