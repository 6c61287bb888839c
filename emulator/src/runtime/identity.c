/*
 * Which device is which: aclrtDeviceGetUuid, aclrtDeviceGetPCIBusId, aclrtDeviceGetByPCIBusId,
 * aclrtGetDevicesTopo and the six device id mappings (aclrtGetLogicDevIdByUserDevId and its
 * siblings).
 *
 * The checks, their order and codes are CANN's: the ACL layer (hicann/runtime
 * src/acl/aclrt_impl/device.cpp: NULL outputs first, 100000), the runtime's C entry points
 * (src/runtime/api/api_c_device.cc: the rts* wrappers refuse a negative id with 107000), its
 * argument checks (api/impl/api_error.cc: a negative device id 107001, NULL 107000, the user
 * id converted by Runtime::ChgUserDevIdToDeviceId and bounded by CheckDeviceIdIsValid, both
 * 107001) and its implementation (api_impl.cc). The driver answers the rest; it is not in the
 * sources, so what it reports is the emulator's, described in docs/emulator.md ("Device
 * identity and topology"): ids derived from the machine device id, so they follow
 * ACL_EMU_DEVICE_COUNT and ASCEND_RT_VISIBLE_DEVICES, and a topology by the part (ACL_EMU_SOC).
 *
 * Ids: the user's id is the process's device id (aclrtSetDevice's); the logical id is the
 * driver's, the machine's device id before ASCEND_RT_VISIBLE_DEVICES; outside a container the
 * physical id is the logical one. No call needs aclInit nor a current device.
 */
#include <stdio.h>
#include <string.h>

#include "rt_internal.h"

/* ---- the driver's answers ---- */

/* Atlas training (NPU architecture 1001) and inference (2002) parts have neither a UUID nor
 * a PCI bus id the runtime can read (docs/zh/api_ref/04_device_management.md: "not
 * supported"; the driver's answer becomes 207000, api_c_device.cc). */
static bool has_pcie_identity(const aclemu_soc *soc) {
    return soc->npu_arch != 1001 && soc->npu_arch != 2002;
}

/* The bus of machine device m: eight per PCI domain, in the order of an 8-NPU server's four
 * root complexes, two NPUs each. */
static void pci_bus_id(int m, char out[13]) {
    static const unsigned BUS[8] = {0xc1, 0x81, 0x41, 0x01, 0xc2, 0x82, 0x42, 0x02};
    char text[32]; /* 12 characters: m < RT_MAX_DEVICES keeps the domain to 4 hex digits */
    snprintf(text, sizeof text, "%04x:%02x:%02x.%x", (unsigned)(m / 8), BUS[m % 8], 0u, 0u);
    memcpy(out, text, 13);
}

/* The emulator's UUID of machine device m: shaped as a random (version 4) UUID,
 * 41434c45-4d55-4000-8000-0000000000mm ("ACLEMU" in ASCII, then the machine id). */
static void device_uuid(int m, aclrtUuid *uuid) {
    static const unsigned char HEAD[14] = {0x41, 0x43, 0x4c, 0x45, 0x4d, 0x55, 0x40,
                                           0x00, 0x80, 0x00, 0x00, 0x00, 0x00, 0x00};
    memcpy(uuid->bytes, HEAD, sizeof HEAD);
    uuid->bytes[14] = (char)((m >> 8) & 0xff);
    uuid->bytes[15] = (char)(m & 0xff);
}

static bool is_atlas_a3(const aclemu_soc *soc) {
    return strncmp(soc->name, "Ascend910_93", 12) == 0;
}

/* The link between machine devices a and b, as the runtime reports it (1 << the driver's
 * TOPOLOGY_* value, pkg_inc/driver/ascend_hal_base.h; a device with itself on a switched HCCS
 * part is HCCS, api_impl.cc GetPairDevicesInfo):
 * - Atlas training series: four NPUs per HCCS ring (a full mesh), SMP between the rings;
 * - Atlas A2 and Ascend 950: eight NPUs in an HCCS full mesh, SMP between eights;
 * - Atlas A3: the two dies of one chip (devices 2k and 2k+1) linked by SIO, every other pair
 *   through the HCCS switch;
 * - Atlas inference series (PCIe cards): the two chips of one card behind its PCIe switch,
 *   other cards through the host bridge; a device with itself is PIX. */
