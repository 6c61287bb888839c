"""Which device is which, in Python: ``Device.uuid``, ``pci_bus_id``, ``physical_id``,
``topology()``, ``Device.from_pci_bus_id`` and ``Device.from_physical_id``, and what
``acl-py info`` shows of them. On the emulator the values are docs/emulator.md's ("Device
identity and topology"); tests/test_hardware.py checks them on a server."""
from __future__ import annotations

import json
import uuid

import pytest

import acl_py
from acl_py import AclArgumentError, AclTypeError, Topology
from acl_py.errors import DeviceError
from acl_py.soc import short_soc_version, soc_name


# This process's part: the Atlas training and inference series have no UUID or PCI bus id
# (207000: the API reference lists them as unsupported), and an inference part's link with
# itself is PIX (docs/emulator.md, "Device identity and topology"). The tests of a machine of
# several devices run on the part they describe, in a process of their own.
FAMILY = short_soc_version(soc_name())
HAS_IDS = FAMILY not in ("Ascend910", "Ascend310P")
SELF_LINK = Topology.PIX if FAMILY == "Ascend310P" else Topology.HCCS


def test_device_0(emulator):
    dev = acl_py.Device(0)
    if HAS_IDS:
        assert dev.uuid == uuid.UUID("41434c45-4d55-4000-8000-000000000000")
        assert dev.pci_bus_id == "0000:c1:00.0"
        assert acl_py.Device.from_pci_bus_id("0000:c1:00.0") is dev
    else:
        assert dev.uuid is None and dev.pci_bus_id is None
    assert dev.physical_id == 0
    assert dev.topology(0) is SELF_LINK
    assert dev.topology(dev) is SELF_LINK
    assert acl_py.Device.from_physical_id(0) is dev


def test_topology_names_the_vendors_bits():
    assert [(t.name, int(t)) for t in Topology] == [
        ("HCCS", 0x01), ("PIX", 0x02), ("PIB", 0x04), ("PHB", 0x08), ("SYS", 0x10),
        ("SIO", 0x20), ("HCCS_SW", 0x40)]
    assert int(Topology(0x80)) == 0x80          # a bit a newer driver adds keeps its value


def test_refusals_name_the_argument_and_the_status(emulator):
    dev = acl_py.Device(0)
    with pytest.raises(AclArgumentError) as e:
        acl_py.Device.from_pci_bus_id("0000:C1:00.0")    # the runtime compares exactly
    assert e.value.argument == "bus_id" and e.value.code == 107000
    assert e.value.call == "aclrtDeviceGetByPCIBusId"
    assert "no device has this PCI bus id" in str(e.value)
    with pytest.raises(AclTypeError):
        acl_py.Device.from_pci_bus_id(b"0000:c1:00.0")
    with pytest.raises(AclArgumentError, match="bus_id"):
        acl_py.Device.from_pci_bus_id("0000:c1:00.0\0")
    with pytest.raises(AclArgumentError) as e:
        acl_py.Device.from_physical_id(3)
    assert e.value.argument == "physical_id" and e.value.code == 107001
    with pytest.raises(AclArgumentError, match="physical_id: a device id is >= 0"):
        acl_py.Device.from_physical_id(-1)
    with pytest.raises(AclTypeError):
        acl_py.Device.from_physical_id("0")
    with pytest.raises(AclArgumentError, match="other: device 1 does not exist"):
        dev.topology(1)


EIGHT = """
    import json, acl_py
    devs = [acl_py.Device(i) for i in range(acl_py.device_count())]
    print(json.dumps({
        "uuid": [str(d.uuid) for d in devs],
        "bus": [d.pci_bus_id for d in devs],
        "phys": [d.physical_id for d in devs],
        "topo": [[d.topology(o).name for o in devs] for d in devs],
        "back": [acl_py.Device.from_pci_bus_id(d.pci_bus_id).id for d in devs
                 if d.pci_bus_id is not None],
        "from_phys": [acl_py.Device.from_physical_id(p).id for p in (2, 5, 7)],
    }))
"""


def test_eight_devices_with_three_visible(run_python, emulator):
    r = run_python(EIGHT, env={"ACL_EMU_DEVICE_COUNT": "8", "ACL_EMU_SOC": "Ascend910B2",
                               "ASCEND_RT_VISIBLE_DEVICES": "2,5,7"})
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["uuid"] == [f"41434c45-4d55-4000-8000-00000000000{m}" for m in (2, 5, 7)]
    assert out["bus"] == ["0000:41:00.0", "0000:82:00.0", "0000:02:00.0"]
    assert out["phys"] == [2, 5, 7]
    assert out["topo"] == [["HCCS"] * 3] * 3
    assert out["back"] == [0, 1, 2]
    assert out["from_phys"] == [0, 1, 2]


