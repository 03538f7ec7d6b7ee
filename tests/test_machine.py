"""Machine identity: the parsers on fixed /proc/cpuinfo, sysctl and nvidia-smi texts, meta.json's `machine`
(GPU fields empty on a CPU machine), and what counts as the same machine."""

import pytest

from adbench import machine, provenance

# Two real CPUs' first processor blocks, flags abridged to what a kernel prints around the vector extensions.
# An AVX-512 + AMX server (Sapphire Rapids); the second processor block differs to prove the first is read.
SPR = """processor\t: 0
vendor_id\t: GenuineIntel
model name\t: Intel(R) Xeon(R) Platinum 8488C
flags\t\t: fpu vme sse sse2 ssse3 fma cx16 sse4_1 sse4_2 movbe popcnt avx f16c rdrand avx2 bmi2 avx512f avx512dq \
avx512ifma avx512cd sha_ni avx512bw avx512vl avx_vnni avx512_bf16 avx512vbmi umip avx512_vbmi2 gfni vaes \
avx512_vnni avx512_bitalg avx512_vpopcntdq avx512_vp2intersect amx_bf16 avx512_fp16 amx_tile amx_int8
cpu cores\t: 48

processor\t: 1
model name\t: Something Else
flags\t\t: fpu sse2
"""
# An AVX2-only AMD EPYC (Zen 2): no avx512*, and sse4a / misalignsse that are not in the list
ROME = """processor\t: 0
vendor_id\t: AuthenticAMD
model name\t: AMD EPYC 7B12
flags\t\t: fpu vme de pse tsc msr pae mce cx8 apic sep mtrr pge mca cmov pat pse36 clflush mmx fxsr sse sse2 ht \
syscall nx mmxext fxsr_opt pdpe1gb rdtscp lm constant_tsc rep_good nopl pni pclmulqdq ssse3 fma cx16 sse4_1 sse4_2 \
movbe popcnt aes xsave avx f16c rdrand hypervisor lahf_lm sse4a misalignsse 3dnowprefetch bmi1 avx2 smep bmi2 sha_ni
"""
GRAVITON3 = """processor\t: 0
BogoMIPS\t: 2100.00
Features\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm jscvt fcma lrcpc dcpop \
sha3 sm3 sm4 asimddp sha512 sve asimdfhm dit uscat ilrcpc flagm ssbs paca pacg dcpodp svei8mm svebf16 i8mm bf16 dgh rng
CPU implementer\t: 0x41
"""
MAC_INTEL = """machdep.cpu.brand_string: Intel(R) Core(TM) i9-9980HK CPU @ 2.40GHz
machdep.cpu.features: FPU VME DE PSE TSC MSR PAE MCE CX8 APIC SEP MTRR PGE MCA CMOV SSE SSE2 SSE3 PCLMULQDQ FMA SSE4.1 \
SSE4.2 POPCNT AES XSAVE OSXSAVE AVX1.0 RDRAND F16C
machdep.cpu.leaf7_features: RDWRFSGS TSC_THREAD_OFFSET SGX BMI1 HLE AVX2 SMEP BMI2 ERMS INVPCID RTM FPU_CSDS MPX RDSEED
hw.optional.avx2_0: 1
hw.optional.avx512f: 0
"""
MAC_M3 = """hw.optional.arm.FEAT_BF16: 1
hw.optional.arm.FEAT_I8MM: 1
hw.optional.arm.FEAT_SME: 0
hw.optional.arm.FEAT_DotProd: 1
hw.optional.arm.FEAT_FP16: 1
hw.optional.AdvSIMD: 1
hw.optional.floatingpoint: 1
"""


def test_cpuinfo_of_an_avx512_amx_server():
    assert machine.cpu_model_from_cpuinfo(SPR) == "Intel(R) Xeon(R) Platinum 8488C"
    assert machine.extensions_from_cpuinfo(SPR) == [
        "sse4_2", "avx", "f16c", "fma", "avx2", "avx_vnni", "avx512f", "avx512dq", "avx512cd", "avx512bw",
        "avx512vl", "avx512ifma", "avx512vbmi", "avx512_vbmi2", "avx512_vnni", "avx512_bf16", "avx512_fp16",
        "amx_tile", "amx_bf16", "amx_int8"]


def test_cpuinfo_of_an_avx2_only_cpu_has_no_avx512():
    assert machine.cpu_model_from_cpuinfo(ROME) == "AMD EPYC 7B12"
    assert machine.extensions_from_cpuinfo(ROME) == ["sse4_2", "avx", "f16c", "fma", "avx2"]


def test_cpuinfo_of_an_arm_server_reads_its_features_line():
    assert machine.cpu_model_from_cpuinfo(GRAVITON3) == ""  # no model line: cpu_model() falls back
    assert machine.extensions_from_cpuinfo(GRAVITON3) == ["asimd", "asimdhp", "asimddp", "sve", "bf16", "i8mm"]
    assert machine.extensions_from_cpuinfo("") == []


