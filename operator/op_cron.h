/*
 * op_cron — a capture schedule (spec.schedule): the five-field cron syntax
 * CronJob takes (minute, hour, day of month, month, day of week; numbers,
 * "*", ranges "a-b", steps "*\/n" and "a-b/n", lists "a,b", month and day
 * names JAN..DEC and SUN..SAT, Sunday as 0 or 7) and its macros (@yearly,
 * @annually, @monthly, @weekly, @daily, @midnight, @hourly), in UTC. As in
 * cron, when both the day of month and the day of week are restricted, a
 * day matches either.
 *
 * Thread-safety: reentrant; a parsed schedule is a value.
 */
#ifndef OP_CRON_H
#define OP_CRON_H

#include <stdbool.h>
#include <stdint.h>

#include "k8s_err.h"

struct op_cron {
    uint64_t minute;           /* bit m: minute m matches */
    uint32_t hour, dom, month; /* bit h / d (1-31) / m (1-12) */
    uint8_t dow;               /* bit d: day of week d (0 Sunday) */
    bool dom_any, dow_any;     /* "*": not restricted */
};

/* Parse spec. -K8S_EINVAL with reterr naming the field and the problem
 * ("spec.schedule: hour: 25 is out of range 0-23"); *ret untouched then. */
int op_cron_parse(const char *spec, struct op_cron *ret, struct k8s_error *reterr) K8S_MUST_CHECK;

/* The first tick strictly after after_s (unix seconds), -1 when none
 * within five years (a schedule such as "0 0 30 2 *"). */
int64_t op_cron_next(const struct op_cron *c, int64_t after_s);

/* The latest tick t with after_s < t <= now_s, -1 when none: the one a
 * schedule owes after an outage (missed ticks run once, not each). */
int64_t op_cron_last(const struct op_cron *c, int64_t after_s, int64_t now_s);

#endif