static uint64_t topology(const aclemu_soc *soc, int a, int b) {
    if (soc->npu_arch == 2002)
        return a / 2 == b / 2 ? ACL_RT_DEVS_TOPOLOGY_PIX : ACL_RT_DEVS_TOPOLOGY_PHB;
    if (a == b)
        return ACL_RT_DEVS_TOPOLOGY_HCCS;
    if (is_atlas_a3(soc))
        return a / 2 == b / 2 ? ACL_RT_DEVS_TOPOLOGY_SIO : ACL_RT_DEVS_TOPOLOGY_HCCS_SW;
    int group = soc->npu_arch == 1001 ? 4 : 8;
    return a / group == b / group ? ACL_RT_DEVS_TOPOLOGY_HCCS : ACL_RT_DEVS_TOPOLOGY_SYS;
}

/* ---- shared checks ---- */

/* The ACL layer's NULL check of an output. */
static aclError need_output(const char *fn, const void *p, const char *arg) {
    return p == NULL ? ACL_LAYER_ERR(ACL_ERROR_INVALID_PARAM, fn, "%s (output pointer) is NULL",
                                     arg)
                     : ACL_SUCCESS;
}

/* A negative deviceId (api_error.cc: RT_ERROR_DEVICE_ID), then one the user id conversion or
 * CheckDeviceIdIsValid refuses: 107001. */
static aclError check_user_id(const char *fn, const char *arg, int32_t id) {
    if (id < 0)
        return RT_ERR(ACL_ERROR_RT_INVALID_DEVICEID, fn, "%s %d is negative", arg, (int)id);
    return rt_check_device_arg(fn, arg, id);
}

/* The rts* wrappers' first check (api_c_device.cc): a negative id is 107000. */
static aclError check_not_negative(const char *fn, const char *arg, int32_t id) {
    return id < 0 ? RT_ERR(ACL_ERROR_RT_PARAM_INVALID, fn, "%s %d must be >= 0", arg, (int)id)
                  : ACL_SUCCESS;
}

/* A machine (logical or physical) id: the driver's refusal of one that is no device of the
 * machine (DRV_ERROR_INVALID_DEVICE, 107001; CheckDeviceIdIsValid says the same). */
static aclError check_machine_id(const char *fn, const char *arg, int32_t id) {
    int n = rt_machine_device_count();
    if (id < 0 || id >= n)
        return RT_ERR(ACL_ERROR_RT_INVALID_DEVICEID, fn,
                      "%s %d is not a device of this machine (valid: 0..%d, "
                      "ACL_EMU_DEVICE_COUNT)", arg, (int)id, n - 1);
    return ACL_SUCCESS;
}

/* The user id of machine device m (Runtime::GetUserDevIdByDeviceId): 107001 when
 * ASCEND_RT_VISIBLE_DEVICES leaves it out. */
static aclError user_of_machine(const char *fn, const char *arg, int m, int32_t *user) {
    int d = rt_device_of_machine(m);
    if (d < 0)
        return RT_ERR(ACL_ERROR_RT_INVALID_DEVICEID, fn,
                      "%s %d: machine device %d is not one of this process's devices "
                      "(ASCEND_RT_VISIBLE_DEVICES leaves it out)", arg, m, m);
    *user = d;
    return ACL_SUCCESS;
}

static aclError no_pcie_identity(const char *fn, const aclemu_soc *soc) {
    return RT_ERR(ACL_ERROR_RT_FEATURE_NOT_SUPPORT, fn,
                  "the %s (%s) have no device UUID or PCI bus id the runtime can read",
                  soc->series, soc->name);
}

/* The part: known once rt_begin succeeded (bringing the runtime up refuses an unknown
 * ACL_EMU_SOC). */
static const aclemu_soc *the_part(const char *fn) { return aclemu_soc_info(fn); }

/* ---- identity ---- */