def test_sysctl_of_an_intel_mac_and_an_apple_silicon_mac():
    assert machine.extensions_from_sysctl(MAC_INTEL) == ["sse4_2", "avx", "f16c", "fma", "avx2"]  # avx512f: 0
    assert machine.extensions_from_sysctl(MAC_M3) == ["asimd", "asimdhp", "asimddp", "bf16", "i8mm"]  # sme: 0


def test_gpu_from_nvidia_smi_and_the_kernel_driver_file(monkeypatch):
    smi = "NVIDIA H200, 570.86.15, 143771\nNVIDIA H200, 570.86.15, 143771\n"
    assert machine.gpus_from_nvidia_smi(smi)[0] == {"name": "NVIDIA H200", "driver": "570.86.15",
                                                     "memory_bytes": 143771 * 2**20}
    assert machine.driver_from_proc("NVRM version: NVIDIA UNIX Open Kernel Module for x86_64  570.86.15  Release "
                                    "Build  (dvs-builder@U16)  Thu Jan 23 2025") == "570.86.15"
    assert machine.driver_from_proc("NVRM version: NVIDIA UNIX x86_64 Kernel Module  550.54.15  Tue Mar") == "550.54.15"
    monkeypatch.setattr(machine, "_read", lambda path: "")
    monkeypatch.setattr(machine, "_command", lambda *a: smi if a[0] == "nvidia-smi" else "")
    g = machine.gpu()
    assert (g["name"], g["count"], g["driver"], g["memory_bytes"]) == ("NVIDIA H200", 2, "570.86.15", 143771 * 2**20)
    monkeypatch.setattr(machine, "_command", lambda *a: "")  # no nvidia-smi, CUDA never initialised: no GPU
    assert machine.gpu() == machine.NO_GPU


def test_meta_json_records_the_machine_with_empty_gpu_fields_on_a_cpu_machine(monkeypatch):
    monkeypatch.setattr(machine, "_command", lambda *a: "")  # as on a machine without nvidia-smi
    m = provenance.meta_record(rule="r", wildcards={}, args={}, seed=0, device="cpu", threads=1, wall_s=0.1)
    mach = m["machine"]
    assert set(mach) == {"cpu_model", "vector_extensions", "cpu_count", "memory_bytes", "gpu"}
    assert mach["gpu"] == {"name": "", "count": 0, "memory_bytes": None, "driver": "", "cuda": ""}
    text = open("/proc/cpuinfo").read()
    flags = set(machine.cpuinfo_fields(text).get("flags", "").split())
    assert mach["cpu_model"] == m["cpu_model"] and mach["cpu_count"] == m["cpu_count"]
    assert mach["vector_extensions"] == [x for x in machine.VECTOR_EXTENSIONS if x in flags]
    kb = int(next(line.split()[1] for line in open("/proc/meminfo") if line.startswith("MemTotal:")))
    assert mach["memory_bytes"] == kb * 1024


def _m(model="AMD EPYC", ext=("avx2", "avx512f"), cpus=2, gpu="", mem=24 * 2**30, driver=""):
    return {"cpu_model": model, "vector_extensions": list(ext), "cpu_count": cpus, "memory_bytes": mem,
            "gpu": {**machine.NO_GPU, "name": gpu, "count": int(bool(gpu)), "driver": driver}}


@pytest.mark.parametrize("other, verdict", [
    (_m(), "same"),
    (_m(mem=16 * 2**30), "same"),                     # memory does not set a kernel's speed
    (_m(gpu="NVIDIA H200", driver="1"), "differs"),   # a GPU appeared
    (_m(ext=("avx2",)), "differs"),                   # same model name, no AVX-512: the case of this project
    (_m(cpus=4), "differs"),
    (_m(model="Intel Xeon"), "differs"),
    ({"cpu_model": "AMD EPYC", "cpu_count": 2}, "unknown"),   # a meta.json written before machine identity
    ({"cpu_model": "AMD EPYC", "cpu_count": 16}, "differs"),  # ... though what it recorded can still differ
    ({}, "unknown"),
])
def test_same_machine_is_cpu_model_extensions_cpus_and_gpu(other, verdict):
    assert machine.compare(_m(), other) == verdict == machine.compare(other, _m())


def test_a_gpu_driver_change_is_not_a_machine_change():
    assert machine.compare(_m(gpu="NVIDIA H200", driver="550"), _m(gpu="NVIDIA H200", driver="570")) == "same"


def test_the_machine_line_and_the_difference_in_words():
    assert machine.line(_m()) == "AMD EPYC, 2 logical CPUs, avx2 avx512f, 24.0 GiB; no GPU"
    assert machine.line(machine.of_meta({"cpu_model": "AMD EPYC", "cpu_count": 2, "device": "cpu"})) == \
        "AMD EPYC, 2 logical CPUs (machine unknown: vector extensions and GPU not recorded)"
    assert machine.line(None) == machine.line(machine.of_meta({})) == "machine unknown"
    assert machine.difference(_m(), _m(ext=("avx2",))) == \
        "vector extensions differ (only then: avx512f; only now: none)"
    assert machine.difference(_m(), _m()) == ""
