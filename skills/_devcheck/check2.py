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


NSM = p.multi_processor_count
# rmsnorm N=3000 alignment hint
@triton.jit
def rms_hint(x_ptr, w_ptr, y_ptr, stride_x, stride_y, N, eps, BLOCK_N: tl.constexpr, HINT: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    xo = row * stride_x
    yo = row * stride_y
    if HINT:
        xo = tl.multiple_of(xo, 8); yo = tl.multiple_of(yo, 8)
    mask = cols < N
    x = tl.load(x_ptr + xo + cols, mask=mask, other=0.0).to(tl.float32)
    w = tl.load(w_ptr + cols, mask=mask, other=0.0, eviction_policy="evict_last").to(tl.float32)
    rstd = tl.rsqrt(tl.sum(x * x, axis=0) / N + eps)
    tl.store(y_ptr + yo + cols, (x * rstd * w).to(y_ptr.dtype.element_ty), mask=mask)
try:
    section("rms N=3000 hint")
    for M, N in [(16384, 3000), (16384, 4096)]:
        x = torch.randn(M, N, device=dev, dtype=torch.bfloat16); w = torch.randn(N, device=dev, dtype=torch.bfloat16); y = torch.empty_like(x)
        for hint in (False, True):
          for nw in (4, 8):
            f = lambda: rms_hint[(M,)](x, w, y, x.stride(0), y.stride(0), N, 1e-6, BLOCK_N=triton.next_power_of_2(N), HINT=hint, num_warps=nw)
            h = rms_hint[(M,)](x, w, y, x.stride(0), y.stride(0), N, 1e-6, BLOCK_N=triton.next_power_of_2(N), HINT=hint, num_warps=nw)
            ptx = h.asm["ptx"]
            print(f"M={M} N={N} hint={hint} nw={nw} {bench(f):.1f}us v4loads={ptx.count('ld.global.v4') + ptx.count('ld.global.L1::evict_last.v4')} ld.v={ptx.count('.v4.b32')} sol {2*M*N*2/4.25e6:.1f}us")
        print("  F.rms_norm", f"{bench(lambda: torch.nn.functional.rms_norm(x,(N,),w,1e-6)):.1f}us")
except Exception: traceback.print_exc()

# softmax: split rows (M small, N huge) and row-in-registers (N=32000)
@triton.jit
def sm_partial(x_ptr, pm_ptr, pl_ptr, N, stride, SPLITS: tl.constexpr, CHUNK: tl.constexpr, BLOCK_N: tl.constexpr):
    row = tl.program_id(0); sp = tl.program_id(1)
    base = row.to(tl.int64) * stride
    m = tl.full((BLOCK_N,), float("-inf"), tl.float32); l = tl.zeros((BLOCK_N,), tl.float32)
    for start in tl.range(sp * CHUNK, sp * CHUNK + CHUNK, BLOCK_N, num_stages=3):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_ptr + base + cols, mask=cols < N, other=float("-inf")).to(tl.float32)
        m_new = tl.maximum(m, x)
        l = l * tl.where(m_new == float("-inf"), 0.0, tl.exp2((m - m_new) * 1.4426950408889634)) + tl.where(x == float("-inf"), 0.0, tl.exp2((x - m_new) * 1.4426950408889634))
        m = m_new
    mr = tl.max(m, axis=0)
    lr = tl.sum(tl.where(m == float("-inf"), 0.0, l * tl.exp2((m - mr) * 1.4426950408889634)), axis=0)
    tl.store(pm_ptr + row * SPLITS + sp, mr); tl.store(pl_ptr + row * SPLITS + sp, lr)
@triton.jit
def sm_finish(x_ptr, y_ptr, pm_ptr, pl_ptr, N, stride, SPLITS: tl.constexpr, CHUNK: tl.constexpr, BLOCK_N: tl.constexpr):
    row = tl.program_id(0); sp = tl.program_id(1)
    s = tl.arange(0, SPLITS)
    pm = tl.load(pm_ptr + row * SPLITS + s); pl = tl.load(pl_ptr + row * SPLITS + s)
    mr = tl.max(pm, axis=0)
    inv = 1.0 / tl.sum(pl * tl.exp2((pm - mr) * 1.4426950408889634), axis=0)
    base = row.to(tl.int64) * stride
    for start in tl.range(sp * CHUNK, sp * CHUNK + CHUNK, BLOCK_N, num_stages=3):
        cols = start + tl.arange(0, BLOCK_N)
        x = tl.load(x_ptr + base + cols, mask=cols < N, other=float("-inf")).to(tl.float32)
        tl.store(y_ptr + base + cols, (tl.exp2((x - mr) * 1.4426950408889634) * inv).to(y_ptr.dtype.element_ty), mask=cols < N)
@triton.jit
def sm_rowreg(x_ptr, y_ptr, N, stride, BLOCK_N: tl.constexpr):
    row = tl.program_id(0).to(tl.int64)
    cols = tl.arange(0, BLOCK_N)
    x = tl.load(x_ptr + row * stride + cols, mask=cols < N, other=float("-inf")).to(tl.float32)
    e = tl.exp2((x - tl.max(x, axis=0)) * 1.4426950408889634)
    tl.store(y_ptr + row * stride + cols, (e / tl.sum(e, axis=0)).to(y_ptr.dtype.element_ty), mask=cols < N)
