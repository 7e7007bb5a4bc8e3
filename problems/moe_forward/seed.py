"""Seed candidate for moe_forward: a Triton router, grouped expert GEMMs and a deterministic combine.

1. Router kernel: per block of ROUTER_BLOCK_T tokens, logits = x @ w_router.T (bf16 dot, float32 accumulation),
   then the top_k largest logits per token (lowest expert index first on equal values) and their softmax
   probabilities renormalised over the top_k (the full softmax's denominator cancels).
2. Grouping (torch ops, no host synchronisation): the T*top_k (token, slot) pairs are sorted by expert and each
   expert's rows are padded to a multiple of BLOCK_M, so every BLOCK_M-row tile belongs to one expert; the grid is
   sized for the worst case and tiles past the used rows exit at once.
3. Gate/up kernel: per tile of BLOCK_M pairs and BLOCK_N_UP intermediate columns, the gate and up GEMMs share the
   gathered x rows; the epilogue rounds both to bf16 (as the reference does), applies silu(gate) * up in float32,
   rounds to bf16 and writes the tile to an intermediate buffer in the sorted order.
4. Down kernel: per tile, act @ w2[e].T, rounded to bf16, written to the pair's own row of a [T*top_k, H] buffer.
5. Combine kernel: out[t] = sum over the slots j = 0..top_k-1, in that order, of weight[t, j] * y[t*top_k + j]
   in float32, rounded to bf16. No atomics anywhere, so the result is bit-identical run to run.
Correct for any shapes and any TUNABLES values, on the GPU and under TRITON_INTERPRET=1 (where the dot operands
are upcast to float32, exact for bf16 values, because the interpreter mishandles bf16 dots). NUM_STAGES is capped
per kernel so the pipelined tiles fit in shared memory.
"""

import torch
import triton
import triton.language as tl

BLOCK_M = 64  # (token, slot) rows per tile of the grouped GEMMs; each expert's rows are padded to a multiple
BLOCK_N_UP = 64
BLOCK_K_UP = 64
BLOCK_N_DOWN = 64
BLOCK_K_DOWN = 64
NUM_WARPS = 4
NUM_STAGES = 3
ROUTER_BLOCK_T = 16
ROUTER_BLOCK_K = 64
COMBINE_BLOCK_T = 8
COMBINE_BLOCK_H = 256
TUNABLES = {
    "BLOCK_M": [16, 32, 64, 128],
    "BLOCK_N_UP": [32, 64, 128],
    "BLOCK_K_UP": [32, 64, 128],
    "BLOCK_N_DOWN": [32, 64, 128, 256],
    "BLOCK_K_DOWN": [32, 64, 128],
    "NUM_WARPS": [4, 8],
    "NUM_STAGES": [1, 2, 3, 4],
    "ROUTER_BLOCK_T": [16, 32, 64],
    "ROUTER_BLOCK_K": [32, 64, 128],
    "COMBINE_BLOCK_T": [1, 2, 4, 8, 16],
    "COMBINE_BLOCK_H": [64, 128, 256, 512, 1024],
}

# Shared memory the pipelined tiles of one GEMM may use (an H200 block may use up to 227 KB; the rest is
# headroom for the epilogue's layout conversions). NUM_STAGES is lowered per kernel to fit it, so every
# combination of TUNABLES compiles.
SMEM_BUDGET_BYTES = 180 * 1024


