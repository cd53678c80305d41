#include "k8s_rlimit.h"

#include <sys/resource.h>

unsigned long k8s_rlimit_raise_nofile(void)
{
    struct rlimit rl;
    if (getrlimit(RLIMIT_NOFILE, &rl) != 0)
        return 0;
    if (rl.rlim_cur < rl.rlim_max) {
        struct rlimit want = {rl.rlim_max, rl.rlim_max};
        if (setrlimit(RLIMIT_NOFILE, &want) == 0)
            rl = want;
    }
    return (unsigned long)rl.rlim_cur;
}