try:
    section("softmax split / rowreg")
    M, N = 64, 131072
    x = torch.randn(M, N, device=dev, dtype=torch.bfloat16) * 3; y = torch.empty_like(x)
    for SPL in (8, 16, 32):
        CH = N // SPL
        def f():
            pm = torch.empty(M, SPL, device=dev); pl = torch.empty(M, SPL, device=dev)
            sm_partial[(M, SPL)](x, pm, pl, N, x.stride(0), SPLITS=SPL, CHUNK=CH, BLOCK_N=1024, num_warps=4)
            sm_finish[(M, SPL)](x, y, pm, pl, N, x.stride(0), SPLITS=SPL, CHUNK=CH, BLOCK_N=1024, num_warps=4)
        f(); err = (y.float() - torch.softmax(x.float(), -1)).abs().max().item()
        print(f"split M={M} N={N} SPLITS={SPL} err={err:.2g} {bench(f):.1f}us sol3pass {3*M*N*2/4.25e6:.1f}us")
    M, N = 4096, 32000
    x = torch.randn(M, N, device=dev, dtype=torch.bfloat16) * 3; y = torch.empty_like(x)
    for nw in (8, 16, 32):
        h = sm_rowreg[(M,)](x, y, N, x.stride(0), BLOCK_N=32768, num_warps=nw)
        err = (y.float() - torch.softmax(x.float(), -1)).abs().max().item()
        print(f"rowreg M={M} N={N} nw={nw} err={err:.2g} {bench(lambda: sm_rowreg[(M,)](x, y, N, x.stride(0), BLOCK_N=32768, num_warps=nw)):.1f}us spills={h.n_spills} regs={h.n_regs} sol1pass {2*M*N*2/4.25e6:.1f}us")
except Exception: traceback.print_exc()

# gemv no atomics
@triton.jit
def gemv_rows(x_ptr, w_ptr, y_ptr, N, K, BLOCK_N: tl.constexpr, BLOCK_K: tl.constexpr):
    rn = tl.program_id(0) * BLOCK_N + tl.arange(0, BLOCK_N)
    acc = tl.zeros((BLOCK_N, BLOCK_K), tl.float32)
    for k0 in tl.range(0, K, BLOCK_K, num_stages=4):
        rk = k0 + tl.arange(0, BLOCK_K)
        w = tl.load(w_ptr + rn[:, None].to(tl.int64) * K + rk[None, :], mask=(rn[:, None] < N) & (rk[None, :] < K), other=0.0, eviction_policy="evict_first")
        x = tl.load(x_ptr + rk, mask=rk < K, other=0.0, eviction_policy="evict_last")
        acc += w.to(tl.float32) * x.to(tl.float32)[None, :]
    tl.store(y_ptr + rn, tl.sum(acc, axis=1).to(y_ptr.dtype.element_ty), mask=rn < N)
try:
    section("gemv rows")
    for N, K in [(4096, 4096), (14336, 4096), (4096, 14336)]:
        W = torch.randn(N, K, device=dev, dtype=torch.bfloat16); xv = torch.randn(1, K, device=dev, dtype=torch.bfloat16)
        r = (xv.float() @ W.float().T).squeeze(0)
        res = []
        for BN, BK, nw in [(8, 512, 4), (16, 256, 4), (16, 512, 8), (32, 256, 8), (4, 1024, 4)]:
            y = torch.empty(N, device=dev, dtype=torch.bfloat16)
            f = lambda: gemv_rows[(triton.cdiv(N, BN),)](xv, W, y, N, K, BLOCK_N=BN, BLOCK_K=BK, num_warps=nw)
            f(); e = (y.float() - r).abs().max().item()
            res.append(f"BN={BN},BK={BK},nw={nw}:{bench(f):.1f}us(err {e:.2g})")
        print(f"N={N} K={K} " + " ".join(res) + f" torch {bench(lambda: xv @ W.T):.1f}us sol {N*K*2/4.25e6:.1f}us")
except Exception: traceback.print_exc()

