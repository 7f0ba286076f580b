"""flow_cells (csrc/softdtw/cpu/tiles.h), the packs' backward loop E = Ed·wd + Eb·wb + Er·wr, runs
its float32 arithmetic in float64 without an operation on a subnormal float32 (float32_exact): its
bits must be those of float32 arithmetic, subnormal operands and results included. numpy's float32
arithmetic (IEEE, no flush to zero) is the reference, on values spread over every binade of
[0, 1] (E and the weights are in [0, 1]), zeros and subnormals included."""
import os

import numpy as np
import pytest
import torch
from torch.utils import cpp_extension

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

SOURCE = r"""
#include <torch/extension.h>
#include "softdtw/cpu/tiles.h"

// flow_cells<float> over six float32 tensors of one length.
torch::Tensor flow(torch::Tensor ed, torch::Tensor wd, torch::Tensor eb, torch::Tensor wb, torch::Tensor er,
                   torch::Tensor wr) {
  torch::Tensor out = torch::empty_like(ed);
  softdtw_torch::cpu::flow_cells<float>(ed.data_ptr<float>(), wd.data_ptr<float>(), eb.data_ptr<float>(),
                                        wb.data_ptr<float>(), er.data_ptr<float>(), wr.data_ptr<float>(),
                                        out.data_ptr<float>(), ed.numel());
  return out;
}
"""


@pytest.fixture(scope="module")
def flow():
    build = os.path.join(ROOT, "build", "test-flow-cells")
    os.makedirs(build, exist_ok=True)
    module = cpp_extension.load_inline(
        name="softdtw_torch_test_flow_cells", cpp_sources=[SOURCE], functions=["flow"],
        extra_include_paths=[os.path.join(ROOT, "csrc")],
        # the extension's own flags (setup.py): no FMA contraction
        extra_cflags=["-O3", "-ffp-contract=off", "-fno-trapping-math", "-std=c++20"],
        build_directory=build, verbose=False)
    return module.flow


def _values(rng, n):
    """float32 values in [0, 1]: exponent fields uniform over 0..126 (0: subnormal), random
    significands, one in 16 an exact zero, a few ones."""
    exponent = rng.integers(0, 127, n, dtype=np.uint32)
    significand = rng.integers(0, 1 << 23, n, dtype=np.uint32)
    bits = (exponent << 23) | significand
    bits[rng.random(n) < 1 / 16] = 0
    bits[rng.random(n) < 1 / 64] = np.float32(1.0).view(np.uint32)
    return bits.view(np.float32)


@pytest.mark.parametrize("scale", ["every binade", "near the subnormal range"])
def test_flow_cells_gives_float32_arithmetics_bits(flow, scale):
    # IEEE subnormals in this thread for numpy's reference (torch 2.4's torch.compile can leave
    # flush-to-zero on in the main thread); the kernel's float32_exact does not depend on it
    torch.set_flush_denormal(False)
    rng = np.random.default_rng(11 if scale == "every binade" else 12)
    n = 1 << 20  # odd tails too: the loop's vector remainder
    inputs = [_values(rng, n + 13) for _ in range(6)]
    if scale == "near the subnormal range":
        # products and sums around 2^-126 and on the subnormal grid, where the rounding changes
        for i in (0, 2, 4):
            inputs[i] = (inputs[i].view(np.uint32) & np.uint32(0x807fffff) | np.uint32(70 << 23)).view(np.float32)
            inputs[i + 1] = (inputs[i + 1].view(np.uint32) & np.uint32(0x807fffff)
                             | (rng.integers(1, 60, n + 13, dtype=np.uint32) << 23)).view(np.float32)
    ed, wd, eb, wb, er, wr = inputs
    with np.errstate(all="ignore"):
        want = (ed * wd + eb * wb) + er * wr  # float32 throughout, left to right
    got = flow(*(torch.from_numpy(v) for v in inputs)).numpy()
    # the data reaches subnormal products and results
    assert ((want > 0) & (want < np.finfo(np.float32).tiny)).mean() > 0.01
    assert np.array_equal(got.view(np.uint32), want.view(np.uint32))
    # and the kernel gives the same bits with flush-to-zero on (where the CPU has it)
    if torch.set_flush_denormal(True):
        try:
            flushed = flow(*(torch.from_numpy(v) for v in inputs)).numpy()
        finally:
            torch.set_flush_denormal(False)
        assert np.array_equal(flushed.view(np.uint32), want.view(np.uint32))
