"""Device description and measured ceilings (memory bandwidth, matmul throughput) for the child.

The ceilings feed the speed-of-light times (T_sol = max(flops / flops_per_s, bytes / bandwidth)); they are
measured, not taken from a data sheet, so clocks and power limits of this machine are accounted for.

The driver and NVML are asked through cuda-python's ``cuda.bindings`` (typed calls, errors as exceptions), imported
only when a GPU is described: torch imports ``cuda.bindings.driver`` itself, but ``cuda.bindings.nvml`` takes 0.3 s
more and brings numpy, which a CPU child does not need. Where cuda-python is not installed, ``ctypes`` stands in,
with each call's argument and result types declared.
"""

from __future__ import annotations

import contextlib
import ctypes
import importlib.metadata
import platform
import statistics
from collections.abc import Callable
from time import perf_counter
from types import ModuleType

import torch

_CUDA_COPY_BYTES = 2 * 2**30
_CUDA_MATMUL_N = 8192
_CPU_COPY_BYTES = 256 * 2**20
_CPU_MATMUL_N = 2048


# ---------------------------------------------------------------- device description


def device_info(device: torch.device) -> dict[str, object]:
    """Name, versions, cache and clocks; fields the platform cannot tell are None. No subprocesses."""
    info: dict[str, object] = {
        "name": None,
        "kind": device.type,
        "torch": torch.__version__,
        "triton": _package_version("triton"),
        "cuda": torch.version.cuda,
        "driver": None,
        "l2_bytes": None,
        "sm_count": None,
        "clocks": None,
    }
    if device.type == "cuda":
        info.update(_cuda_info(device))
    else:
        info["name"] = _cpu_name()
    return info


def _package_version(name: str) -> str | None:
    # Read from the installed metadata so that the child does not pay for importing triton.
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


def _cpu_name() -> str:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as handle:
            for line in handle:
                if line.lower().startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine() or "cpu"


def _cuda_info(device: torch.device) -> dict[str, object]:
    props = torch.cuda.get_device_properties(device)
    info: dict[str, object] = {
        "name": props.name,
        "l2_bytes": int(getattr(props, "L2_cache_size", 0)) or None,
        "sm_count": int(props.multi_processor_count),
        "capability": f"{props.major}.{props.minor}",
        "memory_bytes": int(props.total_memory),
        "uuid": str(props.uuid) if getattr(props, "uuid", None) is not None else None,  # which physical GPU
    }
    nvml = _nvml_info(getattr(props, "uuid", None))
    info["driver"] = nvml.get("driver") or _cuda_driver_api()
    info["clocks"] = nvml.get("clocks")
    return info


def _nvml_info(uuid: object) -> dict[str, object]:
    """Driver version and clocks through NVML (best effort: {} if unavailable)."""
    try:
        from cuda.bindings import nvml
    except ImportError:
        return _ctypes_nvml_info(uuid)
    return read_nvml(nvml, uuid)


def read_nvml(nvml: ModuleType, uuid: object) -> dict[str, object]:
    """What NVML tells of the driver and of the GPU ``uuid``, through ``cuda.bindings.nvml``'s interface ({} where
    there is no driver library or NVML does not start)."""
    try:
        nvml.init_v2()
    except (RuntimeError, nvml.NvmlError):  # no libnvidia-ml (cuda.pathfinder raises a RuntimeError), or NVML's own
        return {}
    try:
        info: dict[str, object] = {}
        with contextlib.suppress(nvml.NvmlError):
            info["driver"] = str(nvml.system_get_driver_version())
        if uuid is not None:
            info["clocks"] = _nvml_clocks(nvml, uuid)
        return info
    finally:
        with contextlib.suppress(nvml.NvmlError):
            nvml.shutdown()


def _uuid_key(uuid: object) -> str:
    """NVML's spelling of a device UUID: torch gives it without the "GPU-" prefix."""
    text = str(uuid)
    return text if text.startswith(("GPU-", "MIG-")) else f"GPU-{text}"