aclError aclrtDeviceGetUuid(int32_t deviceId, aclrtUuid *uuid) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    const aclemu_soc *soc = the_part(__func__);
    if ((rc = need_output(__func__, uuid, "uuid")) == ACL_SUCCESS &&
        (rc = check_user_id(__func__, "deviceId", deviceId)) == ACL_SUCCESS) {
        if (!has_pcie_identity(soc))
            rc = no_pcie_identity(__func__, soc);
        else
            device_uuid(rt_physical_device(deviceId), uuid);
    }
    rt_leave();
    return rc;
}

aclError aclrtDeviceGetPCIBusId(int32_t deviceId, char *pciBusId, int32_t len) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    const aclemu_soc *soc = the_part(__func__);
    if ((rc = need_output(__func__, pciBusId, "pciBusId")) != ACL_SUCCESS)
        ;
    else if (deviceId < 0)
        rc = RT_ERR(ACL_ERROR_RT_INVALID_DEVICEID, __func__, "deviceId %d is negative",
                    (int)deviceId);
    else if (len < 13)
        rc = RT_ERR(ACL_ERROR_RT_PARAM_INVALID, __func__,
                    "len %d is too small: a PCI bus id takes 13 bytes (12 characters and the "
                    "terminating NUL)", (int)len);
    else if ((rc = rt_check_device_arg(__func__, "deviceId", deviceId)) == ACL_SUCCESS) {
        if (!has_pcie_identity(soc))
            rc = no_pcie_identity(__func__, soc);
        else
            pci_bus_id(rt_physical_device(deviceId), pciBusId);
    }
    rt_leave();
    return rc;
}

/* Every machine device's bus id compared with pciBusId, exactly (strcmp: the runtime's own
 * format, lowercase), then the match's user id (api_impl.cc GetDeviceByPCIBusId). */
aclError aclrtDeviceGetByPCIBusId(const char *pciBusId, int32_t *deviceId) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    const aclemu_soc *soc = the_part(__func__);
    if ((rc = need_output(__func__, pciBusId, "pciBusId")) == ACL_SUCCESS &&
        (rc = need_output(__func__, deviceId, "deviceId")) == ACL_SUCCESS) {
        int match = -1;
        /* the driver answers "not supported" for every device: no match, as the runtime
         * skips the devices whose bus id it cannot read */
        for (int m = 0; has_pcie_identity(soc) && m < rt_machine_device_count(); m++) {
            char bdf[13];
            pci_bus_id(m, bdf);
            if (strcmp(bdf, pciBusId) == 0) {
                match = m;
                break;
            }
        }
        if (match < 0)
            rc = RT_ERR(ACL_ERROR_RT_PARAM_INVALID, __func__,
                        "pciBusId \"%.40s\" is no device's (the format is dddd:bb:dd.f in "
                        "lowercase hex, as aclrtDeviceGetPCIBusId writes it%s)", pciBusId,
                        has_pcie_identity(soc) ? "" : "; this part has no PCI bus ids");
        else
            rc = user_of_machine(__func__, "pciBusId", match, deviceId);
    }
    rt_leave();
    return rc;
}

/* ---- topology ---- */

/* Both ids converted from user ids (api_error.cc GetPairDevicesInfo): without
 * ASCEND_RT_VISIBLE_DEVICES the conversion keeps them and the driver refuses one that is no
 * device; either way 107001. */
aclError aclrtGetDevicesTopo(uint32_t deviceId, uint32_t otherDeviceId, uint64_t *value) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    if ((rc = need_output(__func__, value, "value")) != ACL_SUCCESS)
        ;
    else if (deviceId > INT32_MAX)
        rc = RT_ERR(ACL_ERROR_RT_INVALID_DEVICEID, __func__, "deviceId %u is not a device",
                    (unsigned)deviceId);
    else if (otherDeviceId > INT32_MAX)
        rc = RT_ERR(ACL_ERROR_RT_INVALID_DEVICEID, __func__, "otherDeviceId %u is not a device",
                    (unsigned)otherDeviceId);
    else if ((rc = rt_check_device_arg(__func__, "deviceId", (int32_t)deviceId)) ==
                 ACL_SUCCESS &&
             (rc = rt_check_device_arg(__func__, "otherDeviceId", (int32_t)otherDeviceId)) ==
                 ACL_SUCCESS)
        *value = topology(the_part(__func__), rt_physical_device((int)deviceId),
                          rt_physical_device((int)otherDeviceId));
    rt_leave();
    return rc;
}