def _stages(per_stage_bytes: int) -> int:
    return max(1, min(NUM_STAGES, SMEM_BUDGET_BYTES // per_stage_bytes))


@triton.jit
def _round_to_bf16(y):
    """Round float32 to the nearest bfloat16 (ties to even) on the bits; returns float32 holding a bf16 value.

    On the GPU a plain `.to(tl.bfloat16)` already rounds to nearest even, but the Triton interpreter's
    float32 -> bfloat16 cast truncates; doing it on the bits gives the same result in both places.
    """
    bits = y.to(tl.uint32, bitcast=True)
    bits = bits + 0x7FFF + ((bits >> 16) & 1)
    bits = (bits >> 16) << 16
    rounded = bits.to(tl.float32, bitcast=True)
    return tl.where(y != y, y, rounded)  # keep NaN as NaN


@triton.jit
def _router_kernel(
    x_ptr,
    wr_ptr,
    ids_ptr,
    wts_ptr,
    T,
    H,
    E,
    stride_x,
    stride_wr,
    TOPK: tl.constexpr,
    TOPK_PAD: tl.constexpr,
    BLOCK_E: tl.constexpr,
    BLOCK_T: tl.constexpr,
    BLOCK_K: tl.constexpr,
    UPCAST_DOT: tl.constexpr,
):
    pid = tl.program_id(0)
    rows = pid * BLOCK_T + tl.arange(0, BLOCK_T)
    row_mask = rows < T
    rows64 = rows.to(tl.int64)
    experts = tl.arange(0, BLOCK_E)
    e_mask = experts < E
    ks = tl.arange(0, BLOCK_K)

    acc = tl.zeros([BLOCK_T, BLOCK_E], dtype=tl.float32)
    for k0 in range(0, H, BLOCK_K):
        kk = k0 + ks
        k_mask = kk < H
        xt = tl.load(x_ptr + rows64[:, None] * stride_x + kk[None, :],
                     mask=row_mask[:, None] & k_mask[None, :], other=0.0)
        wt = tl.load(wr_ptr + experts[None, :].to(tl.int64) * stride_wr + kk[:, None],
                     mask=e_mask[None, :] & k_mask[:, None], other=0.0)  # [BLOCK_K, BLOCK_E]
        if UPCAST_DOT:
            xt = xt.to(tl.float32)
            wt = wt.to(tl.float32)
        acc = tl.dot(xt, wt, acc)
    logits = tl.where(e_mask[None, :], acc, float("-inf"))
    row_max = tl.max(logits, axis=1)

    # Top-k by repeated max; softmax over the top-k only (the full denominator cancels in the renormalisation).
    slots = tl.arange(0, TOPK_PAD)
    top_ids = tl.zeros([BLOCK_T, TOPK_PAD], dtype=tl.int32)
    top_p = tl.zeros([BLOCK_T, TOPK_PAD], dtype=tl.float32)
    cur = logits
    for j in tl.static_range(TOPK):
        best = tl.max(cur, axis=1)
        idx = tl.min(tl.where(cur == best[:, None], experts[None, :], BLOCK_E), axis=1)
        idx = tl.minimum(idx, E - 1)  # only reachable with NaN logits: keep the expert index in range
        top_ids = tl.where(slots[None, :] == j, idx[:, None], top_ids)
        top_p = tl.where(slots[None, :] == j, tl.exp(best - row_max)[:, None], top_p)
        cur = tl.where(experts[None, :] == idx[:, None], float("-inf"), cur)
    top_w = top_p / tl.sum(top_p, axis=1)[:, None]

    out_offsets = rows64[:, None] * TOPK + slots[None, :]
    out_mask = row_mask[:, None] & (slots < TOPK)[None, :]
    tl.store(ids_ptr + out_offsets, top_ids, mask=out_mask)
    tl.store(wts_ptr + out_offsets, top_w, mask=out_mask)


@triton.jit
def _gate_up_kernel(
    x_ptr,
    w1_ptr,
    act_ptr,
    sorted_ids_ptr,
    block_expert_ptr,
    H,
    INTER,
    num_pairs,
    stride_x,
    stride_w1e,
    stride_w1n,
    stride_act,
    TOPK: tl.constexpr,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    UPCAST_DOT: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    expert = tl.load(block_expert_ptr + pid_m)
    if expert < 0:  # a tile past the rows in use
        return
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    pairs = tl.load(sorted_ids_ptr + rows)
    row_valid = pairs < num_pairs  # padding rows hold num_pairs
    tokens = (pairs // TOPK).to(tl.int64)
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < INTER
    cols64 = cols.to(tl.int64)
    ks = tl.arange(0, BLOCK_K)
    w_base = w1_ptr + expert.to(tl.int64) * stride_w1e

    acc_gate = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    acc_up = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, H, BLOCK_K):
        kk = k0 + ks
        k_mask = kk < H
        a = tl.load(x_ptr + tokens[:, None] * stride_x + kk[None, :],
                    mask=row_valid[:, None] & k_mask[None, :], other=0.0)
        w_mask = col_mask[None, :] & k_mask[:, None]
        w_gate = tl.load(w_base + cols64[None, :] * stride_w1n + kk[:, None], mask=w_mask, other=0.0)
        w_up = tl.load(w_base + (cols64 + INTER)[None, :] * stride_w1n + kk[:, None], mask=w_mask, other=0.0)
        if UPCAST_DOT:
            a = a.to(tl.float32)
            w_gate = w_gate.to(tl.float32)
            w_up = w_up.to(tl.float32)
        acc_gate = tl.dot(a, w_gate, acc_gate)
        acc_up = tl.dot(a, w_up, acc_up)
    gate = _round_to_bf16(acc_gate)
    up = _round_to_bf16(acc_up)
    act = _round_to_bf16(gate * tl.sigmoid(gate) * up)
    tl.store(act_ptr + rows.to(tl.int64)[:, None] * stride_act + cols[None, :],
             act.to(act_ptr.dtype.element_ty), mask=col_mask[None, :])


@triton.jit
def _down_kernel(
    act_ptr,
    w2_ptr,
    y_ptr,
    sorted_ids_ptr,
    block_expert_ptr,
    H,
    INTER,
    num_pairs,
    stride_act,
    stride_w2e,
    stride_w2n,
    stride_y,
    BLOCK_M: tl.constexpr,
    BLOCK_N: tl.constexpr,
    BLOCK_K: tl.constexpr,
    UPCAST_DOT: tl.constexpr,
):
    pid_m = tl.program_id(0)
    pid_n = tl.program_id(1)
    expert = tl.load(block_expert_ptr + pid_m)
    if expert < 0:
        return
    rows = pid_m * BLOCK_M + tl.arange(0, BLOCK_M)
    rows64 = rows.to(tl.int64)
    pairs = tl.load(sorted_ids_ptr + rows)
    row_valid = pairs < num_pairs
    cols = pid_n * BLOCK_N + tl.arange(0, BLOCK_N)
    col_mask = cols < H
    cols64 = cols.to(tl.int64)
    ks = tl.arange(0, BLOCK_K)
    w_base = w2_ptr + expert.to(tl.int64) * stride_w2e

    acc = tl.zeros([BLOCK_M, BLOCK_N], dtype=tl.float32)
    for k0 in range(0, INTER, BLOCK_K):
        kk = k0 + ks
        k_mask = kk < INTER
        a = tl.load(act_ptr + rows64[:, None] * stride_act + kk[None, :], mask=k_mask[None, :], other=0.0)
        w = tl.load(w_base + cols64[None, :] * stride_w2n + kk[:, None],
                    mask=col_mask[None, :] & k_mask[:, None], other=0.0)
        if UPCAST_DOT:
            a = a.to(tl.float32)
            w = w.to(tl.float32)
        acc = tl.dot(a, w, acc)
    y = _round_to_bf16(acc)
    tl.store(y_ptr + pairs.to(tl.int64)[:, None] * stride_y + cols[None, :], y.to(y_ptr.dtype.element_ty),
             mask=row_valid[:, None] & col_mask[None, :])


@triton.jit
def _combine_kernel(
    y_ptr,
    wts_ptr,
    out_ptr,
    T,
    H,
    stride_y,
    stride_out,
    TOPK: tl.constexpr,
    BLOCK_T: tl.constexpr,
    BLOCK_H: tl.constexpr,
    OUT_BF16: tl.constexpr,
):
    rows = tl.program_id(0) * BLOCK_T + tl.arange(0, BLOCK_T)
    row_mask = rows < T
    rows64 = rows.to(tl.int64)
    cols = tl.program_id(1) * BLOCK_H + tl.arange(0, BLOCK_H)
    mask = row_mask[:, None] & (cols < H)[None, :]
    acc = tl.zeros([BLOCK_T, BLOCK_H], dtype=tl.float32)
    for j in tl.static_range(TOPK):  # fixed slot order: deterministic
        w = tl.load(wts_ptr + rows64 * TOPK + j, mask=row_mask, other=0.0)
        y = tl.load(y_ptr + (rows64 * TOPK + j)[:, None] * stride_y + cols[None, :], mask=mask, other=0.0)
        acc += w[:, None] * y.to(tl.float32)
    if OUT_BF16:
        acc = _round_to_bf16(acc)
    tl.store(out_ptr + rows64[:, None] * stride_out + cols[None, :], acc.to(out_ptr.dtype.element_ty), mask=mask)


def run(x: torch.Tensor, w_router: torch.Tensor, w1: torch.Tensor, w2: torch.Tensor, top_k: int) -> torch.Tensor:
    x, w_router, w1, w2 = x.contiguous(), w_router.contiguous(), w1.contiguous(), w2.contiguous()
    t, h = x.shape
    e, inter = w1.shape[0], w1.shape[1] // 2
    k = int(top_k)
    device = x.device
    upcast = device.type == "cpu"  # the Triton interpreter multiplies bf16 dot operands as raw 16-bit patterns
    out = torch.empty_like(x)
    if t == 0:
        return out

    # 1. Router: top-k expert ids and renormalised weights per token.
    ids = torch.empty(t, k, dtype=torch.int32, device=device)
    wts = torch.empty(t, k, dtype=torch.float32, device=device)
    block_e = max(16, triton.next_power_of_2(e))
    _router_kernel[(triton.cdiv(t, ROUTER_BLOCK_T),)](
        x, w_router, ids, wts, t, h, e, x.stride(0), w_router.stride(0),
        TOPK=k, TOPK_PAD=max(2, triton.next_power_of_2(k)), BLOCK_E=block_e,
        BLOCK_T=ROUTER_BLOCK_T, BLOCK_K=ROUTER_BLOCK_K, UPCAST_DOT=upcast,
        num_warps=NUM_WARPS, num_stages=_stages((ROUTER_BLOCK_T + block_e) * ROUTER_BLOCK_K * 2),
    )

    # 2. Sort the (token, slot) pairs by expert; pad each expert's rows to a multiple of BLOCK_M. Only
    #    shape-sized torch ops (no .item(), no bincount, which syncs on CUDA), so nothing waits on the GPU.
    num_pairs = t * k
    flat = ids.view(-1).to(torch.int64)
    order = torch.argsort(flat, stable=True)
    sorted_experts = flat[order]
    expert_end = torch.searchsorted(sorted_experts, torch.arange(e, device=device), right=True)
    counts = torch.diff(expert_end, prepend=expert_end.new_zeros(1))
    padded = (counts + BLOCK_M - 1) // BLOCK_M * BLOCK_M
    padded_end = torch.cumsum(padded, 0)
    rank = torch.arange(num_pairs, device=device) - (expert_end - counts)[sorted_experts]
    dest = (padded_end - padded)[sorted_experts] + rank
    max_blocks = triton.cdiv(num_pairs, BLOCK_M) + min(e, num_pairs)  # each hit expert wastes < 1 tile
    sorted_ids = torch.full((max_blocks * BLOCK_M,), num_pairs, dtype=torch.int32, device=device)
    sorted_ids[dest] = order.to(torch.int32)
    block_start = torch.arange(max_blocks, device=device) * BLOCK_M
    block_expert = torch.searchsorted(padded_end, block_start, right=True)
    block_expert = torch.where(block_expert < e, block_expert, -1).to(torch.int32)

    # 3. Gate/up GEMM with fused silu(gate) * up, rows in sorted order.
    act = torch.empty(max_blocks * BLOCK_M, inter, dtype=x.dtype, device=device)
    _gate_up_kernel[(max_blocks, triton.cdiv(inter, BLOCK_N_UP))](
        x, w1, act, sorted_ids, block_expert, h, inter, num_pairs,
        x.stride(0), w1.stride(0), w1.stride(1), act.stride(0),
        TOPK=k, BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N_UP, BLOCK_K=BLOCK_K_UP, UPCAST_DOT=upcast,
        num_warps=NUM_WARPS, num_stages=_stages((BLOCK_M + 2 * BLOCK_N_UP) * BLOCK_K_UP * 2),
    )

    # 4. Down GEMM: each pair's expert output goes to its own row (pair = token * top_k + slot).
    y = torch.empty(num_pairs, h, dtype=x.dtype, device=device)
    _down_kernel[(max_blocks, triton.cdiv(h, BLOCK_N_DOWN))](
        act, w2, y, sorted_ids, block_expert, h, inter, num_pairs,
        act.stride(0), w2.stride(0), w2.stride(1), y.stride(0),
        BLOCK_M=BLOCK_M, BLOCK_N=BLOCK_N_DOWN, BLOCK_K=BLOCK_K_DOWN, UPCAST_DOT=upcast,
        num_warps=NUM_WARPS, num_stages=_stages((BLOCK_M + BLOCK_N_DOWN) * BLOCK_K_DOWN * 2),
    )

    # 5. Weighted sum of each token's top_k rows, in slot order.
    _combine_kernel[(triton.cdiv(t, COMBINE_BLOCK_T), triton.cdiv(h, COMBINE_BLOCK_H))](
        y, wts, out, t, h, y.stride(0), out.stride(0),
        TOPK=k, BLOCK_T=COMBINE_BLOCK_T, BLOCK_H=COMBINE_BLOCK_H, OUT_BF16=x.dtype == torch.bfloat16,
        num_warps=NUM_WARPS,
    )
    return out
