/*
 * tsan_criterion — lets Criterion start under ThreadSanitizer (linked into
 * the Criterion executables of a -DSANITIZE=thread build only).
 *
 * Criterion (2.4.1, BoxFort 0.1.2) keeps its inheritable arena at a fixed
 * address that every test process maps again: it draws
 * 0x200000000000 + (rand_r() & 0x3fffff) * 16 MiB, probes it with mincore()
 * and gives up after 10 draws ("Could not initialize inheritable arena",
 * upstream Snaipe/Criterion#274). Under TSan that whole window is shadow,
 * meta or reserved memory except the application range of PIE binaries,
 * 0x550000000000-0x568000000000 (2.3% of it), so Criterion aborts in about
 * four runs out of five. This rand_r() answers BoxFort's draws, and only
 * those (the caller is libcriterion), inside that range; every other caller
 * (k8s_watch's jitter) gets the C library's.
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdlib.h>

#include <criterion/criterion.h>

int rand_r(unsigned int *seed);

#define STEP_SHIFT  24                               /* BoxFort: 16 MiB steps */
#define WINDOW_BASE 0x200000000000UL                 /* BoxFort: mmap_base */
#define APP_LO      0x550000000000UL                 /* TSan: PIE application memory */
#define APP_HI      (0x568000000000UL - (1UL << 30)) /* room for the arena to grow */

static const void *module_of(const void *addr)
{
    Dl_info info;
    return dladdr(addr, &info) ? info.dli_fbase : NULL;
}

static int next_rand_r(unsigned int *seed)
{
    typedef int rand_r_fn(unsigned int *);
    static rand_r_fn *real; /* any thread may be first: atomic */
    rand_r_fn *fn = __atomic_load_n(&real, __ATOMIC_ACQUIRE);
    if (!fn) {
        fn = (rand_r_fn *)dlsym(RTLD_NEXT, "rand_r");
        __atomic_store_n(&real, fn, __ATOMIC_RELEASE);
    }
    return fn(seed);
}

int rand_r(unsigned int *seed)
{
    int r = next_rand_r(seed);
    const void *caller = __builtin_return_address(0);
    if (module_of(caller) != module_of((const void *)criterion_initialize))
        return r;
    unsigned long lo = (APP_LO - WINDOW_BASE) >> STEP_SHIFT;
    unsigned long n = (APP_HI - APP_LO) >> STEP_SHIFT;
    return (int)(lo + (unsigned long)r % n);
}