def _nvml_clocks(nvml: ModuleType, uuid: object) -> dict[str, int] | None:
    try:
        handle = nvml.device_get_handle_by_uuid(_uuid_key(uuid))
    except nvml.NvmlError:
        return None
    sm, mem = nvml.ClockType.CLOCK_SM, nvml.ClockType.CLOCK_MEM
    queries = {"sm_mhz": (nvml.device_get_clock_info, sm), "mem_mhz": (nvml.device_get_clock_info, mem),
               "sm_max_mhz": (nvml.device_get_max_clock_info, sm), "mem_max_mhz": (nvml.device_get_max_clock_info, mem)}
    clocks: dict[str, int] = {}
    for name, (query, clock) in queries.items():
        with contextlib.suppress(nvml.NvmlError):  # a clock this GPU (a MIG slice, a vGPU) does not report
            clocks[name] = int(query(handle, clock))
    return clocks or None


def _cuda_driver_api() -> str | None:
    """The driver's CUDA API version, when NVML cannot give the driver release."""
    try:
        from cuda.bindings import driver
    except ImportError:
        return _ctypes_cuda_driver_api()
    return read_driver_version(driver)


def read_driver_version(driver: ModuleType) -> str | None:
    """``cuDriverGetVersion`` through ``cuda.bindings.driver``'s interface (None without a driver library)."""
    try:
        error, version = driver.cuDriverGetVersion()
    except RuntimeError:  # no libcuda: cuda.pathfinder could not load it
        return None
    return _cuda_version(int(version)) if error == driver.CUresult.CUDA_SUCCESS else None


def _cuda_version(version: int) -> str:
    return f"CUDA {version // 1000}.{version % 1000 // 10}"  # 12080: CUDA 12.8


# Where cuda-python is missing: the same calls through ctypes, each one's argument and result types declared.

_NVML_CLOCK_SM, _NVML_CLOCK_MEM = 1, 2
_NVML_SIGNATURES = {
    "nvmlInit_v2": [],
    "nvmlShutdown": [],
    "nvmlSystemGetDriverVersion": [ctypes.c_char_p, ctypes.c_uint],
    "nvmlDeviceGetHandleByUUID": [ctypes.c_char_p, ctypes.POINTER(ctypes.c_void_p)],
    "nvmlDeviceGetClockInfo": [ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_uint)],
    "nvmlDeviceGetMaxClockInfo": [ctypes.c_void_p, ctypes.c_int, ctypes.POINTER(ctypes.c_uint)],
}


def _ctypes_nvml_info(uuid: object) -> dict[str, object]:
    try:
        nvml = ctypes.CDLL("libnvidia-ml.so.1")
        for name, argtypes in _NVML_SIGNATURES.items():
            function = getattr(nvml, name)
            function.argtypes, function.restype = argtypes, ctypes.c_int  # nvmlReturn_t
        if nvml.nvmlInit_v2() != 0:
            return {}
    except (OSError, AttributeError):
        return {}
    try:
        info: dict[str, object] = {}
        buffer = ctypes.create_string_buffer(96)
        if nvml.nvmlSystemGetDriverVersion(buffer, 96) == 0:
            info["driver"] = buffer.value.decode()
        if uuid is not None:
            info["clocks"] = _ctypes_nvml_clocks(nvml, uuid)
        return info
    finally:
        nvml.nvmlShutdown()