def test_a_part_without_bus_ids(run_python, emulator):
    r = run_python(EIGHT.replace('"from_phys": [acl_py.Device.from_physical_id(p).id '
                                 'for p in (2, 5, 7)],', ''),
                   env={"ACL_EMU_DEVICE_COUNT": "4", "ACL_EMU_SOC": "Ascend910A"})
    assert r.returncode == 0, r.stderr
    out = json.loads(r.stdout)
    assert out["uuid"] == ["None"] * 4 and out["bus"] == [None] * 4 and out["back"] == []
    assert out["topo"][0] == ["HCCS"] * 4


# ---- acl-py info ----

def test_info_shows_the_ids_and_the_topology(run_python, emulator):
    r = run_python("""
        import json
        from acl_py import info
        data = info.collect()
        print(json.dumps(data))
        print("=====")
        print(info.format_text(data))
    """, env={"ACL_EMU_DEVICE_COUNT": "4", "ACL_EMU_SOC": "Ascend910_9382",
              "ASCEND_RT_VISIBLE_DEVICES": "0,1,3"})
    assert r.returncode == 0, r.stderr
    js, text = r.stdout.split("=====\n")
    data = json.loads(js)
    assert [(d["physical_id"], d["pci_bus_id"], d["uuid"], d["identity_error"])
            for d in data["devices"]] == [
        (0, "0000:c1:00.0", "41434c45-4d55-4000-8000-000000000000", None),
        (1, "0000:81:00.0", "41434c45-4d55-4000-8000-000000000001", None),
        (3, "0000:01:00.0", "41434c45-4d55-4000-8000-000000000003", None)]
    assert data["topology"] == {"matrix": [["HCCS", "SIO", "HCCS_SW"],
                                           ["SIO", "HCCS", "HCCS_SW"],
                                           ["HCCS_SW", "HCCS_SW", "HCCS"]], "error": None}
    lines = text.splitlines()
    assert ("            machine device 3, PCI 0000:01:00.0, "
            "UUID 41434c45-4d55-4000-8000-000000000003") in lines
    i = lines.index("topology   how row and column are linked (aclrtGetDevicesTopo)")
    assert [l.split() for l in lines[i + 1:i + 5]] == [
        ["0", "1", "2"], ["device", "0", "HCCS", "SIO", "HCCS_SW"],
        ["device", "1", "SIO", "HCCS", "HCCS_SW"], ["device", "2", "HCCS_SW", "HCCS_SW", "HCCS"]]


def test_info_reports_a_failed_id_query_and_goes_on(run_python, emulator):
    r = run_python("""
        import json
        from acl_py import info
        data = info.collect()
        print(json.dumps([data["devices"], data["topology"], info.ok(data)]))
        print(info.format_text(data))
    """, env={"ACL_EMU_DEVICE_COUNT": "2", "ACL_EMU_SOC": "Ascend910B2",
              "ACL_EMU_FAIL": "aclrtDeviceGetUuid:2,aclrtGetDevicesTopo:3"})
    assert r.returncode == 0, r.stderr
    devices, topology, ok = json.loads(r.stdout.splitlines()[0])
    assert devices[0]["uuid"] and devices[0]["identity_error"] is None
    assert devices[1]["uuid"] is None and devices[1]["pci_bus_id"] == "0000:81:00.0"
    assert devices[1]["identity_error"].startswith("aclrtDeviceGetUuid failed")
    assert topology["matrix"] == [["HCCS", "HCCS"], [None, "HCCS"]]   # the 3rd call failed
    assert topology["error"].startswith("aclrtGetDevicesTopo failed")
    assert "ERROR aclrtDeviceGetUuid failed" in r.stdout
    assert "  topology ERROR aclrtGetDevicesTopo failed" in r.stdout
    assert ["device", "1", "?", "HCCS"] in [l.split() for l in r.stdout.splitlines()]


def test_info_with_one_device_has_no_topology_matrix(run_python, emulator):
    r = run_python("""
        from acl_py import info
        data = info.collect()
        print(data["topology"], data["devices"][0]["physical_id"])
    """)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["None", "0"]


# ---- on a device ----

@pytest.mark.hardware
def test_ids_on_the_device():
    """On a server: every device's id maps back, ids are unique, and every pair has one
    topology bit."""
    n = acl_py.device_count()
    devs = [acl_py.Device(i) for i in range(n)]
    phys = [d.physical_id for d in devs]
    assert len(set(phys)) == n
    assert [acl_py.Device.from_physical_id(p) for p in phys] == devs
    buses = [d.pci_bus_id for d in devs]
    uuids = [d.uuid for d in devs]
    if buses[0] is not None:      # parts without them answer None for every device
        assert len(set(buses)) == n and len(set(uuids)) == n
        assert [acl_py.Device.from_pci_bus_id(b) for b in buses] == devs
    for a in devs:
        for b in devs:
            t = int(a.topology(b))
            assert t and t & (t - 1) == 0, (a, b, hex(t))
