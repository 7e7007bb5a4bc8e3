"""The device description's driver and NVML queries: through cuda-python's cuda.bindings (its nvml and driver
modules import without a driver), through ctypes where cuda-python is missing, and empty without a GPU."""

from __future__ import annotations

import subprocess
import sys
from types import SimpleNamespace

import pytest
import torch

from arcengine.guard.child import ceilings

nvml = pytest.importorskip("cuda.bindings.nvml")  # a declared dependency; imports without a driver
driver = pytest.importorskip("cuda.bindings.driver")

UUID = "6c2d1e7a-0000-4000-8000-000000000001"  # as torch gives it: no "GPU-" prefix


class NotReported(nvml.NvmlError):
    """NVML_ERROR_NOT_SUPPORTED, made without the library (NvmlError's own constructor asks it for the message)."""

    def __init__(self) -> None:
        Exception.__init__(self, "NVML_ERROR_NOT_SUPPORTED")


class FakeNvml(SimpleNamespace):
    """cuda.bindings.nvml's interface (its enums and exception class) over made-up answers."""

    def __init__(self, failing: tuple[str, ...] = (), no_library: bool = False) -> None:
        super().__init__(NvmlError=nvml.NvmlError, ClockType=nvml.ClockType)
        self.failing, self.no_library, self.calls = failing, no_library, []

    def _answer(self, name: str, value: object) -> object:
        self.calls.append(name)
        if name in self.failing:
            raise NotReported()
        return value

    def init_v2(self) -> None:
        if self.no_library:  # what cuda.pathfinder raises where libnvidia-ml is absent: a RuntimeError
            raise RuntimeError('"nvml" is an NVIDIA driver library and can only be found via system search')
        self._answer("init_v2", None)

    def shutdown(self) -> None:
        self._answer("shutdown", None)

    def system_get_driver_version(self) -> str:
        return str(self._answer("system_get_driver_version", "580.95.05"))

    def device_get_handle_by_uuid(self, uuid: str) -> int:
        assert uuid == f"GPU-{UUID}"
        return int(self._answer("device_get_handle_by_uuid", 1234))  # type: ignore[arg-type]

    def device_get_clock_info(self, handle: int, clock: object) -> int:
        mhz = {nvml.ClockType.CLOCK_SM: 1755, nvml.ClockType.CLOCK_MEM: 3201}[clock]  # type: ignore[index]
        return int(self._answer(f"clock_info:{clock}", mhz))  # type: ignore[arg-type]

    def device_get_max_clock_info(self, handle: int, clock: object) -> int:
        mhz = {nvml.ClockType.CLOCK_SM: 1980, nvml.ClockType.CLOCK_MEM: 3201}[clock]  # type: ignore[index]
        return int(self._answer(f"max_clock_info:{clock}", mhz))  # type: ignore[arg-type]


def test_nvml_answers_become_the_driver_and_the_clocks() -> None:
    fake = FakeNvml()
    info = ceilings.read_nvml(fake, UUID)  # type: ignore[arg-type]
    assert info == {"driver": "580.95.05",
                    "clocks": {"sm_mhz": 1755, "mem_mhz": 3201, "sm_max_mhz": 1980, "mem_max_mhz": 3201}}
    assert fake.calls[0] == "init_v2" and fake.calls[-1] == "shutdown"


def test_a_clock_nvml_does_not_report_is_left_out_and_no_library_gives_nothing() -> None:
    partial = FakeNvml(failing=(f"max_clock_info:{nvml.ClockType.CLOCK_MEM}",))
    assert ceilings.read_nvml(partial, UUID)["clocks"] == {"sm_mhz": 1755, "mem_mhz": 3201,  # type: ignore[arg-type]
                                                           "sm_max_mhz": 1980}
    assert ceilings.read_nvml(FakeNvml(failing=("device_get_handle_by_uuid",)), UUID)["clocks"] is None  # type: ignore[arg-type]
    assert ceilings.read_nvml(FakeNvml(no_library=True), UUID) == {}  # type: ignore[arg-type]


def test_the_driver_s_cuda_version_is_read_from_its_answer() -> None:
    def answering(error: object, version: int) -> SimpleNamespace:
        return SimpleNamespace(CUresult=driver.CUresult, cuDriverGetVersion=lambda: (error, version))

    assert ceilings.read_driver_version(answering(driver.CUresult.CUDA_SUCCESS, 12080)) == "CUDA 12.8"  # type: ignore[arg-type]
    assert ceilings.read_driver_version(answering(driver.CUresult.CUDA_ERROR_NOT_INITIALIZED, 0)) is None  # type: ignore[arg-type]


def test_without_a_gpu_the_queries_give_nothing_and_raise_nothing() -> None:
    """The path of a machine without a driver: the real bindings load, their calls find no library."""
    if ceilings._cuda_driver_api() is not None:
        pytest.skip("this machine has a CUDA driver")
    assert ceilings._nvml_info(UUID) == {}
    info = ceilings.device_info(torch.device("cpu"))
    assert info["kind"] == "cpu" and info["driver"] is None and info["clocks"] is None


def test_without_cuda_python_ctypes_stands_in(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "cuda.bindings", None)  # import cuda.bindings now raises ImportError
    used = []
    monkeypatch.setattr(ceilings, "_ctypes_nvml_info", lambda uuid: used.append("nvml") or {})
    monkeypatch.setattr(ceilings, "_ctypes_cuda_driver_api", lambda: used.append("driver") or None)
    assert ceilings._nvml_info(UUID) == {} and ceilings._cuda_driver_api() is None
    assert used == ["nvml", "driver"]


def test_the_ctypes_fallback_without_a_driver_gives_nothing() -> None:
    if ceilings._ctypes_cuda_driver_api() is not None:
        pytest.skip("this machine has a CUDA driver")
    assert ceilings._ctypes_nvml_info(UUID) == {}


def test_the_child_does_not_import_nvml_until_a_gpu_is_described() -> None:
    """torch imports cuda.bindings.driver itself; the nvml module (0.3 s, numpy with it) waits for a GPU."""
    loaded = subprocess.run(
        [sys.executable, "-c", "import sys, torch, arcengine.guard.child.judge, arcengine.guard.child.ceilings as c; "
         "c.device_info(torch.device('cpu')); print('cuda.bindings.nvml' in sys.modules)"],
        capture_output=True, text=True, check=True).stdout.strip()
    assert loaded == "False"
