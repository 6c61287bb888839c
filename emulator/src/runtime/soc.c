/*
 * The emulated part: aclrtGetSocName and ACL_EMU_SOC.
 *
 * A device's SoC name is fixed for the life of the process (the vendor's runtime reads it
 * once from the driver and caches it, before or without aclInit), so ACL_EMU_SOC is read
 * once, at the first call that needs it. The names are the vendor's own part names (one
 * platform configuration file each in hicann/runtime src/platform/platform_config/), limited
 * to the series the operators' docs talk about; the NPU architecture decides what a part
 * computes (BFLOAT16: Atlas A2/A3 (DAV_2201) and Ascend 950 (DAV_3510) only).
 */
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "rt_internal.h"

#define SOC_DEFAULT "Ascend910B2"

#define TRAINING "Atlas training series"
#define INFERENCE "Atlas inference series"
#define A2 "Atlas A2 training/inference series"
#define A3 "Atlas A3 training/inference series"
#define A950 "Ascend 950PR/950DT"

static const aclemu_soc SOCS[] = {
    {"Ascend910A", TRAINING, 1001, false},
    {"Ascend910B", TRAINING, 1001, false}, /* a first-generation part, not Atlas A2 */
    {"Ascend910ProA", TRAINING, 1001, false},
    {"Ascend910ProB", TRAINING, 1001, false},
    {"Ascend910PremiumA", TRAINING, 1001, false},
    {"Ascend310P1", INFERENCE, 2002, false},
    {"Ascend310P3", INFERENCE, 2002, false},
    {"Ascend310P5", INFERENCE, 2002, false},
    {"Ascend310P7", INFERENCE, 2002, false},
    {"Ascend910B1", A2, 2201, true},
    {"Ascend910B2", A2, 2201, true},
    {"Ascend910B2C", A2, 2201, true},
    {"Ascend910B3", A2, 2201, true},
    {"Ascend910B4", A2, 2201, true},
    {"Ascend910B4-1", A2, 2201, true},
    {"Ascend910_9362", A3, 2201, true},
    {"Ascend910_9363", A3, 2201, true},
    {"Ascend910_9372", A3, 2201, true},
    {"Ascend910_9381", A3, 2201, true},
    {"Ascend910_9382", A3, 2201, true},
    {"Ascend910_9391", A3, 2201, true},
    {"Ascend910_9392", A3, 2201, true},
    {"Ascend950DT_950x", A950, 3510, true},
    {"Ascend950DT_950y", A950, 3510, true},
    {"Ascend950DT_9571", A950, 3510, true},
    {"Ascend950DT_9572", A950, 3510, true},
    {"Ascend950DT_9573", A950, 3510, true},
    {"Ascend950DT_9574", A950, 3510, true},
    {"Ascend950DT_9575", A950, 3510, true},
    {"Ascend950DT_9576", A950, 3510, true},
    {"Ascend950DT_9577", A950, 3510, true},
    {"Ascend950DT_9578", A950, 3510, true},
    {"Ascend950DT_9581", A950, 3510, true},
    {"Ascend950DT_9581x", A950, 3510, true},
    {"Ascend950DT_9582", A950, 3510, true},
    {"Ascend950DT_9582x", A950, 3510, true},
    {"Ascend950DT_9583", A950, 3510, true},
    {"Ascend950DT_9584", A950, 3510, true},
    {"Ascend950DT_9585", A950, 3510, true},
    {"Ascend950DT_9586", A950, 3510, true},
    {"Ascend950DT_9587", A950, 3510, true},
    {"Ascend950DT_9588", A950, 3510, true},
    {"Ascend950DT_9591", A950, 3510, true},
    {"Ascend950DT_9592", A950, 3510, true},
    {"Ascend950DT_9595", A950, 3510, true},
    {"Ascend950DT_9596", A950, 3510, true},
    {"Ascend950DT_95A1", A950, 3510, true},
    {"Ascend950DT_95A2", A950, 3510, true},
    {"Ascend950PR_950z", A950, 3510, true},
    {"Ascend950PR_9579", A950, 3510, true},
    {"Ascend950PR_957b", A950, 3510, true},
    {"Ascend950PR_957bx", A950, 3510, true},
    {"Ascend950PR_957c", A950, 3510, true},
    {"Ascend950PR_957d", A950, 3510, true},
    {"Ascend950PR_9589", A950, 3510, true},
    {"Ascend950PR_958b", A950, 3510, true},
    {"Ascend950PR_9599", A950, 3510, true},
};

static pthread_once_t g_once = PTHREAD_ONCE_INIT;
static const aclemu_soc *g_soc;  /* NULL: ACL_EMU_SOC names no known part */
static char g_bad[64];           /* the rejected value, for messages */

static void read_soc(void)
{
    const char *s = getenv("ACL_EMU_SOC");
    if (s == NULL || *s == '\0')
        s = SOC_DEFAULT;
    for (size_t i = 0; i < sizeof SOCS / sizeof SOCS[0]; i++)
        if (strcmp(s, SOCS[i].name) == 0) {
            g_soc = &SOCS[i];
            return;
        }
    strncpy(g_bad, s, sizeof g_bad - 1);
}

ACLEMU_EXPORT const aclemu_soc *aclemu_soc_info(const char *caller)
{
    pthread_once(&g_once, read_soc);
    if (g_soc == NULL)
        aclemu_set_error("%s: ACL_EMU_SOC (\"%s\") is not a part name the emulator knows "
                         "(e.g. Ascend910B2 (Atlas A2), Ascend910_9391 (A3), Ascend910A "
                         "(Atlas training), Ascend310P3 (Atlas inference), Ascend950PR_9599)",
                         caller, g_bad);
    return g_soc;
}

const char *aclrtGetSocName(void)
{
    if (aclemu_fault(__func__))
        return NULL;
    const aclemu_soc *soc = aclemu_soc_info(__func__);
    return soc ? soc->name : NULL; /* a string literal: valid for the life of the process */
}

ACLEMU_EXPORT bool aclemu_soc_is_910b(const aclemu_soc *soc)
{
    return soc->npu_arch == 2201 && strncmp(soc->name, "Ascend910B", 10) == 0;
}

int rt_soc_arch(const char *name)
{
    for (size_t i = 0; i < sizeof SOCS / sizeof SOCS[0]; i++)
        if (strcmp(name, SOCS[i].name) == 0)
            return SOCS[i].npu_arch;
    return -1;
}