/* ---- id mappings ---- */

aclError aclrtGetLogicDevIdByUserDevId(const int32_t userDevid, int32_t *const logicDevId) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    if ((rc = need_output(__func__, logicDevId, "logicDevId")) == ACL_SUCCESS &&
        (rc = check_not_negative(__func__, "userDevid", userDevid)) == ACL_SUCCESS &&
        (rc = rt_check_device_arg(__func__, "userDevid", userDevid)) == ACL_SUCCESS)
        *logicDevId = rt_physical_device(userDevid);
    rt_leave();
    return rc;
}

aclError aclrtGetUserDevIdByLogicDevId(const int32_t logicDevId, int32_t *const userDevid) {
    aclError rc = rt_begin(__func__, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    if ((rc = need_output(__func__, userDevid, "userDevid")) == ACL_SUCCESS &&
        (rc = check_not_negative(__func__, "logicDevId", logicDevId)) == ACL_SUCCESS &&
        (rc = check_machine_id(__func__, "logicDevId", logicDevId)) == ACL_SUCCESS)
        rc = user_of_machine(__func__, "logicDevId", logicDevId, userDevid);
    rt_leave();
    return rc;
}

/* The user id of a physical id: aclrtGetLogicDevIdByPhyDevId and aclrtGetUserDevIdByPhyDevId
 * both call the runtime's rtsGetLogicDevIdByPhyDevId, which answers a user id (the API
 * reference says so of the first). */
static aclError user_by_physical(const char *fn, int32_t phyDevId, int32_t *out,
                                 const char *out_name) {
    aclError rc = rt_begin(fn, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    if ((rc = need_output(fn, out, out_name)) == ACL_SUCCESS &&
        (rc = check_not_negative(fn, "phyDevId", phyDevId)) == ACL_SUCCESS &&
        (rc = check_machine_id(fn, "phyDevId", phyDevId)) == ACL_SUCCESS)
        rc = user_of_machine(fn, "phyDevId", phyDevId, out);
    rt_leave();
    return rc;
}

aclError aclrtGetLogicDevIdByPhyDevId(const int32_t phyDevId, int32_t *const logicDevId) {
    return user_by_physical(__func__, phyDevId, logicDevId, "logicDevId");
}

aclError aclrtGetUserDevIdByPhyDevId(const int32_t phyDevId, int32_t *const userDevId) {
    return user_by_physical(__func__, phyDevId, userDevId, "userDevId");
}

/* The physical id of a user id: aclrtGetPhyDevIdByLogicDevId and aclrtGetPhyDevIdByUserDevId
 * both call rtsGetPhyDevIdByLogicDevId, which converts its argument as a user id
 * (api_error.cc GetDevicePhyIdByIndex). */
static aclError physical_by_user(const char *fn, int32_t id, const char *id_name,
                                 int32_t *phyDevId) {
    aclError rc = rt_begin(fn, ACL_ERROR_RT_INTERNAL_ERROR);
    if (rc != ACL_SUCCESS)
        return rc;
    if ((rc = need_output(fn, phyDevId, "phyDevId")) == ACL_SUCCESS &&
        (rc = check_not_negative(fn, id_name, id)) == ACL_SUCCESS &&
        (rc = rt_check_device_arg(fn, id_name, id)) == ACL_SUCCESS)
        *phyDevId = rt_physical_device(id);
    rt_leave();
    return rc;
}

aclError aclrtGetPhyDevIdByLogicDevId(const int32_t logicDevId, int32_t *const phyDevId) {
    return physical_by_user(__func__, logicDevId, "logicDevId", phyDevId);
}

aclError aclrtGetPhyDevIdByUserDevId(const int32_t userDevId, int32_t *const phyDevId) {
    return physical_by_user(__func__, userDevId, "userDevId", phyDevId);
}