def _ctypes_nvml_clocks(nvml: ctypes.CDLL, uuid: object) -> dict[str, int] | None:
    handle = ctypes.c_void_p()
    if nvml.nvmlDeviceGetHandleByUUID(_uuid_key(uuid).encode(), ctypes.byref(handle)) != 0:
        return None
    clocks: dict[str, int] = {}
    queries = {
        "sm_mhz": (nvml.nvmlDeviceGetClockInfo, _NVML_CLOCK_SM),
        "mem_mhz": (nvml.nvmlDeviceGetClockInfo, _NVML_CLOCK_MEM),
        "sm_max_mhz": (nvml.nvmlDeviceGetMaxClockInfo, _NVML_CLOCK_SM),
        "mem_max_mhz": (nvml.nvmlDeviceGetMaxClockInfo, _NVML_CLOCK_MEM),
    }
    for name, (query, clock) in queries.items():
        value = ctypes.c_uint()
        if query(handle, clock, ctypes.byref(value)) == 0:
            clocks[name] = int(value.value)
    return clocks or None


def _ctypes_cuda_driver_api() -> str | None:
    try:
        get_version = ctypes.CDLL("libcuda.so.1").cuDriverGetVersion
    except (OSError, AttributeError):
        return None
    get_version.argtypes, get_version.restype = [ctypes.POINTER(ctypes.c_int)], ctypes.c_int  # CUresult
    version = ctypes.c_int()
    return _cuda_version(version.value) if get_version(ctypes.byref(version)) == 0 else None


# ---------------------------------------------------------------- ceilings


def measure_ceilings(device: torch.device) -> dict[str, float]:
    """Bandwidth (bytes read + written per second) and dense matmul throughput (flop/s)."""
    if device.type == "cuda":
        measured = {"bandwidth_bytes_per_s": _cuda_bandwidth(device), "flops_per_s": _cuda_flops(device)}
        torch.cuda.empty_cache()  # the 4 GiB of copy buffers are garbage by now
        return measured
    return {"bandwidth_bytes_per_s": _cpu_bandwidth(), "flops_per_s": _cpu_flops()}


def _cuda_median_ms(fn: Callable[[], object], warmup: int, reps: int) -> float:
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    for _ in range(reps):
        start, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        start.record()
        fn()
        end.record()
        end.synchronize()
        times.append(start.elapsed_time(end))
    return statistics.median(times)


def _cuda_bandwidth(device: torch.device) -> float:
    src = torch.empty(_CUDA_COPY_BYTES, dtype=torch.uint8, device=device).fill_(1)
    dst = torch.empty_like(src)
    ms = _cuda_median_ms(lambda: dst.copy_(src), warmup=2, reps=10)
    return 2 * _CUDA_COPY_BYTES / (ms / 1e3)


def _cuda_flops(device: torch.device) -> float:
    n = _CUDA_MATMUL_N
    gen = torch.Generator(device=device).manual_seed(0)
    a = torch.randn(n, n, dtype=torch.bfloat16, device=device, generator=gen)
    b = torch.randn(n, n, dtype=torch.bfloat16, device=device, generator=gen)
    ms = _cuda_median_ms(lambda: a @ b, warmup=3, reps=10)
    return 2 * n**3 / (ms / 1e3)


def _cpu_median_s(fn: Callable[[], object], reps: int, budget_s: float) -> float:
    fn()  # warm-up: page faults and thread-pool start-up are not part of the ceiling
    times: list[float] = []
    spent = perf_counter()
    while len(times) < reps and (len(times) < 1 or perf_counter() - spent < budget_s):
        start = perf_counter()
        fn()
        times.append(perf_counter() - start)
    return statistics.median(times)


def _cpu_bandwidth() -> float:
    src = torch.ones(_CPU_COPY_BYTES, dtype=torch.uint8)
    dst = torch.empty_like(src)
    seconds = _cpu_median_s(lambda: dst.copy_(src), reps=5, budget_s=0.5)
    return 2 * _CPU_COPY_BYTES / seconds


def _cpu_flops() -> float:
    n = _CPU_MATMUL_N
    gen = torch.Generator().manual_seed(0)
    a = torch.randn(n, n, generator=gen)
    b = torch.randn(n, n, generator=gen)
    seconds = _cpu_median_s(lambda: a @ b, reps=3, budget_s=1.0)
    return 2 * n**3 / seconds
