"""Device probe: does the CUPTI timer with driver-memset markers work here, and agree with do_bench?"""
import json, os, sys, time
import torch
from arcengine.guard import timing
import cupti.cupti as c
out = {"cupti_version": c.get_version(), "torch": torch.__version__}
dev = torch.device("cuda")
t0 = time.perf_counter()
timer = timing.make_timer(dev)
out["timer"] = timer.kind
out["timer_init_s"] = time.perf_counter() - t0
x = torch.randn(8192, 8192, device=dev)
side = torch.cuda.Stream()
def same(x): return x * 2
def side_nowait(x):
    with torch.cuda.stream(side):
        return x * 2
def side_wait(x):
    side.wait_stream(torch.cuda.current_stream())
    with torch.cuda.stream(side):
        return x * 2
import triton.testing as tt
out["do_bench_us"] = tt.do_bench(lambda: x * 2, warmup=25, rep=200) * 1e3
for name, fn in [("same", same), ("side_nowait", side_nowait), ("side_wait", side_wait)]:
    for _ in range(2):
        t = timer.time_block(fn, [(x,)] * 4, after=lambda i, o: None)
    out[name] = [(round(s.us, 2), s.stray) for s in t]
small = torch.randn(4096, device=dev)
t = timer.time_block(lambda a: a + 1, [(small,)] * 4)
out["small_add"] = [(round(s.us, 2), s.stray) for s in t]
out["diag"] = timer.diagnostics()
print(json.dumps(out, indent=1))
