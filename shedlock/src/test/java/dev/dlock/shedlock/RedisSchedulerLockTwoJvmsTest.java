package dev.dlock.shedlock;

import dev.dlock.testkit.redis.SharedRedis;

/** ShedLock's scheduled jobs in two JVMs on a real Redis. */
class RedisSchedulerLockTwoJvmsTest extends SchedulerLockTwoJvmsContract {

    @Override
    protected String store() {
        return SharedRedis.server().uri();
    }
}