# 5 cuda.core NVRTC
try:
    section("cuda.core nvrtc")
    from cuda.core import Device, Program, ProgramOptions, LaunchConfig, launch
    import cuda.core; print("cuda.core", getattr(cuda.core, "__version__", "?"))
    src = r'''
#include <cuda_bf16.h>
#include <cooperative_groups.h>
namespace cg = cooperative_groups;
extern "C" __global__ void __launch_bounds__(256) scale_bf16(const __nv_bfloat16* __restrict__ x, __nv_bfloat16* __restrict__ y, float s, long long n) {
  long long i = (blockIdx.x * (long long)blockDim.x + threadIdx.x) * 8;
  if (i + 8 <= n) {
    uint4 v = *reinterpret_cast<const uint4*>(x + i);
    __nv_bfloat162* h = reinterpret_cast<__nv_bfloat162*>(&v);
    #pragma unroll
    for (int k = 0; k < 4; ++k) { float2 f = __bfloat1622float2(h[k]); h[k] = __floats2bfloat162_rn(f.x * s, f.y * s); }
    *reinterpret_cast<uint4*>(y + i) = v;
  } else { for (; i < n; ++i) y[i] = __float2bfloat16(__bfloat162float(x[i]) * s); }
}
extern "C" __global__ void __cluster_dims__(2,1,1) cluster_sum(const float* x, float* out) {
  __shared__ float part;
  cg::cluster_group cl = cg::this_cluster();
  float v = x[blockIdx.x * blockDim.x + threadIdx.x];
  for (int o = 16; o > 0; o >>= 1) v += __shfl_xor_sync(0xffffffffu, v, o);
  if (threadIdx.x == 0) part = v;
  cl.sync();
  if (cl.block_rank() == 0 && threadIdx.x == 0) { float* other = cl.map_shared_rank(&part, 1); out[blockIdx.x / 2] = part + *other; }
  cl.sync();
}
extern "C" __global__ void __launch_bounds__(384, 1) regs_ws(float* y) {
  int wg = threadIdx.x / 128;
  if (wg == 0) { asm volatile("setmaxnreg.dec.sync.aligned.u32 40;\n"); }
  else { asm volatile("setmaxnreg.inc.sync.aligned.u32 232;\n"); y[threadIdx.x] = 1.0f; }
}
extern "C" __global__ void bigsmem(float* y) { extern __shared__ float buf[]; buf[threadIdx.x] = threadIdx.x; __syncthreads(); y[threadIdx.x] = buf[255 - threadIdx.x]; }
'''
    d = Device(torch.cuda.current_device()); d.set_current()
    from cuda.pathfinder import find_nvidia_header_directory
    inc = [d_ for d_ in (find_nvidia_header_directory("cudart"), find_nvidia_header_directory("cccl")) if d_]
    print("include dirs", inc)
    prog = Program(src, code_type="c++", options=ProgramOptions(arch="sm_90a", std="c++17", include_path=inc))
    mod = prog.compile("cubin")
    k = mod.get_kernel("scale_bf16")
    s = d.create_stream(torch.cuda.current_stream())
    n = 1 << 24
    x = torch.randn(n, device=dev, dtype=torch.bfloat16); y = torch.empty_like(x)
    cfg = LaunchConfig(grid=triton.cdiv(n, 256 * 8), block=256)
    launch(s, cfg, k, x.data_ptr(), y.data_ptr(), np.float32(2.0), np.int64(n))
    torch.cuda.synchronize(); print("scale_bf16 ok", torch.equal(y, x * 2))
    t = bench(lambda: launch(s, cfg, k, x.data_ptr(), y.data_ptr(), np.float32(2.0), np.int64(n)))
    print(f"scale_bf16 {t:.1f}us {4*n/t/1e6:.0f} GB/s")
    t0=time.perf_counter()
    for _ in range(2000): launch(s, cfg, k, x.data_ptr(), y.data_ptr(), np.float32(2.0), np.int64(n))
    torch.cuda.synchronize()
    k2 = mod.get_kernel("cluster_sum")
    xs = torch.randn(4 * 32, device=dev); out = torch.zeros(2, device=dev)
    launch(s, LaunchConfig(grid=4, block=32), k2, xs.data_ptr(), out.data_ptr())
    torch.cuda.synchronize(); print("cluster dsmem ok", torch.allclose(out, xs.view(2, 64).sum(1), atol=1e-4))
    k3 = mod.get_kernel("regs_ws"); yy = torch.zeros(384, device=dev)
    launch(s, LaunchConfig(grid=1, block=384), k3, yy.data_ptr()); torch.cuda.synchronize(); print("setmaxnreg ran", yy[128:].sum().item())
    k4 = mod.get_kernel("bigsmem")
    try:
        launch(s, LaunchConfig(grid=1, block=256, shmem_size=100 * 1024), k4, yy.data_ptr()); torch.cuda.synchronize(); print("100KB dyn smem w/o attribute: ok")
    except Exception as e: print("100KB dyn smem w/o attribute failed:", str(e)[:200])
    try:
        from cuda.bindings import driver
        print("kernel handle attrs", [a for a in dir(k4) if not a.startswith('__')])
        r = driver.cuFuncSetAttribute(k4.handle if hasattr(k4,'handle') else k4._handle, driver.CUfunction_attribute.CU_FUNC_ATTRIBUTE_MAX_DYNAMIC_SHARED_SIZE_BYTES, 200 * 1024)
        print("cuFuncSetAttribute", r)
        launch(s, LaunchConfig(grid=1, block=256, shmem_size=200 * 1024), k4, yy.data_ptr()); torch.cuda.synchronize(); print("200KB dyn smem after attribute ok", yy[:3].tolist())
    except Exception as e: print("smem attribute path failed:", type(e).__name__, str(e)[:300])
except Exception: traceback.print_exc()

