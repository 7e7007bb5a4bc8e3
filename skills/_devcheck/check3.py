# temporary: verifies the snippets used in the skill files on the H200; deleted afterwards
import time, traceback, math, sys
import torch, triton, triton.language as tl
import numpy as np
print("torch", torch.__version__, "triton", triton.__version__)
dev = torch.device("cuda")
p = torch.cuda.get_device_properties(dev)
print("sms", p.multi_processor_count, "L2", getattr(p, "L2_cache_size", None), "smem/blk optin", getattr(p, "shared_memory_per_block_optin", None), "smem/sm", getattr(p,"shared_memory_per_multiprocessor",None), "regs/sm", getattr(p,"regs_per_multiprocessor",None))
for n in ["sqrt_rn","topk","sort","gather","histogram"]: print("tl."+n, hasattr(tl, n))
print("div_rn", hasattr(tl.math,"div_rn"), "_grouped_mm", hasattr(torch,"_grouped_mm"), "_scaled_mm", hasattr(torch,"_scaled_mm"), "F.rms_norm", hasattr(torch.nn.functional,"rms_norm"))

def bench(f, n=200):
    for _ in range(10): f()
    torch.cuda.synchronize()
    flush = torch.empty(256*1024*1024, dtype=torch.int8, device=dev)
    ts=[]
    for _ in range(n):
        flush.zero_()
        s=torch.cuda.Event(enable_timing=True); e=torch.cuda.Event(enable_timing=True)
        s.record(); f(); e.record(); torch.cuda.synchronize(); ts.append(s.elapsed_time(e))
    return float(np.median(ts))*1e3  # us

def section(name):
    print("\n==", name)


@triton.jit
def rms_c(x_ptr, w_ptr, y_ptr, stride_x, stride_y, N: tl.constexpr, eps, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = cols < N
    x = tl.load(x_ptr + row * stride_x + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / N + eps)
    tl.store(y_ptr + row * stride_y + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)
@triton.jit
def rms_2d(x_ptr, w_ptr, y_ptr, M, stride_x, stride_y, N, eps, BLOCK_N: tl.constexpr, ROWS: tl.constexpr):
    rows = (tl.program_id(0) * ROWS + tl.arange(0, ROWS)).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    mask = (rows[:, None] < M) & (cols[None, :] < N)
    x = tl.load(x_ptr + rows[:, None] * stride_x + cols[None, :], mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=cols < N, other=0.0, eviction_policy="evict_last").to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=1) / N + eps)
    tl.store(y_ptr + rows[:, None] * stride_y + cols[None, :], (x * rstd[:, None] * w[None, :]).to(y_ptr.dtype.element_ty), mask=mask)
try:
    section("rms N=3000 variants")
    for M, N in [(16384, 3000), (16384, 5120), (65536, 256), (65536, 128)]:
        x = torch.randn(M, N, device=dev, dtype=torch.bfloat16); w = torch.randn(N, device=dev, dtype=torch.bfloat16); y = torch.empty_like(x)
        BN = triton.next_power_of_2(N)
        out = [f"M={M} N={N} sol {2*M*N*2/4.25e6:.1f}us F.rms_norm {bench(lambda: torch.nn.functional.rms_norm(x,(N,),w,1e-6)):.1f}us"]
        for nw in (4, 8):
            out.append(f"constexprN nw={nw} {bench(lambda: rms_c[(M,)](x, w, y, x.stride(0), y.stride(0), N, 1e-6, BLOCK_N=BN, num_warps=nw)):.1f}")
        for R in (1, 2, 4, 8, 16):
            if R * BN > 16384: continue
            out.append(f"rows={R} {bench(lambda: rms_2d[(triton.cdiv(M, R),)](x, w, y, M, x.stride(0), y.stride(0), N, 1e-6, BLOCK_N=BN, ROWS=R, num_warps=4)):.1f}")
        print(" | ".join(out))
except Exception: traceback.print_exc()
try:
    section("smem attr")
    from cuda.core import Device, Program, ProgramOptions, LaunchConfig, launch
    from cuda.bindings import driver
    d = Device(torch.cuda.current_device()); d.set_current()
    src = 'extern "C" __global__ void bigsmem(float* y) { extern __shared__ float buf[]; buf[threadIdx.x] = threadIdx.x; __syncthreads(); y[threadIdx.x] = buf[255 - threadIdx.x]; }'
    k4 = Program(src, code_type="c++", options=ProgramOptions(arch="sm_90")).compile("cubin").get_kernel("bigsmem")
    s = d.create_stream(torch.cuda.current_stream()); yy = torch.zeros(256, device=dev)
    print(type(k4.handle))
    r = driver.cuKernelSetAttribute(driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 200 * 1024, k4.handle, d.device_id)
    print("cuKernelSetAttribute", r)
    launch(s, LaunchConfig(grid=1, block=256, shmem_size=200 * 1024), k4, yy.data_ptr()); torch.cuda.synchronize(); print("200KB ok", yy[:3].tolist(), k4.attributes.max_dynamic_shared_size_bytes)
except Exception as e: traceback.print_exc()
